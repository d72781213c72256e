"""Collectives whose kernels carry no collective args (symmetric memory through vLLM's
custom ops, older NCCL kernels), described from the spans around their launch and
checked against the raw JSON by hand; fused SendRecv calls paired across ranks."""

from __future__ import annotations

import gzip
import json
import math
import statistics
from pathlib import Path

import pytest
from test_job import MS, _stage

from profiler_kit.analysis.job_analysis import analyze_job, analyze_jobs
from profiler_kit.analysis.jobs import bandwidth as bw
from profiler_kit.analysis.jobs.rank_summary import summarize_rank
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"
B200 = DATA / "b200_vllm_eager.json.gz"
WIDTH = {"c10::BFloat16": 2, "float": 4, "long": 8, "int": 4, "unsigned char": 1,
         "signed char": 1}


def _doc(path: Path) -> dict:
    with gzip.open(path) as fh:
        return json.load(fh)


def _complete(path: Path) -> list[dict]:
    return [e for e in _doc(path)["traceEvents"] if e.get("ph") == "X"]


def test_b200_symmetric_memory_all_reduces_sized_from_the_custom_ops() -> None:
    events = _complete(B200)
    ops = {e["args"]["External id"]: e for e in events
           if e.get("name") == "symm_mem::multimem_all_reduce_"}
    kernels = sorted((e for e in events if e.get("cat") == "kernel"
                      and "multimem_all_reduce_kernel" in e["name"]), key=lambda e: e["ts"])
    assert len(ops) == len(kernels) == 73
    # by hand: the op launching each kernel (same External id), its input's numel x 2
    sizes = []
    for k in kernels:
        op = ops[k["args"]["External id"]]
        dims, dtype = op["args"]["Input Dims"][0], op["args"]["Input type"][0]
        sizes.append(math.prod(dims) * WIDTH[dtype])
    # the vllm::all_reduce around each holds the same tensor (a 2-D view of it)
    outer = sorted((e for e in events if e.get("name") == "vllm::all_reduce"),
                   key=lambda e: e["ts"])
    assert [math.prod(e["args"]["Input Dims"][0]) * 2 for e in outer] == sizes

    summary = summarize_rank(load(B200))
    calls = [c for c in summary.calls if c.kind == "allreduce"]
    assert len(calls) == 73 and len(summary.calls) == 74  # and vLLM's one NCCL all-gather
    for call, k, size in zip(calls, kernels, sizes, strict=True):
        assert call.size_bytes == size and call.dtype == "c10::BFloat16"
        assert call.group == "0" and call.seq == calls.index(call)
        assert call.start_ns == pytest.approx(k["ts"] * 1000, abs=1)
        assert call.end_ns - call.start_ns == pytest.approx(k["dur"] * 1000, abs=2)
    kinds = {k.kind: k for k in summary.kinds}
    assert kinds["allreduce"].count == 73 and kinds["allreduce"].size_bytes == sum(sizes)
    # bus bandwidth with the group of 8 from distributedInfo.pg_config: 2 (n - 1) / n
    pg = {g["pg_name"]: g for g in _doc(B200)["distributedInfo"]["pg_config"]}
    n = pg["0"]["pg_size"]
    assert n == 8
    busbw = [s / (k["dur"] * 1e-6) * 2 * (n - 1) / n for s, k in zip(sizes, kernels, strict=True)]
    assert kinds["allreduce"].median_busbw_bytes_per_s == pytest.approx(
        statistics.median(busbw), rel=1e-6)
    assert kinds["allgather"].count == 1  # the NCCL kernel with its own args, as before


def test_b200_symmetric_memory_kernels_are_communication_in_the_timeline() -> None:
    a = analyze_table(load(B200))
    events = _complete(B200)
    comm = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "kernel"
                  and ("multimem_all_reduce_kernel" in e["name"] or "ncclDevKernel" in e["name"]))
    assert all(b[0] >= a_[1] for a_, b in zip(comm, comm[1:], strict=False))  # one stream
    by_hand = sum(e - s for s, e in comm) * 1000
    (dev,) = a.timeline.devices
    assert dev.communication_busy_ns == pytest.approx(by_hand, abs=len(comm) * 2)
    assert a.communication is not None
    assert a.communication.exposed_ns == dev.exposed_communication_ns
    assert a.gpu.classes[[c.klass for c in a.gpu.classes].index("communication")].count == 74


def test_b200_symmetric_memory_all_reduces_are_not_work_without_a_model() -> None:
    """The perf model counts FLOPs; a collective has none to count, so the all-reduce
    kernels are neither in the time it could cover nor in the list of work it did not
    model: modelled plus unmodelled time is the GPU time of every activity that is not
    communication, summed from the raw JSON (within 0.1 %: a few activities no op launched)."""
    perf = analyze_table(load(B200)).perf
    assert all(not u.op.startswith("symm_mem::") for u in perf.unmodelled)
    events = _complete(B200)
    compute_us = sum(e["dur"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy",
                                                                   "gpu_memset")
                     and "multimem_all_reduce_kernel" not in e["name"]
                     and "ncclDevKernel" not in e["name"])
    assert (perf.time_ns + perf.unmodelled_ns) / 1000 == pytest.approx(compute_us, rel=1e-3)
    assert perf.modelled_share == pytest.approx(perf.time_ns / 1000 / compute_us, rel=1e-3)


def _nccl_span(events: list[dict], kernel: dict) -> dict:
    """By hand: the kernel's launch (same correlation), then the innermost ``nccl:`` span
    open around it on the launching thread."""
    launch = next(e for e in events if e.get("cat") == "cuda_runtime"
                  and e["args"].get("correlation") == kernel["args"]["correlation"])
    around = [e for e in events if e.get("cat") == "user_annotation"
              and e["name"].startswith("nccl:") and e["tid"] == launch["tid"]
              and e["ts"] <= launch["ts"] <= e["ts"] + e["dur"]]
    return max(around, key=lambda e: e["ts"])


@pytest.mark.parametrize("rank", [0, 1])
def test_old_nccl_sendrecv_kernels_are_the_collectives_that_launched_them(rank: int) -> None:
    """NCCL of this job ran its all-reduces, all-to-alls and all-gathers in the kernel
    ``ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t``: each is the collective of the
    ``nccl:`` span around its launch, sized from that span, or from the c10d op around
    it where that gives both buffers (``c10d::_allgather_base_(output, input)``)."""
    path = DATA / "two_ranks" / f"rank{rank}.json.gz"
    events = _complete(path)
    kernels = sorted((e for e in events if e.get("cat") == "kernel"
                      and e["name"].startswith("ncclKernel_SendRecv")), key=lambda e: e["ts"])
    summary = summarize_rank(load(path))
    assert len(kernels) == len(summary.calls) == 10
    kind_of = {"nccl:all_reduce": "allreduce", "nccl:all_to_all": "alltoall",
               "nccl:_all_gather_base": "allgather"}
    for call, k in zip(summary.calls, kernels, strict=True):
        span = _nccl_span(events, k)
        assert call.kind == kind_of[span["name"]]
        assert call.start_ns == pytest.approx(k["ts"] * 1000, abs=1)
        dims, types = span["args"]["Input Dims"], span["args"]["Input type"]
        own = sum(math.prod(d) * WIDTH[t] for d, t in zip(dims, types, strict=True))
        base = {"allgather": "c10d::_allgather_base_", "alltoall": "c10d::alltoall_base_"}
        if call.kind in base:  # the c10d op gives both buffers: the larger is the size
            op = next(e for e in events if e["name"] == base[call.kind]
                      and e["tid"] == span["tid"] and e["ts"] <= span["ts"] <= e["ts"] + e["dur"])
            out, inp = op["args"]["Input Dims"][:2]
            width = WIDTH[op["args"]["Input type"][0]]
            assert math.prod(inp) * width == own  # the span holds the input
            assert call.size_bytes == max(math.prod(out), math.prod(inp)) * width
        else:
            assert call.size_bytes == own


def test_two_ranks_sendrecv_kernels_matched_as_collectives() -> None:
    """Before, the 20 SendRecv kernels of the two ranks were left unmatched as fused
    point-to-point calls; now they are 10 collectives matched by their order in the
    default group (the traces record neither Seq nor process group). The traces are
    sampled, so the two ranks' orders differ: 6 instances disagree on type or size and
    the job view says so."""
    summaries = [summarize_rank(load(DATA / "two_ranks" / f"rank{r}.json.gz")) for r in (0, 1)]
    (job,) = analyze_jobs(summaries)
    assert job.pipeline is None
    assert len(job.instances) == 10 and job.unmatched_calls == 0
    pairs = [(summaries[0].calls[i], summaries[1].calls[i]) for i in range(10)]
    disagree = sum(a.kind != b.kind or a.size_bytes != b.size_bytes for a, b in pairs)
    assert job.mismatched == disagree == 6
    assert any(w.code == "collectives_mismatched" and w.figures["count"] == 6
               for w in job.warnings)


def test_fused_sendrecv_calls_pair_across_two_ranks() -> None:
    # rank 0 starts its exchange at 40, rank 1 at 10; both end at 45 and at 95
    r0 = _stage(0, [(0, 100, 40)], [("sendrecv", 40, 45), ("sendrecv", 90, 95)])
    r1 = _stage(1, [(0, 100, 50)], [("sendrecv", 10, 45), ("sendrecv", 60, 95)])
    p = analyze_job([r0, r1]).pipeline
    assert p is not None and p.unmatched_calls == 0
    assert [(t.src, t.dst, t.fused, t.waiting_rank, t.wait_ns, t.transfer_ns)
            for t in p.transfers] == [(0, 1, True, 1, 30 * MS, 5 * MS),
                                      (0, 1, True, 1, 30 * MS, 5 * MS)]
    assert p.stages[1].recv_wait_ns == 60 * MS and p.stages[1].send_wait_ns == 0
    assert p.transfers[0].busbw_bytes_per_s == pytest.approx(
        bw.busbw_bytes_per_s("send", 4096, 5 * MS, 2))


def test_fused_sendrecv_calls_pair_by_nearest_end_among_more_ranks() -> None:
    r0 = _stage(0, [(0, 100, 40)], [("sendrecv", 40, 45)], world=3)
    r1 = _stage(1, [(0, 100, 50)], [("sendrecv", 10, 46), ("sendrecv", 80, 90)], world=3)
    r2 = _stage(2, [(0, 100, 5)], [("sendrecv", 70, 91), ("sendrecv", 97, 99)], world=3)
    p = analyze_job([r0, r1, r2]).pipeline
    assert p is not None
    assert [(t.src, t.dst) for t in p.transfers] == [(0, 1), (1, 2)]
    assert p.unmatched_calls == 1  # rank 2's last exchange has no partner here


def _x(cat: str, name: str, ts: int, dur: int, tid: int, **args) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "pid": 1 if tid < 100 else 0, "tid": tid,
            "ts": ts, "dur": dur, "args": args}


def test_functional_collective_sized_from_record_param_comms(tmp_path: Path) -> None:
    """A ``_c10d_functional`` all-gather whose kernel carries no args: type, sizes, group
    and sequence number from the ``record_param_comms`` inside the op; its wait and a
    copy launched inside an all-reduce op are not calls."""
    events = [
        _x("cpu_op", "_c10d_functional::all_gather_into_tensor", 100, 50, 1,
           **{"Input Dims": [[1024], [], []], "Input type": ["float", "Scalar", ""]}),
        _x("cpu_op", "record_param_comms", 105, 40, 1,
           **{"Collective name": "all_gather_into_tensor", "In msg nelems": 1024,
              "Out msg nelems": 4096, "dtype": "Float", "Group size": 4,
              "Process Group Name": "1", "Seq": 7}),
        _x("cuda_runtime", "cudaLaunchKernel", 110, 10, 1, correlation=5),
        _x("kernel", "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
           130, 100, 200, correlation=5, device=0, stream=7),
        _x("cpu_op", "_c10d_functional::wait_tensor", 160, 5, 1),
        _x("cpu_op", "_c10d_functional::all_reduce", 300, 50, 1,
           **{"Input Dims": [[256], [], []], "Input type": ["c10::BFloat16", "", ""]}),
        _x("cpu_op", "aten::copy_", 305, 20, 1),
        _x("cuda_runtime", "cudaLaunchKernel", 310, 10, 1, correlation=6),
        _x("kernel", "void at::native::elementwise_kernel<copy>(int)", 330, 10, 200,
           correlation=6, device=0, stream=7),
        _x("cuda_runtime", "cudaLaunchKernel", 330, 10, 1, correlation=7),
        _x("kernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage)",
           345, 20, 200, correlation=7, device=0, stream=7),
    ]
    path = tmp_path / "functional.json"
    path.write_text(json.dumps({"traceEvents": events, "distributedInfo": {
        "backend": "nccl", "rank": 0, "world_size": 8}}))
    summary = summarize_rank(load(path))
    assert [c.kind for c in summary.calls] == ["allgather", "allreduce"]
    ag, ar = summary.calls
    assert (ag.group, ag.seq, ag.size_bytes, ag.dtype) == ("1", 7, 4096 * 4, "Float")
    # the all-reduce: the op's first input, bf16; the default group of the 8 ranks
    assert (ar.group, ar.seq, ar.size_bytes) == ("0", 0, 256 * 2)
    kinds = {k.kind: k for k in summary.kinds}
    assert kinds["allgather"].median_busbw_bytes_per_s == pytest.approx(
        4096 * 4 / 100e-6 * 3 / 4)
    assert kinds["allreduce"].median_busbw_bytes_per_s == pytest.approx(
        512 / 20e-6 * 2 * 7 / 8)
