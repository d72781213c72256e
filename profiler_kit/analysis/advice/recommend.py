"""Recommendations: rules that fire on measured numbers, each with its threshold and evidence.

A rule states what it measured (``measured``), the line it crossed (``threshold``,
and whether it fires above or below it) and the numbers behind it (``evidence``:
label, raw value, unit), so a reader can check it. Values stay raw (ns, bytes,
fractions); renderers format them. CPU-only traces skip the GPU rules, and say so.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify, intervals
from profiler_kit.analysis.core.arrays import median
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.recommendation import Evidence, Recommendation
from profiler_kit.analysis.core.steps import Steps
from profiler_kit.analysis.jobs import comm_context
from profiler_kit.analysis.memory.usage import Memory
from profiler_kit.analysis.perf.autocast_scope import autocast_scope
from profiler_kit.analysis.perf.precision import Precision
from profiler_kit.analysis.time.busy import Timeline
from profiler_kit.analysis.time.hotspots import Breakdown
from profiler_kit.analysis.time.idle_causes import (
    DATALOADER,
    HOST_CODE_KINDS,
    KIND_LABELS,
    KIND_WORDS,
    OPTIMIZER,
    SYNCHRONIZATION,
    IdleAttribution,
    IdleCauses,
)
from profiler_kit.analysis.time.launches import Launches
from profiler_kit.trace.table import Cat, EventTable

# Thresholds (fractions unless named otherwise).
LOW_UTILIZATION = 0.5  # GPU busy / window below this
AUTOCAST_MIN_SHARE = 0.20  # GPU time in ops autocast changes, still 32-bit / GPU time
HOST_BOUND_SHARE = 0.2  # GPU idle while the CPU ran model code (ops, ranges, Python) / window
LAUNCH_CALL_SHARE = 0.2  # GPU idle inside the launch calls of its next work / window
EMPTY_QUEUE_DELAY_NS = 50_000  # median launch delay at most this: kernels found the queue empty
LAUNCH_BOUND_MIN_LAUNCHES = 50  # fewer launches give no stable median delay
IDLE_CAUSE_SHARE = 0.10  # GPU idle attributed to the DataLoader, a sync or the optimizer / window
MEMCPY_SHARE = 0.10  # memcpy time / GPU activity time
DATALOADER_SHARE = 0.10  # data-loader time / steps window
EXPOSED_COMM_SHARE = 0.10  # communication not overlapped with computation / device window
EXPOSED_CONTEXT_SHARE = 0.2  # a context with this share of the exposed time gets its advice
MEMORY_NEAR_CAPACITY = 0.90  # peak / device memory
FP32_GEMM_SHARE = 0.20  # share of GEMM time in fp32 (non tensor-core) kernels
FP32_GEMM_MIN_GPU_SHARE = 0.05  # ... and those kernels' share of GPU kernel time
TENSOR_CORE_MAJOR = 8  # NVIDIA compute capability with TF32 tensor cores

_DATALOADER = re.compile(r"DataLoader", re.IGNORECASE)
_BIAS_ADD = re.compile(r"^aten::add_?$")


class Findings(msgspec.Struct, frozen=True):
    recommendations: tuple[Recommendation, ...]
    notes: tuple[Note, ...]  # rules not evaluated and why


def _dev(device: int) -> str:
    return f"gpu:{device}"


def recommend(
    table: EventTable,
    tree: OpTree,
    gpu: GpuActivity,
    gpu_breakdown: Breakdown,
    timeline: Timeline,
    steps: Steps,
    precision: Precision,
    memory: Memory,
    launches: Launches | None = None,
    step_device_ns: int | None = None,
    idle: IdleAttribution | None = None,
) -> Findings:
    """Evaluate every rule; return those that fired and notes about those that could not run.

    The causes of GPU idle time (DataLoader, synchronization, optimizer, host code,
    launch calls) come first, the largest share of the step first; the idle GPU itself, a
    symptom, after them.
    """
    causes: list[Recommendation] = []
    recs: list[Recommendation] = []
    notes: list[Note] = []
    if not len(gpu):
        notes.append(note("cpu_only_trace"))
        idle = None
    else:
        causes += _host_bound(idle, timeline, step_device_ns)
        causes += _launch_bound(table, gpu, timeline, launches, idle, step_device_ns)
        causes += _synchronization(idle, timeline, step_device_ns)
        causes += _optimizer(idle, timeline, step_device_ns)
    causes += _dataloader(table, steps, idle, timeline, step_device_ns)
    causes.sort(key=lambda r: -r.measured)
    if len(gpu):
        symptoms = _utilization(timeline, step_device_ns, idle)
        causes, symptoms = _symptoms_into_causes(causes, symptoms)
        recs += symptoms
        recs += _precision(table, tree, gpu)
        recs += _memcpy(gpu_breakdown)
        recs += _exposed_comm(table, tree, gpu, timeline)
        recs += _fp32_matmul(table, precision, gpu_breakdown, notes)
    recs += _memory(memory, notes)
    recs += _conv_bias_bn(table, tree)
    return Findings(tuple(causes + recs), tuple(notes))


def _symptoms_into_causes(causes: list[Recommendation], symptoms: list[Recommendation]
                          ) -> tuple[list[Recommendation], list[Recommendation]]:
    """A GPU mostly idle on a device where a cause of its idle time fired is that cause,
    not a second recommendation: the cause that holds the most of the step carries the
    symptom as evidence. A symptom with no cause of its own stays."""
    causes = list(causes)
    left = []
    for sym in symptoms:
        at = next((i for i, c in enumerate(causes) if c.scope == sym.scope), None)
        if at is None:
            left.append(sym)
            continue
        busy = Evidence("GPU busy (the symptom)", sym.measured, "fraction")
        causes[at] = msgspec.structs.replace(causes[at],
                                             evidence=(busy, *causes[at].evidence))
    return causes, left


def _utilization(timeline: Timeline, step_device_ns: int | None = None,
                 idle: IdleAttribution | None = None) -> list[Recommendation]:
    """GPU busy over the steps' device-side time (from each step's start to the end of the
    last GPU work it launched) where there are steps, else over the GPU window (first to
    last GPU activity), which calls a long step with little GPU work busy. The evidence
    says what the CPU was doing while the GPU idled."""
    causes = {c.device: c for c in idle.devices} if idle is not None else {}
    out = []
    for d in timeline.devices:
        window = step_device_ns or d.window_ns
        if window <= 0:
            continue
        util = min(1.0, d.busy_ns / window)
        if util < LOW_UTILIZATION:
            out.append(Recommendation(
                rule="low_gpu_utilization", scope=_dev(d.device),
                measured=util, threshold=LOW_UTILIZATION, fires_when="below", unit="fraction",
                evidence=(Evidence("GPU busy", d.busy_ns, "ns"),
                          Evidence("device-side step time" if step_device_ns else
                                   "GPU window", window, "ns"),
                          Evidence("idle", max(0, window - d.busy_ns), "ns"),
                          *_idle_evidence(causes.get(d.device))),
            ))
    return out


def _idle_evidence(causes: IdleCauses | None) -> list[Evidence]:
    """The largest causes of the idle gaps between GPU work, by kind."""
    if causes is None or causes.idle_ns <= 0:
        return []
    kinds = sorted(((causes.kind_ns(k), k) for k in KIND_WORDS), reverse=True)
    return [Evidence(f"idle while {KIND_WORDS[k]}", ns, "ns")
            for ns, k in kinds[:3] if ns > 0]


def _precision(table: EventTable, tree: OpTree, gpu: GpuActivity) -> list[Recommendation]:
    """The GPU time autocast could run in 16 bits and does not: kernels of the aten ops it
    changes (matmuls, linear, convolutions, attention) still in 32 bits, over all GPU
    time. Custom extension and Triton kernels are out of its reach and never count."""
    scope = autocast_scope(table, tree, gpu)
    if not scope.gpu_ns or not scope.scope_ns:
        return []
    wide = scope.scope_ns - scope.low_precision_ns
    share = wide / scope.gpu_ns
    if share < AUTOCAST_MIN_SHARE:
        return []
    ev = [Evidence("GPU time in ops autocast changes, still 32-bit", wide, "ns"),
          Evidence("GPU time in ops autocast changes", scope.scope_ns, "ns"),
          Evidence("already fp16/bf16/fp8", scope.low_precision_ns, "ns"),
          Evidence("GPU time", scope.gpu_ns, "ns")]
    if scope.compiled_ns:
        ev.append(Evidence("of it library GEMM/conv/attention kernels in torch.compile graphs",
                           scope.compiled_ns, "ns"))
    if scope.out_of_reach_ns:
        ev.append(Evidence("GEMM/conv/attention kernels autocast cannot change (custom ops, "
                           "Triton)", scope.out_of_reach_ns, "ns"))
    ev += [Evidence("op", ns, "ns", name=name) for name, ns in scope.top_ops]
    return [Recommendation(
        rule="reduced_precision_unused", scope="trace",
        measured=share, threshold=AUTOCAST_MIN_SHARE, fires_when="above", unit="fraction",
        evidence=tuple(ev), figures={"compiled": bool(scope.compiled_ns)},
    )]


def _device_windows(timeline: Timeline, step_device_ns: int | None) -> dict[int, int]:
    """Each device's window for an idle share: the device-side step time, else the GPU
    window of the whole trace."""
    return {d.device: step_device_ns or d.window_ns for d in timeline.devices}


def _host_bound(idle: IdleAttribution | None, timeline: Timeline,
                step_device_ns: int | None) -> list[Recommendation]:
    """The GPU waits while the CPU runs the model's own code: idle before the next launch
    while the launching thread was in ops, ``record_function`` ranges or Python (the
    DataLoader, synchronizations and the optimizer have rules of their own). Names the
    ranges (regions) and the ops it was in, and how little of it the launch calls took."""
    if idle is None:
        return []
    windows = _device_windows(timeline, step_device_ns)
    out = []
    for dc in idle.devices:
        window = windows.get(dc.device, 0)
        host = sum(dc.kind_ns(k) for k in HOST_CODE_KINDS)
        if window <= 0 or host / window < HOST_BOUND_SHARE:
            continue
        ev = [Evidence("GPU idle while the CPU ran model code (ops, ranges, Python)", host,
                       "ns"),
              Evidence("device-side step time" if step_device_ns else "GPU window", window,
                       "ns"),
              Evidence("GPU idle inside the launch calls themselves", dc.in_launch_call_ns,
                       "ns")]
        ev += [Evidence("idle while in the region", c.ns, "ns",
                        name=c.name or "(no record_function range)")
               for c in dc.regions[:3]]
        ev += [Evidence(f"idle while {KIND_WORDS[c.kind]}", c.ns, "ns",
                        name=c.name or KIND_LABELS[c.kind])
               for c in dc.causes if c.kind in HOST_CODE_KINDS][:4]
        out.append(Recommendation(
            rule="host_bound", scope=_dev(dc.device),
            measured=host / window, threshold=HOST_BOUND_SHARE, fires_when="above",
            unit="fraction", evidence=tuple(ev),
        ))
    return out


def _launch_bound(table: EventTable, gpu: GpuActivity, timeline: Timeline,
                  launches: Launches | None, idle: IdleAttribution | None,
                  step_device_ns: int | None) -> list[Recommendation]:
    """The launch calls themselves are the cost: the GPU idles inside the runtime calls
    (``cudaLaunchKernel``...) that launch its next work, with an empty queue (a short
    median launch delay). Model code before the calls is the host-bound rule's; a deep
    queue (long launch delays) means the host is ahead, whatever the idle time."""
    if launches is None or idle is None or launches.launched < LAUNCH_BOUND_MIN_LAUNCHES \
            or launches.cpu_launch is None:
        return []
    kernel_rows = gpu.row[table.cat[gpu.row] == Cat.KERNEL]
    median_kernel = float(median(table.dur_ns[kernel_rows])) if len(kernel_rows) else 0.0
    by_device = {d.device: d for d in launches.devices}
    causes = {c.device: c for c in idle.devices}
    out = []
    for d in timeline.devices:
        dl, dc = by_device.get(d.device), causes.get(d.device)
        window = step_device_ns or d.window_ns
        if dl is None or dc is None or dl.launch_delay is None or window <= 0:
            continue
        share = dc.in_launch_call_ns / window
        delay = dl.launch_delay.p50_ns
        if share < LAUNCH_CALL_SHARE or delay > EMPTY_QUEUE_DELAY_NS:
            continue
        ev = [Evidence("GPU idle inside the launch calls", dc.in_launch_call_ns, "ns"),
              Evidence("device-side step time" if step_device_ns else "GPU window", window,
                       "ns"),
              Evidence("median launch call (CPU)", launches.cpu_launch.p50_ns, "ns"),
              Evidence("median kernel", median_kernel, "ns"),
              Evidence("median launch delay", delay, "ns"),
              Evidence("launches", launches.launched, "count")]
        out.append(Recommendation(
            rule="launch_bound", scope=_dev(d.device),
            measured=share, threshold=LAUNCH_CALL_SHARE, fires_when="above",
            unit="fraction", evidence=tuple(ev),
        ))
    return out


def _idle_rule(idle: IdleAttribution | None, timeline: Timeline, step_device_ns: int | None,
               kind: str, rule: str, variant: str = "") -> list[Recommendation]:
    """GPU idle while the launching thread was in ``kind`` (see idle_attribution), over the
    device-side step time (or the GPU window without steps)."""
    if idle is None:
        return []
    windows = _device_windows(timeline, step_device_ns)
    out = []
    for dc in idle.devices:
        window = windows.get(dc.device, 0)
        ns = dc.after_sync_ns if kind == SYNCHRONIZATION else dc.kind_ns(kind)
        if window <= 0 or ns / window < IDLE_CAUSE_SHARE:
            continue
        ev = [Evidence(f"GPU idle while {KIND_WORDS[kind]}", ns, "ns"),
              Evidence("device-side step time" if step_device_ns else "GPU window", window,
                       "ns"),
              Evidence("GPU idle", dc.idle_ns, "ns")]
        if kind == SYNCHRONIZATION:
            ev.append(Evidence("gaps that began in a synchronizing call",
                               dc.after_sync_gaps, "count"))
        ev += [Evidence("idle attributed to", c.ns, "ns", name=c.name)
               for c in dc.causes if c.kind == kind][:3]
        out.append(Recommendation(
            rule=rule, scope=_dev(dc.device), variant=variant,
            measured=ns / window, threshold=IDLE_CAUSE_SHARE, fires_when="above",
            unit="fraction", evidence=tuple(ev),
        ))
    return out


def _synchronization(idle: IdleAttribution | None, timeline: Timeline,
                     step_device_ns: int | None) -> list[Recommendation]:
    return _idle_rule(idle, timeline, step_device_ns, SYNCHRONIZATION,
                      "idle_after_synchronization")


def _optimizer(idle: IdleAttribution | None, timeline: Timeline,
               step_device_ns: int | None) -> list[Recommendation]:
    return _idle_rule(idle, timeline, step_device_ns, OPTIMIZER, "idle_in_optimizer")


def _memcpy(gpu_bd: Breakdown) -> list[Recommendation]:
    if not gpu_bd.total_ns:
        return []
    memcpy = gpu_bd.ns(classify.MEMCPY)
    share = memcpy / gpu_bd.total_ns
    if share < MEMCPY_SHARE:
        return []
    return [Recommendation(
        rule="memcpy_share", scope="trace",
        measured=share, threshold=MEMCPY_SHARE, fires_when="above", unit="fraction",
        evidence=(Evidence("memcpy time", memcpy, "ns"),
                  Evidence("GPU activity time", gpu_bd.total_ns, "ns")),
    )]


def _exposed_comm(table: EventTable, tree: OpTree, gpu: GpuActivity,
                  timeline: Timeline) -> list[Recommendation]:
    """Communication kernels with no computation beside them, over the device window; the
    advice is that of what the exposed collectives are for (DDP's gradient all-reduce,
    embedding all-to-all, tensor parallelism, ...: see comm_context). One rank's trace
    cannot tell waiting for a late rank from transferring (the advice says so): the job view
    of all ranks can."""
    out = []
    for d in timeline.devices:
        if d.window_ns <= 0 or not d.communication_busy_ns:
            continue
        share = d.exposed_communication_ns / d.window_ns
        if share < EXPOSED_COMM_SHARE:
            continue
        by_context = sorted(comm_context.exposed_by_context(
            table, tree, gpu, d.device, (d.window_start_ns, d.window_start_ns + d.window_ns)
        ).items(), key=lambda kv: -kv[1])
        total = sum(ns for _, ns in by_context) or 1
        main = [c for c, ns in by_context if ns >= EXPOSED_CONTEXT_SHARE * total] or \
            [c for c, _ in by_context[:1]]
        out.append(Recommendation(
            rule="exposed_communication", scope=_dev(d.device),
            figures={"contexts": tuple(main)}, measured=share,
            threshold=EXPOSED_COMM_SHARE, fires_when="above", unit="fraction",
            evidence=(Evidence("communication busy", d.communication_busy_ns, "ns"),
                      Evidence("overlapped with computation", d.comm_compute_overlap_ns,
                               "ns"),
                      Evidence("exposed", d.exposed_communication_ns, "ns"),
                      Evidence("GPU window", d.window_ns, "ns"),
                      *(Evidence(f"exposed in {comm_context.LABELS[c]}", ns, "ns")
                        for c, ns in by_context if ns > 0)),
        ))
    return out


def _fp32_matmul(table: EventTable, precision: Precision, gpu_bd: Breakdown,
                 notes: list[Note]) -> list[Recommendation]:
    props = table.meta.device_properties
    nvidia = [p for p in props if p.get("warpSize") == 32
              and isinstance(p.get("computeMajor"), int)]
    if not nvidia:
        notes.append(note("fp32_matmul_no_compute_capability"))
        return []
    major = max(int(p["computeMajor"]) for p in nvidia)
    if major < TENSOR_CORE_MAJOR or precision.gemm_ns <= 0:
        return []
    share = precision.gemm_fp32_simt_ns / precision.gemm_ns
    compute = gpu_bd.total_ns - gpu_bd.ns(classify.MEMCPY) - gpu_bd.ns(classify.MEMSET)
    gpu_share = precision.gemm_fp32_simt_ns / compute if compute > 0 else 0.0
    if share < FP32_GEMM_SHARE or gpu_share < FP32_GEMM_MIN_GPU_SHARE:
        return []
    ev = [Evidence("compute capability", f"{major}.x", ""),
          Evidence("GEMM kernel time", precision.gemm_ns, "ns"),
          Evidence("in fp32 (non tensor-core) kernels", precision.gemm_fp32_simt_ns, "ns"),
          Evidence("share of GPU kernel time", gpu_share, "fraction")]
    ev += [Evidence("fp32 GEMM kernel", ns, "ns", name=name)
           for name, ns in precision.gemm_fp32_simt_top[:3]]
    return [Recommendation(
        rule="fp32_matmul_on_tensor_core_gpu", scope="trace",
        measured=share, threshold=FP32_GEMM_SHARE, fires_when="above", unit="fraction",
        evidence=tuple(ev),
    )]


def _memory(memory: Memory, notes: list[Note]) -> list[Recommendation]:
    if not memory.recorded:
        notes.append(note("memory_rule_no_memory_events"))
        return []
    out = []
    for d in memory.devices:
        if not d.capacity_bytes:
            continue
        peak = d.peak_reserved_bytes if d.peak_reserved_bytes is not None \
            else d.peak_allocated_bytes
        frac = peak / d.capacity_bytes
        if frac >= MEMORY_NEAR_CAPACITY:
            out.append(Recommendation(
                rule="memory_near_capacity", scope=d.device,
                measured=frac, threshold=MEMORY_NEAR_CAPACITY, fires_when="above",
                unit="fraction",
                evidence=(Evidence("peak", peak, "bytes"),
                          Evidence("device memory", d.capacity_bytes, "bytes")),
            ))
    return out


def _dataloader(table: EventTable, steps: Steps, idle: IdleAttribution | None,
                timeline: Timeline, step_device_ns: int | None) -> list[Recommendation]:
    """With a GPU: the GPU idle while the launching thread was in the DataLoader (loading
    that overlaps queued GPU work costs nothing). Without one: the DataLoader's share of
    the steps on the CPU."""
    ids = [i for i, n in enumerate(table.names) if _DATALOADER.search(n)]
    window = steps.end_ns - steps.start_ns
    if not ids or window <= 0:
        return []
    cpu = np.isin(table.cat, np.array([int(Cat.CPU_OP), int(Cat.USER_ANNOTATION)],
                                      dtype=table.cat.dtype))
    rows = np.flatnonzero(cpu & np.isin(table.name, np.array(ids)))
    start = np.clip(table.ts_ns[rows], steps.start_ns, steps.end_ns)
    end = np.clip(table.ts_ns[rows] + table.dur_ns[rows], steps.start_ns, steps.end_ns)
    loader_ns = intervals.length(start, end)
    cpu_ev = (Evidence("data-loader time (CPU)", loader_ns, "ns"),
              Evidence("steps window" if steps.source == "ProfilerStep" else "trace window",
                       window, "ns"),
              Evidence("data-loader spans", len(rows), "count"))
    if idle is not None and idle.devices:
        out = _idle_rule(idle, timeline, step_device_ns, DATALOADER, "dataloader_share",
                         "gpu_idle")
        return [msgspec.structs.replace(r, evidence=r.evidence + cpu_ev) for r in out]
    share = loader_ns / window
    if share < DATALOADER_SHARE:
        return []
    return [Recommendation(
        rule="dataloader_share", scope="trace", variant="cpu_time",
        measured=share, threshold=DATALOADER_SHARE, fires_when="above", unit="fraction",
        evidence=cpu_ev,
    )]


def _conv_bias_bn(table: EventTable, tree: OpTree) -> list[Recommendation]:
    """A convolution with a bias whose output goes straight into batch norm wastes the bias."""
    n = len(tree)
    if not n:
        return []
    conv = classify.CLASS_INDEX[classify.CONVOLUTION]
    bn = classify.CLASS_INDEX[classify.BATCHNORM]
    is_op = table.cat[tree.row] == Cat.CPU_OP
    parent_cls = np.where(tree.parent >= 0, tree.own_klass[np.maximum(tree.parent, 0)], -1)
    # Outermost convolution ops (aten::conv2d, not its aten::_convolution children).
    convs = np.flatnonzero(is_op & (tree.own_klass == conv) & (parent_cls != conv))
    if not len(convs):
        return []
    nxt = _next_sibling(tree)
    follow = nxt[convs]
    ok = follow >= 0
    convs, follow = convs[ok], follow[ok]
    pairs = convs[tree.own_klass[follow] == bn]
    if not len(pairs):
        return []
    with_bias = [int(c) for c in pairs.tolist() if _conv_has_bias(table, tree, int(c))]
    if not with_bias:
        return []
    example = table.names[int(table.name[tree.row[with_bias[0]]])]
    follower = table.names[int(table.name[tree.row[nxt[with_bias[0]]]])]
    return [Recommendation(
        rule="conv_bias_before_batchnorm", scope="trace",
        measured=len(with_bias), threshold=1, fires_when="above", unit="count",
        evidence=(Evidence("conv ops with a bias followed by batch norm", len(with_bias),
                           "count"),
                  Evidence("conv ops followed by batch norm", len(pairs), "count"),
                  Evidence("example", f"{example} -> {follower}", "")),
    )]


def _next_sibling(tree: OpTree) -> np.ndarray:
    """The node that follows each node under the same parent on the same thread (-1: none)."""
    n = len(tree)
    order = np.lexsort((np.arange(n), tree.parent, tree.thread))
    same = (tree.parent[order][1:] == tree.parent[order][:-1]) & (
        tree.thread[order][1:] == tree.thread[order][:-1])
    nxt = np.full(n, -1, dtype=np.int64)
    nxt[order[:-1][same]] = order[1:][same]
    return nxt


def _conv_has_bias(table: EventTable, tree: OpTree, node: int) -> bool:
    """Input Dims when the trace recorded shapes; else a bias ``add_`` inside the conv (cuDNN)."""
    row = int(tree.row[node])
    recorded = table.op_inputs(row)
    if recorded is not None:
        shapes = recorded.dims
        return len(shapes) >= 3 and isinstance(shapes[2], list) and len(shapes[2]) > 0
    end = tree.end_ns[node]
    j = node + 1
    while j < len(tree) and tree.thread[j] == tree.thread[node] and tree.start_ns[j] < end:
        if _BIAS_ADD.match(table.names[int(table.name[tree.row[j]])]):
            return True
        j += 1
    return False
