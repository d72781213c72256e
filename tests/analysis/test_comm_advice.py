"""Communication on real traces: what counts as communication time, what each collective
is for and the advice that follows, the causes the job view separates (a late rank, a
slow link, exposed transfer), and the job view in an 80-column terminal."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
import numpy as np
import pytest
from analysis_tables import kernel, launch, make_table, op
from real_traces import analysis
from rich.console import Console

from profiler_kit import api
from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.note import note
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.job_analysis import analyze_job
from profiler_kit.analysis.jobs.comm_context import DDP_GRADIENT, EMBEDDING
from profiler_kit.analysis.jobs.rank_summary import GroupInfo, summarize_rank
from profiler_kit.render.console.analysis import job_view
from profiler_kit.render.wording import rules
from profiler_kit.render.wording.notes import say
from profiler_kit.render.wording.rules import COMM_ADVICE
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"
COMM = classify.CLASS_INDEX[classify.COMMUNICATION]


def _classes(name: str):
    table = load(DATA / name)
    gpu = attribute_gpu(table, build_op_tree(table))
    names = np.array([table.name_of(int(r)) for r in gpu.row], dtype=object)
    return table, gpu, names


# -- 1. communication time counts communication kernels ---------------------------------

@pytest.mark.parametrize("name", ["a100_recsys_16gpu_rank0.json.gz", "two_ranks/rank0.json.gz",
                                  "a100_recsys_8gpu_rank3.json.gz"])
def test_communication_is_the_nccl_kernels_only(name):
    """TorchRec runs fbgemm's permute_2D_sparse_data (its permute and cub scan kernels)
    inside ``## KJTAllToAllTensorsAwaitable wait() ##`` and ``## all2all_data:... ##``
    ranges; those kernels are compute, and communication is exactly the NCCL kernels."""
    table, gpu, names = _classes(name)
    comm = gpu.klass == COMM
    assert comm.any() and all(n.startswith("ncclKernel") for n in names[comm])
    nccl = np.array([n.startswith("ncclKernel") for n in names])
    assert (comm == nccl).all()
    compute = np.array([n.startswith(("void fbgemm_gpu::permute", "void cub::"))
                        for n in names])
    assert not (comm & compute).any()
    # the whole trace's communication time is the NCCL kernels', nothing else
    (d,) = analysis(name).trace_timeline.devices
    s = table.ts_ns[gpu.row[nccl]]
    e = s + table.dur_ns[gpu.row[nccl]]
    order = np.argsort(s)
    covered, reach = 0, 0
    for a_, b_ in zip(s[order].tolist(), e[order].tolist(), strict=True):
        covered += max(0, b_ - max(a_, reach))
        reach = max(reach, b_)
    assert d.communication_busy_ns == covered


def test_the_16_gpu_job_counted_1_6_ms_of_compute_as_communication_before():
    """The kernels that inherited communication from the TorchRec ranges: 1.57 ms of
    permutes and scans in rank 0's trace, now classed by their own names."""
    _, gpu, names = _classes("a100_recsys_16gpu_rank0.json.gz")
    table = load(DATA / "a100_recsys_16gpu_rank0.json.gz")
    permute = np.array([n.startswith("void fbgemm_gpu::permute_2D") for n in names])
    scan = np.array([n.startswith("void cub::DeviceScan") for n in names])
    under = permute | scan
    assert int(table.dur_ns[gpu.row[under]].sum()) >= 1_500_000
    assert set(gpu.klass[scan].tolist()) == {classify.CLASS_INDEX[classify.REDUCTION]}
    assert set(gpu.klass[permute].tolist()) == {classify.CLASS_INDEX[classify.OTHER]}


def test_a_collectives_own_kernels_are_communication():
    """A kernel a collective op launches itself (a custom all-reduce kernel) and the copy
    kernel of an aten::copy_ right inside c10d::allgather_ are communication; a GEMM
    launched inside a range named for an all-to-all is compute."""
    events = [
        op("vllm::all_reduce", 0, 100), launch(10, corr=1),
        kernel("cross_device_reduce_1stage", 20, 30, corr=1),
        op("c10d::allgather_", 200, 100), op("aten::copy_", 210, 50), launch(220, corr=2),
        kernel("void at::native::elementwise_kernel_copy", 230, 20, corr=2),
        op("## all2all_data:recat ##", 400, 100, cat=classify_cat()), op("aten::mm", 410, 50),
        launch(420, corr=3), kernel("ampere_sgemm_128x64_nn", 430, 30, corr=3),
    ]
    table = make_table(events)
    gpu = attribute_gpu(table, build_op_tree(table))
    by_name = {table.name_of(int(r)): classify.CLASSES[k]
               for r, k in zip(gpu.row, gpu.klass, strict=True)}
    assert by_name["cross_device_reduce_1stage"] == classify.COMMUNICATION
    assert by_name["void at::native::elementwise_kernel_copy"] == classify.COMMUNICATION
    assert by_name["ampere_sgemm_128x64_nn"] == classify.GEMM


def classify_cat():
    from profiler_kit.trace.table import Cat

    return Cat.USER_ANNOTATION


# -- 2. the advice follows what the collectives are for ---------------------------------

def _rule(name: str, rule: str):
    return {r.rule: r for r in analysis(name).recommendations}[rule]


def test_ddp_bucket_advice_only_for_ddps_gradient_all_reduce():
    """The 8-rank DLRM job's exposed communication is TorchRec's embedding all-to-all
    (83 of 88 ms): TorchRec's advice, not DDP's buckets. MI300 ResNet's is DDP's gradient
    all-reduce: bucket_cap_mb and no_sync."""
    dlrm = _rule("a100_recsys_8gpu_rank3.json.gz", "exposed_communication")
    assert EMBEDDING in dlrm.figures["contexts"] and DDP_GRADIENT not in dlrm.figures["contexts"]
    assert "TrainPipelineSparseDist" in rules.advice(dlrm)
    assert "bucket_cap_mb" not in rules.advice(dlrm)
    assert "embedding all-to-all" in rules.title(dlrm)
    ev = {e.label: e.value for e in dlrm.evidence}
    assert ev["exposed in embedding all-to-all (TorchRec)"] > 0.9 * ev["exposed"]
    ddp = _rule("mi300_resnet_act_checkpoint.json.gz", "exposed_communication")
    assert DDP_GRADIENT in ddp.figures["contexts"]
    assert "bucket_cap_mb" in rules.advice(ddp) and "no_sync" in rules.advice(ddp)
    assert "TrainPipelineSparseDist" not in rules.advice(ddp)
    for r in (dlrm, ddp):  # one trace cannot split waiting from transferring
        assert "all ranks together" in rules.advice(r)


def test_each_call_knows_what_it_is_for():
    ddp = analysis("a100_ddp_nccl_rank0.json.gz").communication
    assert {(c.kind, c.context) for c in ddp.calls} == {("allreduce", "ddp_gradient"),
                                                         ("broadcast", "ddp_buffers")}
    dlrm = summarize_rank(load(DATA / "two_ranks" / "rank0.json.gz"))
    assert {(c.kind, c.context) for c in dlrm.calls} == {
        ("alltoall", EMBEDDING), ("allreduce", DDP_GRADIENT), ("allgather", "optimizer")}
    vllm = analysis("b200_vllm_eager.json.gz").communication
    assert {c.context for c in vllm.calls if c.kind == "allreduce"} == {"tensor_parallel"}
    assert "bucket_cap_mb" not in COMM_ADVICE["tensor_parallel"] + COMM_ADVICE[EMBEDDING]


def test_a_late_rank_is_named_with_what_it_was_doing():
    """gloo_straggler: rank 1 sleeps 50 ms before each all-reduce; rank 0 waits. The job's
    rule names rank 1 and its Python (no range: the sleep), not the network."""
    (job,) = api.job_view([DATA / "gloo_straggler"])
    (r,) = [r for r in job.recommendations if r.rule == "waiting_for_late_rank"]
    assert r.figures["straggler"][0] == 1 and r.measured > 0.4
    assert "rank 1" in rules.title(r)
    late = {t.rank: t for t in job.per_rank}[1]
    assert late.late_doing[0].label == "" and late.late_doing[0].ns > 45e6
    assert late.late_doing[0].ns <= late.late_per_step_ns
    assert r.variant == "untraced" and r.figures["rank"] == 1
    assert "Python or untraced code" in rules.advice(r) and "interconnect" in rules.advice(r)
    assert any(e.name == "Python or untraced code" and e.value > 45e6 for e in r.evidence)


def test_two_ranks_split_waiting_from_exposed_transfer():
    (job,) = api.job_view([DATA / "two_ranks"])
    fired = {r.rule: r for r in job.recommendations}
    wait = fired["waiting_for_late_rank"]
    assert wait.figures["straggler"][0] == 1 and wait.figures["range"] == "## backward ##"
    assert "rank 1" in rules.title(wait) and "## backward ##" in rules.advice(wait)
    transfer = fired["exposed_transfer"]
    assert EMBEDDING in transfer.figures["contexts"]
    assert DDP_GRADIENT not in transfer.figures["contexts"]
    assert "TrainPipelineSparseDist" in rules.advice(transfer)
    contexts = {c.context: c for c in job.contexts}
    assert set(contexts) == {EMBEDDING, DDP_GRADIENT, "optimizer"}
    assert sum(c.exposed_transfer_ns for c in contexts.values()) == \
        sum(r.exposed_transfer_ns for r in job.per_rank)
    assert any(n.code == "slow_transfer_no_link" for n in job.rule_notes)


def _as_one_host(world: int, device: str | None, hosts: tuple[str, str]):
    out = []
    for r in (0, 1):
        s = summarize_rank(load(DATA / "two_ranks" / f"rank{r}.json.gz"))
        out.append(msgspec.structs.replace(
            s, world_size=world, host=hosts[r], device_name=device,
            groups=(GroupInfo("0", tuple(range(world))),)))
    return out


def test_slow_transfer_against_the_link_when_the_traces_tell_it():
    """The two sampled ranks' large all-reduces and all-gathers move 7 to 21 GB/s of bus
    bandwidth. Given as a two-rank job on one host of A100 SXM GPUs (NVLink 3: 300 GB/s
    per direction), that is under a tenth of the link: the rule fires. On two hosts the
    link is the network, which no trace records: not judged, and the note says why."""
    job = analyze_job(_as_one_host(2, "NVIDIA A100-SXM4-80GB", ("h", "h")))
    (r,) = [r for r in job.recommendations if r.rule == "slow_transfer"]
    assert r.measured < 0.1 and r.figures["link"] == "NVLink 3"
    assert "NVLink 3" in rules.title(r)
    assert any(e.unit == "bytes/s" and e.value == 300e9 for e in r.evidence)
    apart = analyze_job(_as_one_host(2, "NVIDIA A100-SXM4-80GB", ("h0", "h1")))
    assert "slow_transfer" not in {x.rule for x in apart.recommendations}
    (why,) = apart.rule_notes
    assert why == note("slow_transfer_no_link", why="several_hosts", hosts=2)
    assert say(why).endswith("here: ranks on 2 hosts: the network's bandwidth is not recorded)")


# -- 5. the job view fits an 80-column terminal -----------------------------------------

def _render(job, width: int = 80) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(job_view(job))
    return buf.getvalue()


def _eight_ranks():
    out = []
    for r in range(8):
        s = summarize_rank(load(DATA / "two_ranks" / f"rank{r % 2}.json.gz"))
        out.append(msgspec.structs.replace(
            s, rank=r, world_size=8, path=f"/job8/rank{r}.json", label=f"rank{r}",
            groups=(GroupInfo("0", tuple(range(8))),)))
    return analyze_job(out)


@pytest.mark.parametrize("which", ["gloo_straggler", "two_ranks", "eight"])
def test_the_job_view_fits_80_columns_with_whole_headers(which):
    job = _eight_ranks() if which == "eight" else api.job_view([DATA / which])[0]
    text = _render(job)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    for header in ("waits/step", "waited for/step", "exposed wait", "exposed transfer",
                   "busbw", "skew"):
        assert header in text
    assert "Recommendations for the job" in text
    if which == "eight":  # eight ranks' steps: the fastest and the slowest, not 8 columns
        assert "rank 7 " not in text.split("Steps across ranks")[1].splitlines()[2]
