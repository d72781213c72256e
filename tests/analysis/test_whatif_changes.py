"""Each what-if change on a small trace built for it, where the answer is worked out by hand
in the test, and on real traces where its direction and rough size are known."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from analysis_tables import Ev, kernel, launch, make_table, op

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.note import note
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.perf.device_specs import compute_peak, match_device
from profiler_kit.analysis.whatif.changes import (
    CudaGraphs,
    Fusion,
    Kernels,
    NoDataloaderWait,
    NoSync,
    OverlapComm,
    Precision,
)
from profiler_kit.analysis.whatif.graph import build
from profiler_kit.analysis.whatif.replay import replay, what_if
from profiler_kit.render.wording.notes import say
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import Cat

DATA = Path(__file__).parents[1] / "data"
US = 1_000
GEMM = "volta_sgemm_128x64_nn"
ELEMENTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"
STEP = "ProfilerStep#1"


def step(dur: int) -> Ev:
    return op(STEP, 0, dur, cat=Cat.USER_ANNOTATION)


def gpu_bound_trace():
    """Three kernels queued at once behind one another (launch latency 10 µs, gap 2 µs),
    then a cudaDeviceSynchronize that wakes 6 µs after the last one ends; the step ends
    5 µs later. Two GEMMs of 50 µs, one elementwise kernel of 20 µs."""
    return make_table([
        step(155 * US),
        launch(10 * US, 1), launch(15 * US, 2), launch(20 * US, 3),
        kernel(GEMM, 20 * US, 50 * US, corr=1),
        kernel(GEMM, 72 * US, 50 * US, corr=2),
        kernel(ELEMENTWISE, 124 * US, 20 * US, corr=3),
        Ev(Cat.RUNTIME, "cudaDeviceSynchronize", 40 * US, 110 * US),
    ])


def test_the_unchanged_replay_of_a_hand_built_trace_is_exact():
    r = replay(gpu_bound_trace())
    assert r.step == "device"
    assert r.measured_step_ns == r.replayed_step_ns == 155 * US
    assert r.model.launch_latency_ns == 10 * US
    assert r.model.gap_ns == 2 * US
    assert r.model.wake_ns == 6 * US
    assert r.trusted and not r.missing


def test_kernels_gemm_twice_as_fast_by_hand():
    """GEMMs 25 µs each: the first runs 20-45, the second 47-72, the elementwise 74-94;
    the sync wakes at 100 instead of 150, so the step's CPU span ends at 105."""
    r = replay(gpu_bound_trace(), changes=[Kernels("gemm", 2)])
    assert r.predicted_step_ns == 105 * US
    # a regex on the name selects the same kernels
    assert replay(gpu_bound_trace(), changes=[Kernels("sgemm", 2)]).predicted_step_ns == 105 * US
    # a class with no kernel changes nothing and says so
    r = replay(gpu_bound_trace(), changes=[Kernels("convolution", 3)])
    assert r.predicted_step_ns == r.replayed_step_ns
    assert r.notes[0] == note("no_matching_activity", change="kernels convolution=3",
                              pattern="convolution")


def test_no_sync_by_hand():
    """A 100 µs kernel, a cudaStreamSynchronize waiting for it (wakes 5 µs after), a 20 µs
    op, then a 10 µs kernel: without the wait the op and the second launch run at once, and
    the second kernel waits for the first on the stream instead (110 to 120 µs)."""
    table = make_table([
        step(160 * US),
        launch(0, 1), kernel(GEMM, 10 * US, 100 * US, corr=1),
        Ev(Cat.RUNTIME, "cudaStreamSynchronize", 10 * US, 105 * US),
        op("aten::mul", 115 * US, 20 * US),
        launch(135 * US, 2), kernel(ELEMENTWISE, 145 * US, 10 * US, corr=2),
    ])
    r = replay(table)
    assert r.replayed_step_ns == r.measured_step_ns == 160 * US
    r = replay(table, changes=[NoSync()])
    # the step's CPU span ends at 160 - 105 = 55 µs; the GPU at 120 µs
    assert r.predicted_step_ns == 120 * US
    assert r.notes[0].code == "syncs_no_longer_wait" and r.notes[0].figures["calls"] == 1


def launch_bound_trace():
    """Four ops of 20 µs, each launching a 2 µs kernel 10 µs in (the call takes 5 µs, the
    kernel starts 5 µs after the call): the GPU idles between them."""
    events = [step(100 * US)]
    for i in range(4):
        t = 10 * US + i * 20 * US
        events += [op("aten::add", t, 20 * US), launch(t + 10 * US, i + 1, dur=5 * US),
                   kernel(ELEMENTWISE, t + 15 * US, 2 * US, corr=i + 1)]
    return make_table(events)


def test_cuda_graphs_by_hand():
    """The four ops (10-90 µs) collapse to one graph launch of 5 µs (the launch calls'
    median) at 10 µs: the step's CPU span ends at 100 - 80 + 5 = 25 µs; the kernels are all
    issued at 15 µs, start at 20 µs and run back to back (no stream-bound gap was recorded:
    0) to 28 µs."""
    table = launch_bound_trace()
    assert replay(table).replayed_step_ns == 100 * US
    r = replay(table, changes=[CudaGraphs()])
    assert r.predicted_step_ns == 28 * US
    # a region by name: each aten::add its own graph (5 µs each, 4 of them)
    r = replay(table, changes=[CudaGraphs("aten::add")])
    assert r.predicted_step_ns == 100 * US - 80 * US + 4 * 5 * US
    assert replay(table, changes=[CudaGraphs("nothing_like_it")]).notes[0] == note(
        "no_graph_region", change="cuda-graphs nothing_like_it", region="nothing_like_it")


def test_fusion_by_hand():
    """GEMM, three elementwise kernels of 10, 30 and 20 µs, GEMM, queued at once (gaps of
    2 µs), then a sync that wakes 6 µs after the last kernel. Fused, the run is one 30 µs
    kernel (72-102), the second GEMM runs 104-154, the sync wakes at 160, the step ends at
    165 instead of 199. A single elementwise kernel between two others is no run."""
    mul = ELEMENTWISE.replace("AddFunctor", "MulFunctor")
    table = make_table([
        step(199 * US),
        *(launch((10 + 5 * i) * US, i + 1) for i in range(5)),
        kernel(GEMM, 20 * US, 50 * US, corr=1),
        kernel(ELEMENTWISE, 72 * US, 10 * US, corr=2),
        kernel(mul, 84 * US, 30 * US, corr=3),
        kernel(ELEMENTWISE, 116 * US, 20 * US, corr=4),
        kernel(GEMM, 138 * US, 50 * US, corr=5),
        Ev(Cat.RUNTIME, "cudaDeviceSynchronize", 40 * US, 154 * US),
    ])
    r = replay(table, changes=[Fusion()])
    assert r.replayed_step_ns == 199 * US and r.predicted_step_ns == 165 * US
    assert r.notes[0].code == "kernels_fused"
    assert say(r.notes[0]).startswith("fusion: 1 runs of 3 elementwise and normalization "
                                      "kernels, 0.06 ms of work → 0.03 ms")
    r = replay(gpu_bound_trace(), changes=[Fusion()])  # GEMM, GEMM, one elementwise kernel
    assert r.predicted_step_ns == r.replayed_step_ns
    assert [n.code for n in r.notes] == ["no_fusable_run"]


def test_fusion_on_host_bound_real_traces_gains_little():
    """ViT inference on an H100: 0.16 ms of elementwise kernels in a 7.9 ms step the host
    sets: fused, the step gains under 2 %, never more than their time and launches."""
    w = what_if(load(DATA / "h100_vit_image_classification.json.gz"), changes=[Fusion()])
    (gain,) = w.gains
    assert 0 <= gain.gain_pct < 2


def test_no_dataloader_wait_by_hand_on_a_cpu_trace():
    table = make_table([
        step(100 * US),
        op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 60 * US),
        op("aten::linear", 60 * US, 40 * US),
    ])
    r = replay(table)
    assert r.step == "cpu" and r.replayed_step_ns == r.measured_step_ns == 100 * US
    assert replay(table, changes=[NoDataloaderWait()]).predicted_step_ns == 40 * US


def comm_trace():
    """A compute kernel, an all-reduce and a compute kernel queued on one stream (launched
    at 0, 1 and 2 µs; latency 10 µs, gaps 2 µs), 50 µs each: 164 µs of device step."""
    return make_table([
        step(5 * US),
        launch(0, 1, dur=500), launch(1 * US, 2, dur=500), launch(2 * US, 3, dur=500),
        kernel(GEMM, 10 * US, 50 * US, corr=1),
        kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 62 * US, 50 * US, corr=2),
        kernel(GEMM, 114 * US, 50 * US, corr=3),
    ])


def test_overlap_comm_by_hand():
    """The all-reduce moves to its own stream: it starts at 1 + 10 = 11 µs, the second GEMM
    follows the first (60 + 2 = 62 µs) and ends at 112 µs."""
    r = replay(comm_trace())
    assert r.replayed_step_ns == r.measured_step_ns == 164 * US
    assert replay(comm_trace(), changes=[OverlapComm()]).predicted_step_ns == 112 * US
    # communication 1.5x faster on the same stream: 50 -> 33.3 µs
    r = replay(comm_trace(), changes=[Kernels("communication", 1.5)])
    assert r.predicted_step_ns == 164 * US - (50 * US - round(50 * US / 1.5))


def test_precision_by_hand():
    """An fp32 SIMT GEMM of 160 µs on an A100 under aten::mm: 16x faster at bf16 (312 over
    19.5 TFLOP/s); its 48 KiB of fp32 operands at 16 bits take 16 ns at 1.555 TB/s, far
    less."""
    dims = [[64, 64], [64, 64]]
    events = [step(300 * US),
              Ev(Cat.CPU_OP, "aten::mm", 5 * US, 20 * US, input_dims=dims,
                 input_types=["float", "float"]),
              launch(10 * US, 1), kernel(GEMM, 20 * US, 160 * US, corr=1)]
    props = [{"name": "NVIDIA A100-SXM4-40GB", "totalGlobalMem": 40 * 2**30}]
    table = make_table(events, device_properties=props)
    peak = match_device("NVIDIA A100-SXM4-40GB", 40 * 2**30)
    ratio = compute_peak(peak, "bf16", True, False) / compute_peak(peak, "fp32", True, False)
    assert ratio == pytest.approx(16, rel=0.01)
    tree = build_op_tree(table)
    gpu = attribute_gpu(table, tree)
    assert classify.CLASSES[int(gpu.klass[0])] == classify.GEMM
    # the step ends with its CPU span (300 µs) either way: look at the kernel's end
    r = replay(table, gpu, [Precision("bf16")])
    assert r.predicted_step_ns == r.replayed_step_ns == 300 * US
    (n,) = r.notes
    assert n.code == "precision_modeled" and n.figures["kernels"] == 1
    assert n.figures["after_ns"] == pytest.approx(160 * US / ratio)
    # a GPU-bound version: the step ends with the kernel
    events[0] = step(15 * US)
    table = make_table(events, device_properties=props)
    r = replay(table, changes=[Precision("bf16")])
    assert r.replayed_step_ns == 180 * US
    assert r.predicted_step_ns == 20 * US + round(160 * US / ratio)


# --- real traces: direction and rough size


@pytest.fixture(scope="module")
def owlv2():
    table = load(DATA / "h100_owlv2_dataloader.json.gz")
    return table, attribute_gpu(table, build_op_tree(table))


def test_real_gemm_twice_as_fast_gains_at_most_half_the_gemm_time(owlv2):
    table, gpu = owlv2
    w = what_if(table, gpu, [Kernels("gemm", 2)])
    gemm = gpu.klass == classify.CLASS_INDEX[classify.GEMM]
    half = int(table.dur_ns[gpu.row[gemm]].sum()) / 2
    gain = w.gains[0].gain_ns
    assert 0 < gain <= half
    assert gain > 0.3 * half  # a GPU-bound trace (with syncs): most of it shows


def test_real_dataloader_wait_removed_gains_about_its_time(owlv2):
    table, gpu = owlv2
    w = what_if(table, gpu, [NoDataloaderWait(), NoSync(), Kernels("gemm", 2)])
    loader, no_sync, gemm = w.gains
    assert 0.45 < loader.gain_pct < 0.55  # the loader is about half the step
    assert no_sync.gain_ns > 0
    # together more than the best alone, less than their sum
    assert max(g.gain_ns for g in w.gains) < w.together.gain_ns \
        <= sum(g.gain_ns for g in w.gains)


def test_real_precision_and_overlap_on_a_ddp_rank():
    table = load(DATA / "a100_ddp_nccl_rank0.json.gz")
    gpu = attribute_gpu(table, build_op_tree(table))
    w = what_if(table, gpu, [Precision("bf16"), OverlapComm(), Kernels("communication", 2)])
    precision, overlap, comm = w.gains
    assert precision.notes[0].code == "precision_modeled"
    assert precision.gain_ns >= 0 and overlap.gain_ns >= 0 and comm.gain_ns >= 0
    comm_ns = int(table.dur_ns[gpu.row[gpu.klass == classify.CLASS_INDEX[
        classify.COMMUNICATION]]].sum())
    assert comm.gain_ns <= comm_ns / 2
    assert np.isfinite(w.replay.step_error)


def test_real_cuda_graphs_on_a_launch_bound_trace():
    """vLLM's eager decode: small kernels, the host launching them; graphs gain."""
    table = load(DATA / "b200_vllm_eager.json.gz")
    w = what_if(table, changes=[CudaGraphs()])
    assert w.gains[0].gain_pct > 0.1


def backward_thread_trace(loader: bool = False):
    """The main thread waits in ``## backward ##`` (60-170 µs) while the autograd thread
    runs the backward op (65-165 µs): it launches a 70 µs GEMM at 70 µs (running 80-150
    µs) and waits for it in a cudaStreamSynchronize (80-156 µs). The step ends at 200 µs
    (with a DataLoader wait 0-50 µs before the backward when ``loader``)."""
    events = [step(200 * US),
              op("## backward ##", 60 * US, 110 * US, cat=Cat.USER_ANNOTATION),
              op("aten::zero_", 175 * US, 10 * US),
              op("autograd::engine::evaluate_function: MmBackward0", 65 * US, 100 * US, tid=2),
              launch(70 * US, 1, tid=2), kernel(GEMM, 80 * US, 70 * US, corr=1),
              Ev(Cat.RUNTIME, "cudaStreamSynchronize", 80 * US, 76 * US, tid=2)]
    if loader:
        events.append(op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0,
                         50 * US))
    return make_table(events)


def test_the_main_thread_waits_for_the_backward_thread_by_hand():
    """GEMMs twice as fast: the kernel runs 80-115 µs, the sync wakes at 121 instead of
    156 µs, so the backward op ends 35 µs earlier (130 µs); the main thread's backward
    span, which waited for it, ends 5 µs after it (135 µs) and the step at 165 µs."""
    table = backward_thread_trace()
    assert replay(table).replayed_step_ns == 200 * US
    assert replay(table, changes=[Kernels("gemm", 2)]).predicted_step_ns == 165 * US


def test_the_backward_thread_starts_when_the_main_thread_gets_there_by_hand():
    """Without the 50 µs DataLoader wait the main thread reaches the backward at 10 µs; the
    autograd thread starts 50 µs earlier (15 µs), its kernel runs 30-100 µs and the step
    ends at 150 µs; with GEMMs twice as fast too, the kernel runs 30-65 µs, the sync wakes
    at 71 µs, the backward op ends at 80 µs, the main thread's span at 85 and the step at
    115 µs."""
    table = backward_thread_trace(loader=True)
    assert replay(table).replayed_step_ns == 200 * US
    r = replay(table, changes=[NoDataloaderWait()])
    assert r.predicted_step_ns == 150 * US
    r = replay(table, changes=[NoDataloaderWait(), Kernels("gemm", 2)])
    assert r.predicted_step_ns == 115 * US


def test_real_full_launch_queue_makes_the_host_follow_the_gpu():
    """ResNet-50 training on a V100 runs with CUDA's launch queue full: launch calls block
    until a launch about 1021 earlier ends. With that dependency the host follows the GPU:
    convolutions twice as fast gain about half their time per step (a host that kept its
    recorded pace would gain nothing)."""
    table = load(DATA / "v100_resnet50_train.json.gz")
    gpu = attribute_gpu(table, build_op_tree(table))
    g = build(table, gpu)
    assert list(g.queue_depth) == [0] and 1000 <= g.queue_depth[0] <= 1024
    w = what_if(table, gpu, [Kernels("convolution", 2), CudaGraphs()])
    conv, graphs = w.gains
    in_steps = g.act_step >= 0
    conv_ns = g.dur[in_steps & (g.klass == classify.CLASS_INDEX[classify.CONVOLUTION])].sum()
    per_step = conv_ns / len(g.step_row)
    assert 0.8 < conv.gain_ns / (per_step / 2) < 1.05
    assert abs(graphs.gain_pct) < 0.01  # GPU-bound: the host's overhead is hidden


@pytest.mark.parametrize("name", ["a100_simple_add", "a100_alexnet", "h100_bert_small",
                                  "mi300_bert_small", "b200_vllm_eager"])
@pytest.mark.parametrize("klass", [classify.GEMM, classify.ELEMENTWISE])
def test_a_class_twice_as_fast_gains_at_most_half_its_time_on_the_critical_path(name, klass):
    """The longest path after the change is at least the old critical path less what the
    change took off it: on traces without steps (and single-step inference) the gain is at
    most half the class's time on the critical path (HTA's model, the critical-path
    analysis; checked against HTA itself on a100_simple_add and a100_alexnet)."""
    from profiler_kit.analysis.time.critical_path import OPERATOR, build_path

    table = load(DATA / f"{name}.json.gz")
    gpu = attribute_gpu(table, build_op_tree(table))
    path = build_path(table, gpu)
    e = path.path_edges
    work = (path.edge_kind[e] == OPERATOR) & (path.edge_event[e] >= 0)
    rows, weight = path.edge_event[e][work], path.edge_weight[e][work]
    pos = np.minimum(np.searchsorted(gpu.row, rows), len(gpu.row) - 1)
    mine = (gpu.row[pos] == rows) & (gpu.klass[pos] == classify.CLASS_INDEX[klass])
    on_path = int(weight[mine].sum())
    gain = what_if(table, gpu, [Kernels(klass, 2)]).gains[0].gain_ns
    assert 0 <= gain <= on_path / 2 + 1_000


def test_cuda_graphs_keep_ops_that_launch_nothing():
    """A 30 µs op computing on the CPU (no launch) after the four launching ops stays: the
    step keeps it, and a CPU-only trace has nothing for a graph to hold."""
    events = [step(130 * US)]
    for i in range(4):
        t = 10 * US + i * 20 * US
        events += [op("aten::add", t, 20 * US), launch(t + 10 * US, i + 1, dur=5 * US),
                   kernel(ELEMENTWISE, t + 15 * US, 2 * US, corr=i + 1)]
    events.append(op("aten::sort", 95 * US, 30 * US))
    r = replay(make_table(events), changes=[CudaGraphs()])
    # the four ops' 80 µs go, the launch's 5 µs comes once: 130 - 80 + 5
    assert r.predicted_step_ns == 55 * US
    cpu = load(DATA / "cpu_torch_profiler.pt.trace.json.gz")
    r = replay(cpu, changes=[CudaGraphs()])
    assert r.predicted_step_ns == r.replayed_step_ns
    assert [n.code for n in r.notes] == ["no_gpu_launch"]


def test_overlap_comm_leaves_communication_streams_alone():
    """A recommendation model's all-to-alls already run on their own streams: nothing moves
    (moving them all onto one stream would serialize them)."""
    table = load(DATA / "a100_recsys_16gpu_rank0.json.gz")
    r = replay(table, changes=[OverlapComm()])
    assert r.predicted_step_ns == r.replayed_step_ns
    assert r.notes[0].code == "communication_moved"
    assert (r.notes[0].figures["moved"], r.notes[0].figures["kernels"]) == (0, 80)


@pytest.mark.parametrize("name", ["h100_owlv2_dataloader", "a100_recsys_8gpu_rank3",
                                  "a100_recsys_16gpu_rank0", "mi250_minitoy_train",
                                  "a100_ddp_nccl_rank0"])
def test_no_thread_runs_backward_under_any_change(name):
    """Whatever the changes, every host event keeps a non-negative duration and each
    thread's events keep their order (the warps stay monotone across handoffs, removals,
    blocking calls and the launch queue)."""
    from profiler_kit.analysis.whatif import engine
    from profiler_kit.analysis.whatif.changes import Context

    table = load(DATA / f"{name}.json.gz")
    gpu = attribute_gpu(table, build_op_tree(table))
    g = build(table, gpu)
    ctx = Context(table, gpu, g)
    every = [Kernels("gemm", 2), Precision("fp16"), CudaGraphs(), NoDataloaderWait(),
             NoSync(), OverlapComm(), Fusion()]
    for changes in [[c] for c in every] + [every]:
        e = engine.Edits(g)
        for c in changes:
            c.apply(ctx, e)
        t = engine.simulate(g, e, table.ts_ns, table.dur_ns)
        assert (t.cpu_end >= t.cpu_start).all() and (t.act_end >= t.act_start).all()
        order = np.lexsort((table.ts_ns[g.cpu_row], g.cpu_thread))
        same = g.cpu_thread[order[1:]] == g.cpu_thread[order[:-1]]
        assert (np.diff(t.cpu_start[order])[same] >= 0).all(), [c.label() for c in changes]
