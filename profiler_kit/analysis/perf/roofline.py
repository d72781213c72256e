"""How close each op runs to the hardware's limits: achieved FLOP/s and bytes/s per op and shape.

Each op instance with a model (:mod:`perf_model`) gets the GPU time of every kernel,
memcpy and memset in its subtree (the activities linked to it or to an op below it):
``time_source`` "device"; on a CPU-only trace, the op's own duration: "host". Shares of
a peak, the bound and MFU are computed from device time only: a trace whose GPU work
went unrecorded (:mod:`profiler_kit.analysis.time.unrecorded_activity`) gets FLOPs and
bytes, no rate. When modelled ops nest
(``aten::linear`` > ``aten::addmm``), the innermost one counts, so no FLOP or
nanosecond is counted twice. Instances are grouped by (op, input shapes, dtypes,
scalar arguments); each group gets its rates, arithmetic intensity, the side of the
roofline it sits on and its share of the device's peaks (:mod:`.device_specs`).
GPU activity under no modelled op is listed by the op that launched it, never guessed.

Two utilizations, both against the dense peak of the dtype with the most matrix FLOPs:

- ``model_flops_utilization`` (MFU, as PaLM defines it): the model's FLOPs (GEMM,
  convolution and attention, as ``torch.utils.flop_counter`` counts them, causal
  attention in full) of the ops run in the steps, per second of the steps' wall time
  (their device-side time; without steps, the trace's GPU window), over the peak of the
  devices. Idle GPU time lowers it.
- ``flops_per_s_peak_share``: every modelled FLOP per second of the modelled ops' own
  kernel time (``flops_per_s``), over the peak: how fast the work runs while it runs.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify, intervals
from profiler_kit.analysis.core.arrays import dense_ids, distinct
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.op_tree import _nearest_self_or_ancestor as nearest_self_or_ancestor
from profiler_kit.analysis.core.steps import Steps
from profiler_kit.analysis.perf.device_specs import DevicePeak, compute_peak, device_of_table
from profiler_kit.analysis.perf.perf_model import (
    BACKEND_MODELS,
    BACKWARD_CONVOLUTION_TENSORS,
    FAMILIES,
    MATRIX_FAMILIES,
    MODELS,
    PLAIN_FORWARD_CONVOLUTIONS,
    Cost,
    convolution_outputs,
    convolution_with_output,
    op_cost,
)
from profiler_kit.analysis.perf.precision import tf32_kernel
from profiler_kit.analysis.perf.sm_occupancy import launch_figures
from profiler_kit.trace.table import EventTable, RecordedInputs

MFU_MIN_COVERAGE = 0.5  # modelled ops' share of the GPU time below which MFU is left out
DEVICE, HOST = "device", "host"  # time_source: GPU activity time, or CPU op duration
_BACKWARD = re.compile(r"Backward\d*$|^autograd::engine::evaluate_function")


class ShapeGroup(msgspec.Struct, frozen=True):
    """All instances of one op with the same input shapes, dtypes and scalar arguments."""

    op: str
    family: str  # gemm, convolution, attention, normalization, softmax, elementwise, ...
    dtype: str  # compute dtype: the first floating-point input's
    input_dims: list[object]  # as recorded ("Input Dims")
    input_types: list[object]  # as recorded ("Input type")
    arguments: list[object]  # as recorded ("Concrete Inputs")
    backward: bool  # under an autograd backward node
    count: int
    total_ns: int  # GPU time of the subtrees (time_source "device"), else CPU op time
    mean_ns: float
    flops: int  # per instance
    bytes: int  # per instance
    # achieved: count * flops / total time (None where the time is not the work's: GPU
    # activity unrecorded)
    flops_per_s: float | None
    bytes_per_s: float | None
    mean_instance_flops_per_s: float | None  # mean of each instance's rate (TraceLens's mean)
    mean_instance_bytes_per_s: float | None
    intensity_flops_per_byte: float | None
    # "compute" or "memory" at this intensity; None without device peaks or device time
    bound: str | None
    peak_flops_per_s: float | None  # the peak for this dtype and family
    compute_peak_share: float | None  # achieved FLOP/s / peak FLOP/s (device time only)
    memory_peak_share: float | None  # achieved bytes/s / peak bandwidth
    tf32: bool  # fp32 matrix work on tensor-core kernels (see precision.tf32_kernel): TF32 peak
    causal: bool  # causal attention: FLOPs are half the full products (see perf_model)
    # its kernels' min(blocks per SM, 1) and Kineto's occupancy estimate (fraction), each
    # weighted by kernel time (sm_occupancy); None where the trace records neither
    sm_efficiency: float | None = None
    achieved_occupancy: float | None = None


class FamilyRate(msgspec.Struct, frozen=True):
    """One family's modelled work: totals, achieved rates and time-weighted peak shares."""

    family: str
    count: int
    total_ns: int
    flops: int
    bytes: int
    flops_per_s: float | None
    bytes_per_s: float | None
    compute_peak_share: float | None  # FLOPs / sum over groups of (time x that group's peak)
    memory_peak_share: float | None


class Unmodelled(msgspec.Struct, frozen=True):
    """GPU activity (or CPU op time) under no modelled op, by the op that launched it."""

    op: str
    count: int  # op instances
    activities: int  # GPU kernels, memcpy and memset they launched (0 on a CPU trace)
    total_ns: int
    reason: str  # "no model" or "shapes not recorded" or "shapes do not fit the model"


class PerfModel(msgspec.Struct, frozen=True):
    # where the times come from: "device" (GPU time of each op's kernels) or "host" (the
    # op's CPU duration: a CPU-only trace, or one whose GPU activity went unrecorded)
    time_source: str
    device: str | None  # deviceProperties name
    peak: DevicePeak | None  # None: unknown device, CPU trace, or no shapes
    shapes_recorded: bool  # the trace has "Input Dims"
    ops: int  # modelled op instances with time
    flops: int
    bytes: int
    time_ns: int  # time of the modelled ops
    flops_per_s: float | None
    bytes_per_s: float | None
    gpu_busy_ns: int  # union of all GPU activity (0 on a CPU trace)
    # MFU: mfu_flops / mfu_time_ns / (mfu_devices x mfu peak); None without a peak, without
    # device time, or when partial
    model_flops_utilization: float | None
    mfu_dtype: str | None  # the dtype with the most FLOPs, whose peak MFU uses
    mfu_peak_flops_per_s: float | None
    families: tuple[FamilyRate, ...]
    groups: tuple[ShapeGroup, ...]  # largest total first
    unmodelled: tuple[Unmodelled, ...]  # largest total first
    unmodelled_ns: int
    notes: tuple[Note, ...]
    # modelled ops' GPU time / GPU time outside communication (None: CPU trace)
    modelled_share: float | None = None
    mfu_partial: bool = False  # MFU left out: modelled ops cover < MFU_MIN_COVERAGE
    # flops / time_ns / mfu peak (FLOP/s while the modelled ops' kernels run, as a share
    # of the peak); None without a peak, without device time, or when partial
    flops_per_s_peak_share: float | None = None
    mfu_flops: int = 0  # matrix FLOPs of the ops in the MFU window, as flop_counter counts
    mfu_time_ns: int | None = None  # the MFU window's wall time (device side)
    mfu_window: str | None = None  # "steps" (their device-side time) or "trace" (GPU window)
    mfu_devices: int = 0  # GPUs the window spans (the peak counts once per GPU)
    # the GPU work went unrecorded (launches, no kernels): FLOPs and bytes only
    device_time_missing: bool = False


class MfuWindow(msgspec.Struct, frozen=True):
    """The wall time MFU divides by, and which ops' FLOPs it counts."""

    source: str  # "steps" or "trace"
    wall_ns: int  # the steps' device-side time, summed; or the trace's GPU window
    devices: int  # GPUs with activity in it
    # CPU-side step spans (start, end): the ops that start in one count; None: every op
    spans: tuple[tuple[int, int], ...] | None = None


def mfu_window(steps: Steps, devices: int, step_device_ns: int | None) -> MfuWindow | None:
    """MFU's wall time: the steps' device-side time on ``devices`` GPUs where the steps'
    GPU work is known (their ops' FLOPs count); else None, and the perf model takes the
    trace's GPU window."""
    if not step_device_ns or not devices:
        return None
    return MfuWindow("steps", step_device_ns, devices,
                     tuple((st.start_ns, st.start_ns + st.dur_ns) for st in steps.steps))


class Instances(msgspec.Struct, frozen=True):
    """The counted op instances with time, for rules that look at order and strides."""

    node: np.ndarray  # int64 op tree nodes, in start order
    family: np.ndarray  # int8 index into perf_model.FAMILIES
    time_ns: np.ndarray  # int64
    flops: np.ndarray  # int64 per instance
    dtype: list[str]
    peak_share: np.ndarray  # float64 achieved / peak FLOP/s of the instance's group (nan: none)

    def __len__(self) -> int:
        return len(self.node)


NO_INSTANCES = Instances(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8),
                         np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), [],
                         np.zeros(0, dtype=np.float64))


def empty(table: EventTable, has_gpu: bool, why: Note) -> PerfModel:
    name, peak, _ = device_of_table(table)
    return PerfModel(
        time_source=DEVICE if has_gpu else HOST, device=name, peak=peak,
        shapes_recorded=bool(table.inputs), ops=0, flops=0, bytes=0, time_ns=0,
        flops_per_s=None, bytes_per_s=None, gpu_busy_ns=0, model_flops_utilization=None,
        mfu_dtype=None, mfu_peak_flops_per_s=None, families=(), groups=(), unmodelled=(),
        unmodelled_ns=0, notes=(why,))


def analyze_roofline(table: EventTable, tree: OpTree, gpu: GpuActivity) -> PerfModel:
    """Per-op and per-shape rates of ``table``; costs nothing without recorded shapes."""
    return measure(table, tree, gpu)[0]


def measure(table: EventTable, tree: OpTree, gpu: GpuActivity,
            window: MfuWindow | None = None, device_time_missing: bool = False
            ) -> tuple[PerfModel, Instances]:
    """The perf model and the instances it counted.

    ``window``: the wall time and the ops MFU counts (None: MFU over the trace's GPU
    window). ``device_time_missing``: the trace ran work on a GPU but recorded none of it
    (:mod:`profiler_kit.analysis.time.unrecorded_activity`): its ops' host durations are
    only their launch times, so
    FLOPs and bytes are counted and no rate, share of a peak, bound or MFU is given."""
    has_gpu = len(gpu) > 0
    if not table.inputs:
        return empty(table, has_gpu, note("perf_no_input_shapes")), NO_INSTANCES
    name_ids = table.name[tree.row]
    modelled = np.fromiter((n in MODELS for n in table.names), dtype=bool,
                           count=len(table.names))
    candidates = np.flatnonzero(modelled[name_ids])
    n = len(tree)
    # every distinct (op, recorded inputs) is modelled once; nodes refer to it by key id
    node_key = np.full(n, -1, dtype=np.int64)
    key_ids: dict[tuple[int, RecordedInputs], int] = {}
    key_rows: list[int] = []  # a row holding each key's inputs
    key_cost: list[Cost | None] = []
    no_shapes: list[int] = []
    misfit: list[int] = []
    inputs = table.inputs
    for node, row, name_id in zip(candidates.tolist(), tree.row[candidates].tolist(),
                                  name_ids[candidates].tolist(), strict=True):
        raw = inputs.get(row)
        if raw is None:
            no_shapes.append(node)
            continue
        kid = key_ids.setdefault((name_id, raw), len(key_cost))
        if kid == len(key_cost):
            key_rows.append(row)
            key_cost.append(op_cost(table.names[name_id], table.op_inputs(row)))
        if key_cost[kid] is None:
            misfit.append(node)
        else:
            node_key[node] = kid
    misfit = _fit_convolutions_from_backward(table, tree, key_ids, key_rows, key_cost,
                                             misfit, node_key)
    keys = _Keys(key_cost, key_rows, [k[0] for k in key_ids])
    _defer_backend_ops(table, tree, node_key, keys.family)

    counted = _counted(node_key, keys.family, tree.parent)
    owner_of_node = nearest_self_or_ancestor(counted, tree.parent) if n else \
        np.zeros(0, dtype=np.int64)

    if has_gpu:
        time_ns, tf32, unmod = _gpu_time(table, tree, gpu, owner_of_node)
    else:
        time_ns = _cpu_time(tree, counted, owner_of_node)
        tf32 = np.zeros(n, dtype=bool)
        unmod = _cpu_unmodelled(table, tree, owner_of_node)

    name, peak, device_note = device_of_table(table)
    # shares of a peak, bounds and MFU take device time only: a CPU op's duration on a GPU
    # machine is not the GPU's time
    rated = peak if has_gpu else None
    notes: list[Note] = []
    if device_time_missing:
        notes.append(note("perf_no_gpu_time"))
    if has_gpu and device_note is not None:  # unknown device (peaks withheld), or one inferred
        notes.append(device_note)
    counted_nodes = np.flatnonzero(counted & (time_ns > 0))
    idle = int((counted & (time_ns == 0)).sum())
    if idle:
        notes.append(note("perf_ops_without_gpu_work" if has_gpu else "perf_ops_without_time",
                          ops=idle))
    sm = _sm_by_node(table, gpu, owner_of_node) if has_gpu else None
    groups = _groups(table, tree, counted_nodes, node_key, keys, time_ns, tf32, rated, sm)
    if device_time_missing:
        groups = tuple(_unrated(g) for g in groups)
    if any(g.causal for g in groups):
        notes.append(note("perf_causal_attention_halved"))
    unmodelled = _unmodelled(table, tree, unmod, no_shapes, misfit)
    notes += _above_peak_notes(groups)

    flops = sum(g.flops * g.count for g in groups)
    nbytes = sum(g.bytes * g.count for g in groups)
    total = sum(g.total_ns for g in groups)
    busy = _gpu_busy(table, gpu) if has_gpu else 0
    by_dtype: dict[str, int] = {}
    for g in groups:
        if g.family in MATRIX_FAMILIES:
            by_dtype[g.dtype] = by_dtype.get(g.dtype, 0) + g.flops * g.count
    mfu_dtype = max(by_dtype, key=by_dtype.__getitem__) if by_dtype else None
    mfu_peak = None
    if rated is not None and mfu_dtype is not None:
        mfu_peak = compute_peak(rated, mfu_dtype, True,
                                any(g.tf32 for g in groups if g.dtype == mfu_dtype))
    # both utilizations only where the modelled ops cover most of the GPU time: the FLOPs
    # of unmodelled kernels would read as idle tensor cores
    compute = _compute_ns(table, gpu) if has_gpu else 0
    covered = min(1.0, total / compute) if compute > 0 else None
    partial = covered is not None and covered < MFU_MIN_COVERAGE
    usable = mfu_peak is not None and not partial
    instances = _instances(tree, counted_nodes, node_key, keys, time_ns, rated, tf32)
    if has_gpu and window is None:
        window = MfuWindow("trace", _gpu_window(table, gpu),
                           len(distinct(table.device[gpu.row])))
    mfu_flops, mfu_time, mfu = 0, None, None
    if window is not None:
        mfu_flops = _counter_flops(tree, instances, keys, node_key, window.spans)
        mfu_time = window.wall_ns
        if usable and mfu_time > 0 and window.devices > 0:
            mfu = mfu_flops / (mfu_time * 1e-9) / (window.devices * mfu_peak)
    model = PerfModel(
        time_source=DEVICE if has_gpu else HOST, device=name, peak=peak, shapes_recorded=True,
        ops=sum(g.count for g in groups), flops=flops, bytes=nbytes, time_ns=total,
        flops_per_s=None if device_time_missing else _rate(flops, total),
        bytes_per_s=None if device_time_missing else _rate(nbytes, total), gpu_busy_ns=busy,
        model_flops_utilization=mfu, mfu_dtype=mfu_dtype, mfu_peak_flops_per_s=mfu_peak,
        modelled_share=covered, mfu_partial=partial and mfu_peak is not None,
        families=_families(groups, rated, device_time_missing), groups=groups,
        unmodelled=unmodelled, unmodelled_ns=sum(u.total_ns for u in unmodelled),
        notes=tuple(notes),
        flops_per_s_peak_share=flops / (total * 1e-9) / mfu_peak
        if usable and total > 0 else None,
        mfu_flops=mfu_flops, mfu_time_ns=mfu_time,
        mfu_window=window.source if window is not None else None,
        mfu_devices=window.devices if window is not None else 0,
        device_time_missing=device_time_missing)
    return model, instances


def _gpu_window(table: EventTable, gpu: GpuActivity) -> int:
    """First start to last end of the trace's GPU activity."""
    start = table.ts_ns[gpu.row]
    return int((start + table.dur_ns[gpu.row]).max() - start.min()) if len(gpu) else 0


def _counter_flops(tree: OpTree, instances: Instances, keys: _Keys, node_key: np.ndarray,
                   spans: tuple[tuple[int, int], ...] | None) -> int:
    """The matrix FLOPs (GEMM, convolution, attention) of the counted instances whose op
    starts in one of ``spans`` (all of them for None), as torch.utils.flop_counter counts
    them: causal attention in full, twice the work its kernels do."""
    if not len(instances):
        return 0
    per_key = np.array([c.flops * (2 if c.causal else 1)
                        if c is not None and c.family in MATRIX_FAMILIES else 0
                        for c in keys.cost], dtype=np.int64)
    flops = per_key[node_key[instances.node]]
    if spans is not None:
        start = tree.start_ns[instances.node]
        lo = np.array([s for s, _ in spans], dtype=np.int64)
        hi = np.array([e for _, e in spans], dtype=np.int64)
        order = np.argsort(lo, kind="stable")
        idx = np.searchsorted(lo[order], start, side="right") - 1
        inside = (idx >= 0) & (start < hi[order][np.maximum(idx, 0)])
        flops = flops[inside]
    return int(flops.sum())


def _unrated(g: ShapeGroup) -> ShapeGroup:
    """A group whose time is not its work's (GPU activity unrecorded): no rate."""
    return msgspec.structs.replace(g, flops_per_s=None, bytes_per_s=None,
                                   mean_instance_flops_per_s=None,
                                   mean_instance_bytes_per_s=None)


def _fit_convolutions_from_backward(table: EventTable, tree: OpTree, key_ids: dict,
                                    key_rows: list[int], key_cost: list[Cost | None],
                                    misfit: list[int], node_key: np.ndarray) -> list[int]:
    """Count the forward convolutions whose stride or padding went unrecorded (traces
    before PyTorch 2.0) with the output shape their backward ops recorded; return the
    misfits left."""
    names = [table.names[name_id] for name_id, _raw in key_ids]
    unfit = [k for k, cost in enumerate(key_cost)
             if cost is None and names[k] in PLAIN_FORWARD_CONVOLUTIONS]
    if not unfit:
        return misfit
    outputs = convolution_outputs(
        (names[k], table.op_inputs(key_rows[k])) for k in range(len(key_cost))
        if names[k] in BACKWARD_CONVOLUTION_TENSORS)
    for k in unfit:
        key_cost[k] = convolution_with_output(
            names[k], table.op_inputs(key_rows[k]), outputs)
    left = []
    for node in misfit:
        row = int(tree.row[node])
        kid = key_ids[(int(table.name[row]), table.inputs[row])]
        if key_cost[kid] is None:
            left.append(node)
        else:
            node_key[node] = kid
    return left


class _Keys:
    """Per distinct (op, recorded inputs): its cost as arrays indexed by key id."""

    def __init__(self, costs: list[Cost | None], rows: list[int], names: list[int]) -> None:
        self.cost = costs
        self.row = rows
        self.name = names
        self.family = np.array([FAMILIES.index(c.family) if c else -1 for c in costs],
                               dtype=np.int64)
        self.flops = np.array([c.flops if c else 0 for c in costs], dtype=np.int64)
        self.bytes = np.array([c.bytes if c else 0 for c in costs], dtype=np.int64)
        self.dtype = [c.dtype if c else "" for c in costs]


def _instances(tree: OpTree, nodes: np.ndarray, node_key: np.ndarray, keys: _Keys,
               time_ns: np.ndarray, peak: DevicePeak | None, tf32: np.ndarray) -> Instances:
    order = nodes[np.argsort(tree.start_ns[nodes], kind="stable")]
    kid = node_key[order]
    t = time_ns[order]
    flops = keys.flops[kid]
    share = np.full(len(order), np.nan)
    if peak is not None and len(order):
        pk = np.zeros(len(order))
        for use_tf32 in (False, True):
            sel = tf32[order] == use_tf32
            per_key = np.array([compute_peak(peak, c.dtype, c.family in MATRIX_FAMILIES,
                                             use_tf32) or 0.0 if c else 0.0
                                for c in keys.cost])
            pk[sel] = per_key[kid[sel]]
        ok = (pk > 0) & (t > 0)
        share[ok] = flops[ok] / (t[ok] * 1e-9) / pk[ok]
    dtypes = [keys.dtype[k] for k in kid.tolist()]
    return Instances(order, keys.family[kid].astype(np.int8), t, flops, dtypes, share)


def _rate(amount: int, ns: int) -> float | None:
    return amount / (ns * 1e-9) if ns > 0 else None


def _counted(node_key: np.ndarray, key_family: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """The costed nodes with no costed node of their own family below them.

    ``aten::linear`` > ``aten::addmm``: the addmm counts (the op nearest the kernels);
    ``aten::convolution`` > ``aten::add_`` (the bias): both count, each for its own
    kernels, since neither models the other's work.
    """
    counted = np.zeros(len(node_key), dtype=bool)
    nodes = np.flatnonzero(node_key >= 0)
    family = key_family[node_key[nodes]]
    for f in distinct(family).tolist():
        marked = np.zeros(len(node_key), dtype=bool)
        marked[nodes[family == f]] = True
        counted |= marked & ~_has_marked_descendant(marked, parent)
    return counted


def _defer_backend_ops(table: EventTable, tree: OpTree, node_key: np.ndarray,
                       key_family: np.ndarray) -> None:
    """Un-cost the backend ops (``cudnn_convolution``, ``cudnn_convolution_backward_input``
    ...) that sit below a costed op of their family (``convolution``, or an older
    release's ``cudnn_convolution_backward``): that op counts, under the name the user
    knows, over the same kernels, and one half of a backward cannot stand for the whole.
    In place."""
    backend = np.fromiter((n in BACKEND_MODELS for n in table.names), dtype=bool,
                          count=len(table.names))[table.name[tree.row]]
    costed = node_key >= 0
    nodes = np.flatnonzero(costed & backend)
    if not len(nodes):
        return
    family = np.where(costed, key_family[np.maximum(node_key, 0)], -1)
    for f in distinct(family[nodes]).tolist():
        above = nearest_self_or_ancestor(costed & (family == f), tree.parent)
        mine = nodes[family[nodes] == f]
        parent = tree.parent[mine]
        under = (parent >= 0) & (above[np.maximum(parent, 0)] >= 0)
        node_key[mine[under]] = -1


def _cpu_time(tree: OpTree, counted: np.ndarray, owner_of_node: np.ndarray) -> np.ndarray:
    """A counted op's duration less that of the counted ops nested in it (a CPU trace)."""
    dur = (tree.end_ns - tree.start_ns).astype(np.int64)
    time_ns = np.where(counted, dur, 0)
    inner = np.flatnonzero(counted & (tree.parent >= 0))
    outer = owner_of_node[tree.parent[inner]]
    keep = outer >= 0
    if keep.any():
        time_ns = time_ns - np.rint(np.bincount(outer[keep], weights=dur[inner[keep]],
                                                minlength=len(dur))).astype(np.int64)
    return np.maximum(time_ns, 0)


def _has_marked_descendant(marked: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """For every node, whether some node strictly below it is marked (climbs once per level,
    stopping where an ancestor is already known to have one)."""
    has = np.zeros(len(marked), dtype=bool)
    cur = parent[np.flatnonzero(marked)]
    while len(cur):
        cur = cur[cur >= 0]
        cur = distinct(cur[~has[cur]])
        has[cur] = True
        cur = parent[cur]
    return has


def _gpu_time(table: EventTable, tree: OpTree, gpu: GpuActivity, owner_of_node: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, dict[int, tuple[int, int]]]:
    """GPU time per counted node, whether its kernels run fp32 math as TF32 on tensor cores,
    and the compute activity under no counted op by launching op node: node -> (activities,
    ns). Communication kernels are left out of the last, as of the time the model could
    cover (:func:`_compute_ns`): no model counts a collective's FLOPs."""
    n = len(tree)
    dur = table.dur_ns[gpu.row]
    linked = gpu.node >= 0
    owner = np.full(len(gpu), -1, dtype=np.int64)
    if n:
        owner[linked] = owner_of_node[gpu.node[linked]]
    mine = owner >= 0
    time_ns = np.rint(np.bincount(owner[mine], weights=dur[mine], minlength=n)).astype(np.int64)
    names = table.name[gpu.row[mine]]
    uniq, inverse = dense_ids(names)
    lut = np.array([tf32_kernel(table.names[int(u)]) for u in uniq], dtype=bool)
    tf32 = np.zeros(n, dtype=bool)
    if len(uniq):
        tf32[owner[mine][lut[inverse.reshape(-1)]]] = True
    comm = gpu.klass == classify.CLASS_INDEX[classify.COMMUNICATION]
    rest = linked & ~mine & (gpu.op_node >= 0) & ~comm
    launcher = gpu.op_node[rest]
    unmod: dict[int, tuple[int, int]] = {}
    if len(launcher):
        nodes, inv = dense_ids(launcher)
        counts = np.bincount(inv)
        totals = np.rint(np.bincount(inv, weights=dur[rest])).astype(np.int64)
        unmod = {nd: (c, s) for nd, c, s in zip(nodes.tolist(), counts.tolist(),
                                                 totals.tolist(), strict=True)}
    return time_ns, tf32, unmod


def _cpu_unmodelled(table: EventTable, tree: OpTree, owner_of_node: np.ndarray
                    ) -> dict[int, tuple[int, int]]:
    """On a CPU trace: top-level ops (no op above them) with no counted op inside or above.

    Their own duration is the time no model explains.
    """
    from profiler_kit.trace.table import Cat

    is_op = table.cat[tree.row] == Cat.CPU_OP
    top = is_op & (np.where(tree.parent >= 0, tree.op_node[np.maximum(tree.parent, 0)], -1) < 0)
    counted_below = _has_marked_descendant(owner_of_node == np.arange(len(tree)), tree.parent)
    sel = np.flatnonzero(top & (owner_of_node < 0) & ~counted_below)
    dur = tree.end_ns - tree.start_ns
    return {int(s): (0, int(dur[s])) for s in sel.tolist()}


def _above_peak_notes(groups: tuple[ShapeGroup, ...]) -> list[Note]:
    """Why a share of a peak can read above 1, where one does (marked * when printed)."""
    notes = []
    over = [g.memory_peak_share for g in groups if (g.memory_peak_share or 0) > 1]
    if over:
        notes.append(note("perf_above_memory_peak", groups=len(over), max_share=max(over)))
    over = [g.compute_peak_share for g in groups if (g.compute_peak_share or 0) > 1]
    if over:
        notes.append(note("perf_above_compute_peak", groups=len(over), max_share=max(over)))
    return notes


def _compute_ns(table: EventTable, gpu: GpuActivity) -> int:
    """Summed time of the GPU activities that are not communication: what the model could
    cover (collectives move bytes, no model counts their FLOPs)."""
    comm = gpu.klass == classify.CLASS_INDEX[classify.COMMUNICATION]
    return int(table.dur_ns[gpu.row[~comm]].sum())


def _gpu_busy(table: EventTable, gpu: GpuActivity) -> int:
    """Union of GPU activity per device, summed over devices."""
    busy = 0
    dev = table.device[gpu.row]
    for d in distinct(dev).tolist():
        rows = gpu.row[dev == d]
        start = table.ts_ns[rows]
        busy += intervals.length(start, start + table.dur_ns[rows])
    return busy


def _backward_nodes(table: EventTable, tree: OpTree) -> np.ndarray:
    """Whether each node runs under an autograd backward node (``AddmmBackward0``, ...)."""
    ids = table.name[tree.row]
    uniq, inverse = dense_ids(ids)
    lut = np.array([bool(_BACKWARD.search(table.names[int(u)])) for u in uniq], dtype=bool)
    flag = lut[inverse.reshape(-1)] if len(uniq) else np.zeros(0, dtype=bool)
    return nearest_self_or_ancestor(flag, tree.parent) >= 0


def _sm_by_node(table: EventTable, gpu: GpuActivity, owner_of_node: np.ndarray
                ) -> np.ndarray | None:
    """Per counted node, over the kernels it owns (as :func:`_gpu_time` gives it their
    time): the time of those with blocks per SM, that time × min(blocks per SM, 1), the
    time of those with an occupancy estimate, and that time × the estimate (%); None
    where the trace records neither field."""
    bps, occ = launch_figures(table, gpu)
    if not (bps > 0).any() and not (occ >= 0).any():
        return None
    n = len(owner_of_node)
    owner = np.full(len(gpu), -1, dtype=np.int64)
    linked = gpu.node >= 0
    if n:
        owner[linked] = owner_of_node[gpu.node[linked]]
    dur = table.dur_ns[gpu.row].astype(np.float64)
    hb, ho = (owner >= 0) & (bps > 0), (owner >= 0) & (occ >= 0)
    return np.stack([
        np.bincount(owner[hb], weights=dur[hb], minlength=n),
        np.bincount(owner[hb], weights=dur[hb] * np.minimum(bps[hb], 1.0), minlength=n),
        np.bincount(owner[ho], weights=dur[ho], minlength=n),
        np.bincount(owner[ho], weights=dur[ho] * occ[ho], minlength=n)])


def _groups(table: EventTable, tree: OpTree, nodes: np.ndarray, node_key: np.ndarray,
            keys: _Keys, time_ns: np.ndarray, tf32: np.ndarray,
            peak: DevicePeak | None, sm: np.ndarray | None = None
            ) -> tuple[ShapeGroup, ...]:
    """Instances grouped by key (op, shapes, dtypes, arguments) and direction, vectorized."""
    if not len(nodes):
        return ()
    backward = _backward_nodes(table, tree)[nodes]
    gkey = node_key[nodes] * 2 + backward
    uniq, inverse = dense_ids(gkey)
    inverse = inverse.reshape(-1)
    count = np.bincount(inverse, minlength=len(uniq))
    total = np.rint(np.bincount(inverse, weights=time_ns[nodes], minlength=len(uniq)))
    per_s = 1e9 / time_ns[nodes]  # counted instances all have time
    kid_of = node_key[nodes]
    mean_fps = np.bincount(inverse, weights=keys.flops[kid_of] * per_s, minlength=len(uniq))
    mean_bps = np.bincount(inverse, weights=keys.bytes[kid_of] * per_s, minlength=len(uniq))
    uses_tf32 = np.bincount(inverse, weights=tf32[nodes], minlength=len(uniq)) > 0
    if sm is not None:
        sm = np.stack([np.bincount(inverse, weights=row[nodes], minlength=len(uniq))
                       for row in sm])
    out = []
    for i, g in enumerate(uniq.tolist()):
        kid, bwd = divmod(g, 2)
        recorded = table.op_inputs(keys.row[kid])
        out.append(_group(table.names[keys.name[kid]], keys.cost[kid], recorded.dims,
                          recorded.types, recorded.concrete, bool(bwd), int(count[i]),
                          int(total[i]), bool(uses_tf32[i]), peak,
                          (float(mean_fps[i] / count[i]), float(mean_bps[i] / count[i]))))
        if sm is not None:
            eff_w, eff, occ_w, occ = sm[:, i].tolist()
            out[-1] = msgspec.structs.replace(
                out[-1], sm_efficiency=eff / eff_w if eff_w > 0 else None,
                achieved_occupancy=occ / occ_w / 100.0 if occ_w > 0 else None)
    out.sort(key=lambda g: (-g.total_ns, g.op))
    return tuple(out)


def _group(op: str, cost: Cost, dims: list, types: list, args: list, backward: bool,
           count: int, total: int, uses_tf32: bool, peak: DevicePeak | None,
           mean_rates: tuple[float, float]) -> ShapeGroup:
    fps = _rate(cost.flops * count, total)
    bps = _rate(cost.bytes * count, total)
    intensity = cost.flops / cost.bytes if cost.bytes else None
    matrix = cost.family in MATRIX_FAMILIES
    pk = compute_peak(peak, cost.dtype, matrix, uses_tf32) if peak is not None else None
    bound = None
    if pk and peak is not None and intensity is not None:
        bound = "compute" if intensity >= pk / peak.memory_bytes_per_s else "memory"
    elif peak is not None and cost.flops == 0:
        bound = "memory"
    return ShapeGroup(
        op=op, family=cost.family, dtype=cost.dtype, input_dims=dims, input_types=types,
        arguments=args, backward=backward, count=count, total_ns=total,
        mean_ns=total / count if count else 0.0, flops=cost.flops,
        bytes=cost.bytes, flops_per_s=fps, bytes_per_s=bps,
        mean_instance_flops_per_s=mean_rates[0] if fps is not None else None,
        mean_instance_bytes_per_s=mean_rates[1] if bps is not None else None,
        intensity_flops_per_byte=intensity,
        bound=bound, peak_flops_per_s=pk,
        compute_peak_share=fps / pk if fps is not None and pk and cost.flops else None,
        memory_peak_share=bps / peak.memory_bytes_per_s if bps is not None and peak else None,
        tf32=uses_tf32 and cost.dtype == "fp32" and matrix, causal=cost.causal)


def _families(groups: tuple[ShapeGroup, ...], peak: DevicePeak | None,
              unrated: bool = False) -> tuple[FamilyRate, ...]:
    out = []
    for family in FAMILIES:
        mine = [g for g in groups if g.family == family]
        if not mine:
            continue
        flops = sum(g.flops * g.count for g in mine)
        nbytes = sum(g.bytes * g.count for g in mine)
        total = sum(g.total_ns for g in mine)
        attainable = sum(g.total_ns * 1e-9 * g.peak_flops_per_s for g in mine
                         if g.peak_flops_per_s)
        out.append(FamilyRate(
            family=family, count=sum(g.count for g in mine), total_ns=total, flops=flops,
            bytes=nbytes, flops_per_s=None if unrated else _rate(flops, total),
            bytes_per_s=None if unrated else _rate(nbytes, total),
            compute_peak_share=flops / attainable if attainable and flops else None,
            memory_peak_share=(nbytes / (total * 1e-9) / peak.memory_bytes_per_s
                               if peak is not None and total else None)))
    out.sort(key=lambda f: -f.total_ns)
    return tuple(out)


def _unmodelled(table: EventTable, tree: OpTree, unmod: dict[int, tuple[int, int]],
                no_shapes: list[int], misfit: list[int]) -> tuple[Unmodelled, ...]:
    missing = set(no_shapes)
    odd = set(misfit)
    by: dict[tuple[str, str], list[int]] = {}
    for node, (activities, total) in unmod.items():
        name = table.names[int(table.name[tree.row[node]])]
        reason = ("shapes not recorded" if node in missing else
                  "shapes do not fit the model" if node in odd else "no model")
        entry = by.setdefault((name, reason), [0, 0, 0])
        entry[0] += 1
        entry[1] += activities
        entry[2] += total
    out = [Unmodelled(op=n, count=c, activities=k, total_ns=t, reason=r)
           for (n, r), (c, k, t) in by.items()]
    out.sort(key=lambda u: (-u.total_ns, u.op))
    return tuple(out)
