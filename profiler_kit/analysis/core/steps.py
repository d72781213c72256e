"""Step times from the profiler's ``ProfilerStep#N`` spans, CPU side and device side.

A step's CPU-side time is its ``ProfilerStep#N`` span. Its device-side time is the
TensorBoard plugin's: it starts where the previous step ended on the device (or at its
CPU start, if later) and ends when the last GPU activity launched in it ends (or at its
CPU end, if later). An activity is launched in a step when the runtime call that
launched it (linked by correlation id) lies inside the step's CPU span. On GPU traces
the device-side time is the headline. Without steps, the figures describe the whole
trace window.

Each step's time is split like the plugin's Overview: kernel, memcpy, memset,
communication, runtime, data loader, CPU exec and other, each the time covered by that
kind of activity and by none before it in that order, so the parts sum to the step.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify, intervals
from profiler_kit.analysis.core.arrays import distinct, percentile
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.trace.table import Cat, EventTable

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_CPU_SIDE = (Cat.USER_ANNOTATION, Cat.CPU_OP, Cat.OTHER)
# CPU exec, as the plugin counts it: CPU ops (time in record_function annotations and
# Python functions outside any op is left to "other", as there)
_CPU_EXEC = (Cat.CPU_OP,)
_CPU_NAMED = (Cat.CPU_OP, Cat.USER_ANNOTATION)  # where data-loader and collective spans are
_DATALOADER = re.compile(r"^enumerate\(DataLoader\)#.*\.__next__$|^enumerate\(DataPipe\)#")
# CPU-side communication ops, as the plugin names them.
_CPU_COMM = frozenset(f"{lib}:{op}" for lib in ("nccl", "gloo")
                      for op in ("broadcast", "reduce", "all_reduce", "all_gather",
                                 "reduce_scatter"))
# Breakdown parts in the plugin's order of precedence.
STEP_PARTS = (("kernel", "kernel"), ("memcpy", "memcpy"), ("memset", "memset"),
              ("communication", "communication"), ("runtime", "runtime"),
              ("dataloader", "data loader"), ("cpu_exec", "CPU exec"), ("other", "other"))


class StepBreakdown(msgspec.Struct, frozen=True):
    """One step's device-side time split as the TensorBoard plugin's Overview (sums to it)."""

    kernel_ns: int  # computation kernels
    memcpy_ns: int
    memset_ns: int
    communication_ns: int  # communication kernels and CPU-side collectives
    runtime_ns: int  # CUDA/HIP runtime calls
    dataloader_ns: int
    cpu_exec_ns: int  # CPU ops
    other_ns: int  # none of the above


class Step(msgspec.Struct, frozen=True):
    number: int
    start_ns: int  # CPU side: the ProfilerStep#N span
    dur_ns: int
    device_start_ns: int = 0  # device side (see the module docstring)
    device_dur_ns: int = 0
    gpu_activities: int = 0  # GPU activities launched in the step
    gpu_start_ns: int | None = None  # first start / last end of those activities
    gpu_end_ns: int | None = None
    breakdown: StepBreakdown | None = None  # of the device-side time


class StepStats(msgspec.Struct, frozen=True):
    """Median and spread of a set of step durations."""

    median_ns: int
    min_ns: int
    max_ns: int
    mean_ns: float
    iqr_ns: float  # p75 - p25; 0 for fewer than two steps
    spread: float | None  # iqr / median


class Steps(msgspec.Struct, frozen=True):
    """``source`` is ``"ProfilerStep"`` when steps were found, else ``"window"``:
    then ``steps`` is empty and the statistics describe the whole trace window.

    ``median_ns`` .. ``spread`` are CPU-side; ``device`` holds the device-side ones
    (None on CPU-only traces and without steps); ``headline`` says which a reader
    should lead with ("device" on GPU traces with steps, else "cpu").
    """

    source: str
    steps: tuple[Step, ...]
    count: int
    median_ns: int
    min_ns: int
    max_ns: int
    mean_ns: float
    iqr_ns: float  # p75 - p25; 0 for fewer than two steps
    spread: float | None  # iqr / median: how noisy the steps are
    start_ns: int
    end_ns: int
    device: StepStats | None = None
    headline: str = "cpu"
    breakdown: StepBreakdown | None = None  # all steps together (or the whole window)
    # GPU-side steps window: first start to last end of the GPU activities launched in
    # the steps (widened to Kineto's GPU-side ProfilerStep# spans where present)
    gpu_window_start_ns: int | None = None
    gpu_window_end_ns: int | None = None

    @property
    def headline_median_ns(self) -> int:
        return self.device.median_ns if self.headline == "device" and self.device \
            else self.median_ns

    @property
    def headline_stats(self) -> StepStats:
        if self.headline == "device" and self.device is not None:
            return self.device
        return StepStats(self.median_ns, self.min_ns, self.max_ns, self.mean_ns, self.iqr_ns,
                         self.spread)


def _stats(durs: np.ndarray) -> StepStats:
    p25, p75 = percentile(durs, 25), percentile(durs, 75)
    median = int(np.median(durs))
    iqr = float(p75 - p25)
    return StepStats(median, int(durs.min()), int(durs.max()), float(durs.mean()), iqr,
                     iqr / median if median > 0 else None)


def cpu_steps(table: EventTable) -> list[tuple[int, int, int]]:
    """(number, start, duration) of every CPU-side ``ProfilerStep#N`` span, by number."""
    step_names = {i: int(m.group(1)) for i, n in enumerate(table.names)
                  if n.startswith("ProfilerStep#") and (m := _STEP.match(n))}
    found: dict[int, tuple[int, int, int]] = {}
    if step_names:
        is_step = np.zeros(len(table.names), dtype=bool)
        is_step[list(step_names)] = True
        rows = np.flatnonzero(is_step[table.name])  # few: the category is checked on them
        rows = rows[np.isin(table.cat[rows], [int(c) for c in _CPU_SIDE])]
        for r in rows.tolist():
            number = step_names[int(table.name[r])]
            dur = int(table.dur_ns[r])
            if number not in found or dur > found[number][2]:
                found[number] = (number, int(table.ts_ns[r]), dur)
    return [found[k] for k in sorted(found)]


def launch_times(table: EventTable, gpu: GpuActivity) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of the CPU call that launched each activity (the runtime call; the
    op for activities linked by External id only; -1 when unknown)."""
    start = np.full(len(gpu), -1, dtype=np.int64)
    end = np.full(len(gpu), -1, dtype=np.int64)
    for rows in (np.where(gpu.launch_row >= 0, gpu.launch_row, gpu.op_row),):
        ok = rows >= 0
        start[ok] = table.ts_ns[rows[ok]]
        end[ok] = start[ok] + table.dur_ns[rows[ok]]
    return start, end


def step_of_activities(table: EventTable, gpu: GpuActivity,
                       spans: list[tuple[int, int, int]]) -> np.ndarray:
    """Index into ``spans`` of the step each activity was launched in (-1: none): the
    launching call lies inside the step's CPU span."""
    out = np.full(len(gpu), -1, dtype=np.int64)
    if not spans or not len(gpu):
        return out
    l_start, l_end = launch_times(table, gpu)
    starts = np.array([s for _, s, _ in spans], dtype=np.int64)
    ends = starts + np.array([d for _, _, d in spans], dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    idx = np.searchsorted(starts[order], l_start, side="right") - 1
    ok = (l_start >= 0) & (idx >= 0)
    cand = order[np.maximum(idx, 0)]
    ok &= l_end <= ends[cand]
    out[ok] = cand[ok]
    return out


def analyze_steps(table: EventTable, gpu: GpuActivity | None = None) -> Steps:
    """Per-step times, CPU and device side, with their breakdown."""
    spans = cpu_steps(table)
    if len(table):
        t0 = int(table.ts_ns.min())
        t1 = int((table.ts_ns + table.dur_ns).max())
    else:
        t0 = t1 = 0
    if not spans:
        durs = np.array([t1 - t0], dtype=np.int64)
        s = _stats(durs)
        layers = _layers(table, gpu)
        return Steps(
            source="window", steps=(), count=0, median_ns=s.median_ns, min_ns=s.min_ns,
            max_ns=s.max_ns, mean_ns=s.mean_ns, iqr_ns=s.iqr_ns, spread=s.spread,
            start_ns=t0, end_ns=t1, breakdown=_breakdown(layers, t0, t1),
        )
    has_gpu = gpu is not None and len(gpu) > 0
    which = step_of_activities(table, gpu, spans) if has_gpu else np.zeros(0, np.int64)
    g_start = g_end = np.zeros(0, dtype=np.int64)
    if has_gpu:
        g_start = table.ts_ns[gpu.row]
        g_end = g_start + table.dur_ns[gpu.row]
    n = len(spans)
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    counts = np.zeros(n, dtype=np.int64)
    linked = which >= 0
    if linked.any():
        np.minimum.at(first, which[linked], g_start[linked])
        np.maximum.at(last, which[linked], g_end[linked])
        counts = np.bincount(which[linked], minlength=n)
    device_side = bool(linked.any())
    # every step's device-side window lies within these bounds: build the layers there only
    bound_lo = min(st for _, st, _ in spans)
    bound_hi = max(st + d for _, st, d in spans)
    if linked.any():
        bound_hi = max(bound_hi, int(last[counts > 0].max()))
    layers = _layers(table, gpu, (bound_lo, bound_hi))
    # the plugin starts the first step after the activities launched before it that end
    # before that step's first one (kernels still queued from earlier)
    prev_end = spans[0][1]
    if device_side and counts[0]:
        before = g_end[~linked]
        before = before[before < first[0]]
        if len(before):
            prev_end = max(prev_end, int(before.max()))
    steps = []
    for i, (number, start, dur) in enumerate(spans):
        gpu_start = int(first[i]) if counts[i] else None
        gpu_end = int(last[i]) if counts[i] else None
        if device_side:
            d_start = max(prev_end, start)
            d_end = max(start + dur, gpu_end if gpu_end is not None else d_start)
            d_end = max(d_end, d_start)
            prev_end = d_end
        else:
            d_start, d_end = start, start + dur
        steps.append(Step(number, start, dur, d_start, d_end - d_start, int(counts[i]),
                          gpu_start, gpu_end, _breakdown(layers, d_start, d_end)))
    cpu = _stats(np.array([st.dur_ns for st in steps], dtype=np.int64))
    device = _stats(np.array([st.device_dur_ns for st in steps], dtype=np.int64)) \
        if device_side else None
    w_start = w_end = None
    if device_side:
        w_start, w_end = int(first[counts > 0].min()), int(last[counts > 0].max())
        ann = _gpu_step_spans(table)
        if ann is not None:
            w_start, w_end = min(w_start, ann[0]), max(w_end, ann[1])
    lo = min(st.device_start_ns for st in steps)
    hi = max(st.device_start_ns + st.device_dur_ns for st in steps)
    return Steps(
        source="ProfilerStep",
        steps=tuple(steps),
        count=len(steps),
        median_ns=cpu.median_ns,
        min_ns=cpu.min_ns,
        max_ns=cpu.max_ns,
        mean_ns=cpu.mean_ns,
        iqr_ns=cpu.iqr_ns,
        spread=cpu.spread,
        start_ns=min(s for _, s, _ in spans),
        end_ns=max(s + d for _, s, d in spans),
        device=device,
        headline="device" if device is not None else "cpu",
        breakdown=_sum_breakdowns([st.breakdown for st in steps if st.breakdown])
        if lo < hi else None,
        gpu_window_start_ns=w_start,
        gpu_window_end_ns=w_end,
    )


def _gpu_step_spans(table: EventTable) -> tuple[int, int] | None:
    """First start and last end of Kineto's GPU-side ``ProfilerStep#`` spans, if any."""
    rows = table.rows(Cat.GPU_USER_ANNOTATION)
    if not len(rows):
        return None
    ids = np.array([i for i, n in enumerate(table.names)
                    if n.startswith("ProfilerStep#") and _STEP.match(n)], dtype=np.int64)
    rows = rows[np.isin(table.name[rows], ids)]
    if not len(rows):
        return None
    return int(table.ts_ns[rows].min()), int((table.ts_ns[rows] + table.dur_ns[rows]).max())


def _layers(table: EventTable, gpu: GpuActivity | None,
            bounds: tuple[int, int] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Unions of each breakdown part's activity, in the plugin's order of precedence
    (only of the activities that reach into ``bounds``, when given)."""
    comm_k = classify.CLASS_INDEX[classify.COMMUNICATION]

    def u(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = table.ts_ns[rows]
        e = s + table.dur_ns[rows]
        if bounds is not None:
            keep = (s < bounds[1]) & (e > bounds[0])
            s, e = s[keep], e[keep]
        return intervals.union(s, e)

    empty = np.zeros(0, dtype=np.int64)
    g_rows = gpu.row if gpu is not None else empty
    g_cat = table.cat[g_rows]
    g_comm = gpu.klass == comm_k if gpu is not None else np.zeros(0, dtype=bool)
    kernel = g_rows[(g_cat == Cat.KERNEL) & ~g_comm]
    comm_kernel = g_rows[(g_cat == Cat.KERNEL) & g_comm]
    memcpy = g_rows[g_cat == Cat.MEMCPY]
    memset = g_rows[g_cat == Cat.MEMSET]
    runtime = table.rows(Cat.RUNTIME)
    cpu = np.flatnonzero(np.isin(table.cat, np.array([int(c) for c in _CPU_NAMED],
                                                     dtype=table.cat.dtype)))
    names = table.name[cpu]
    uniq = distinct(names)
    loader_ids = [int(i) for i in uniq.tolist() if _DATALOADER.search(table.names[int(i)])]
    comm_ids = [int(i) for i in uniq.tolist() if table.names[int(i)] in _CPU_COMM]
    step_ids = [int(i) for i in uniq.tolist() if _STEP.match(table.names[int(i)])]
    loader = cpu[np.isin(names, loader_ids)]
    cpu_comm = cpu[np.isin(names, comm_ids)]
    cpu_exec = cpu[~np.isin(names, loader_ids + comm_ids + step_ids)
                   & np.isin(table.cat[cpu], np.array([int(c) for c in _CPU_EXEC],
                                                      dtype=table.cat.dtype))]
    return [u(kernel), u(memcpy), u(memset), u(np.concatenate([comm_kernel, cpu_comm])),
            u(runtime), u(loader), u(cpu_exec)]


def _breakdown(layers: list[tuple[np.ndarray, np.ndarray]], lo: int, hi: int) -> StepBreakdown:
    parts, other = intervals.exclusive_lengths(layers, lo, hi)
    return StepBreakdown(*parts, other)


def _sum_breakdowns(parts: list[StepBreakdown]) -> StepBreakdown:
    return StepBreakdown(*(sum(getattr(p, f) for p in parts)
                           for f in StepBreakdown.__struct_fields__))
