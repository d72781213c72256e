"""Below the busy line: how much of each GPU its kernels filled, as the TensorBoard plugin
estimates it, and what limited them.

Per device, as the plugin's parser (``gpu_metrics_parser``) computes them: over the
plugin's window (:func:`plugin_window`) and of every kernel of the device that runs in it,
whether or not its launch was recorded inside a step (the plugin does not ask):

* **SM efficiency** (the plugin's "Est. SM Efficiency"): each kernel's ``blocks per SM``
  (Kineto's figure: its grid blocks over the GPU's SMs); where kernels overlap their
  values add up; the sum is capped at 1 and integrated over time, then divided by the
  window. A kernel of 2 blocks on 80 SMs counts 2/80 of its time. Kernels with no
  positive ``blocks per SM`` (absent, or written as 0 or less) are left out, as the
  plugin leaves them; kernels that overlap the window's ends count their part inside it.
* **Achieved occupancy** (the plugin's "Est. Achieved Occupancy"): Kineto's per-kernel
  ``est. achieved occupancy %`` (its theoretical occupancy, capped by the warps the grid
  gives each SM) averaged with each kernel's time in the window as its weight. Kineto
  writes 0 for kernels that opt into more than 48 KiB of shared memory per block; the
  plugin averages those in, and so does this.

The plugin has one figure per device, over all its steps; per step, the same figures
over each step's device-side window are this module's (every kernel of the device inside
it, a kernel across a step boundary split between the two). Per hotspot class (the rows
of "GPU time by class"): SM efficiency (min(blocks per SM, 1)) and achieved occupancy of
its kernels (those the class table counts: launched in the steps), each weighted by the
kernel's time inside the device's window. Per kernel name: SM
efficiency and occupancy weighted by kernel time, the idle SM time (time × (1 − SM
efficiency)): the time it left most SMs idle while the GPU read busy; and its theoretical
occupancy and limiter by the CUDA occupancy rules (:mod:`.occupancy_rules`). Traces
without the fields (CPU-only, older Kineto, AMD) get None and one note.
"""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.steps import Step, Steps, step_of_activities
from profiler_kit.analysis.perf.occupancy_rules import (
    GRID,
    DeviceLimits,
    device_limits,
    fills_gpu,
    theoretical,
)
from profiler_kit.trace.table import Cat, EventTable

TOP_KERNELS = 20
TOP_IDLE = 5
BUCKETS = 100  # points of the figures over time, per device
NO_FIELDS_NOTE = note("sm_fields_not_recorded")


class DeviceSm(msgspec.Struct, frozen=True):
    device: int
    window_start_ns: int
    window_ns: int
    sm_efficiency: float | None  # None: no kernel with 'blocks per SM' in the window
    achieved_occupancy: float | None  # fraction (0-1); None: none recorded
    sm_busy_ns: float  # the integral of min(sum of blocks per SM, 1) over the window
    kernels: int  # kernels in the window with 'blocks per SM'


class StepSm(msgspec.Struct, frozen=True):
    step: int  # ProfilerStep number
    device: int
    sm_efficiency: float | None
    achieved_occupancy: float | None


class OverTime(msgspec.Struct, frozen=True):
    """One device's figures in equal buckets of its window (None: no kernel there)."""

    device: int
    start_ns: tuple[int, ...]
    bucket_ns: int
    sm_efficiency: tuple[float, ...]
    achieved_occupancy: tuple[float | None, ...]


class KernelSm(msgspec.Struct, frozen=True):
    """One kernel name, over the whole trace (the rows of the kernels table)."""

    name: str
    count: int
    total_ns: int
    sm_efficiency: float | None  # time-weighted min(blocks per SM, 1)
    achieved_occupancy: float | None  # time-weighted Kineto estimate (fraction)
    idle_sm_ns: float  # time × (1 − SM efficiency), summed over its launches
    theoretical_occupancy: float | None  # time-weighted, by the CUDA occupancy rules
    limiter: str | None  # the limiter of most of its time (occupancy_rules.LIMITERS)
    grid_blocks: int | None  # of its longest launch
    block_threads: int | None
    registers: int | None  # per thread
    shared_memory_bytes: int | None  # per block
    op: str | None = None  # the op that launched most of its time
    source: str | None = None  # the user's line that launched it (traces with stacks)


class ClassSm(msgspec.Struct, frozen=True):
    """One hotspot class's kernels over the devices' windows, weighted by their time there."""

    klass: str = msgspec.field(name="class")
    kernels: int  # kernels of the class in the windows with either field
    sm_efficiency: float | None  # time-weighted min(blocks per SM, 1)
    achieved_occupancy: float | None  # time-weighted Kineto estimate (fraction)


class SmOccupancy(msgspec.Struct, frozen=True):
    available: bool  # the trace records blocks per SM or achieved occupancy
    devices: tuple[DeviceSm, ...]
    steps: tuple[StepSm, ...]
    kernels: tuple[KernelSm, ...]  # largest total first
    idle_kernels: tuple[KernelSm, ...]  # most idle SM time first (those with any)
    over_time: tuple[OverTime, ...]
    sms: int | None  # the (first) GPU's SMs (CUs)
    note: Note | None = None
    # compute (non-communication) kernels with 'blocks per SM', over the whole trace: their
    # time, and the SM time they left idle in launches too small to fill the GPU (limiter
    # "grid"): the evidence of the small-kernels rule
    compute_kernel_ns: float = 0.0
    underfill_idle_ns: float = 0.0
    underfill_launches: int = 0
    classes: tuple[ClassSm, ...] = ()  # per hotspot class, most kernel time first
    # the last steps the devices' window leaves out, as the plugin does (plugin_steps)
    steps_left_out: tuple[int, ...] = ()


def sm_busy(start: np.ndarray, end: np.ndarray, value: np.ndarray,
            window: tuple[int, int]) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The plugin's merge of overlapping kernels' blocks per SM: the integral of
    min(sum, 1) over ``window``, and the merged segments (start, end, value)."""
    n = len(start)
    if not n:
        e = np.empty(0)
        return 0.0, e.astype(np.int64), e.astype(np.int64), e
    t = np.concatenate([start, end])
    kind = np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8)])  # start before end
    delta = np.concatenate([value, -value])
    order = np.lexsort((kind, t))
    t, delta = t[order], delta[order]
    level = np.cumsum(delta)[:-1]  # the sum after each endpoint, until the next one
    s, e = t[:-1], t[1:]
    keep = (e > s) & (level > 0.0)
    s, e, v = s[keep], e[keep], np.minimum(level[keep], 1.0)
    cs, ce = np.clip(s, *window), np.clip(e, *window)
    return float(((ce - cs) * v).sum()), s, e, v


def _weighted(start: np.ndarray, end: np.ndarray, value: np.ndarray,
              window: tuple[int, int]) -> float | None:
    """The plugin's occupancy: values weighted by their time inside ``window``."""
    d = np.minimum(end, window[1]) - np.maximum(start, window[0])
    keep = d > 0
    if not keep.any():
        return None
    return float((value[keep] * d[keep]).sum() / d[keep].sum())


def plugin_steps(steps: Steps) -> tuple[Step, ...]:
    """The steps the plugin keeps (``StepParser._update_steps_duration``): where any step
    launched GPU activity, the last kept is the last that launched any, and that one is
    dropped too where it launched fewer than 0.8 times the activities of the step before
    (the plugin takes both for steps the profiler cut short)."""
    kept = steps.steps
    if len(kept) > 1 and any(st.gpu_activities for st in kept):
        last = max(i for i, st in enumerate(kept) if st.gpu_activities)
        keep = last + 1
        if last > 0 and kept[last - 1].gpu_activities * 0.8 > kept[last].gpu_activities:
            keep = last
        kept = kept[:keep]
    return kept


def plugin_window(table: EventTable, gpu: GpuActivity, steps: Steps) -> tuple[int, int] | None:
    """The window of the TensorBoard plugin's SM efficiency and occupancy: from its first
    step's start to its last step's end, its steps being

    * the ``ProfilerStep#`` steps, device side (as :mod:`..core.steps` computes them, the
      plugin's way), less the tail steps it drops as cut short (:func:`plugin_steps`);
    * without steps, one step from the first CPU op's start to the last one's end,
      widened to the device side the same way (it starts after the GPU activities not
      launched in it that end before its first one, and ends no sooner than the last
      activity launched in it).

    None where neither gives a window (no step and no CPU op: GPU-only traces)."""
    kept = plugin_steps(steps)
    if kept:
        return kept[0].device_start_ns, kept[-1].device_start_ns + kept[-1].device_dur_ns
    ops = table.rows(Cat.CPU_OP)
    if not len(ops):
        return None
    lo = int(table.ts_ns[ops].min())
    hi = int((table.ts_ns[ops] + table.dur_ns[ops]).max())
    linked = step_of_activities(table, gpu, [(0, lo, hi - lo)]) >= 0
    if not linked.any():
        return lo, hi
    g_start = table.ts_ns[gpu.row]
    g_end = g_start + table.dur_ns[gpu.row]
    before = g_end[~linked]
    before = before[before < g_start[linked].min()]
    start = max(lo, int(before.max())) if len(before) else lo
    return start, max(hi, int(g_end[linked].max()), start)


def analyze_sm_occupancy(table: EventTable, gpu: GpuActivity, mask: np.ndarray | None,
                         windows: dict[int, tuple[int, int]],
                         step_windows: tuple[tuple[int, int, int], ...] = (),
                         steps_left_out: tuple[int, ...] = ()) -> SmOccupancy:
    """The figures over each device's window (``windows``: device -> (start, end), the
    plugin's window) and per step (``step_windows``: (number, start, end) device-side), of
    every kernel of ``gpu`` on the device, as the plugin counts them; per hotspot class,
    of the kernels in ``mask`` (None: all; those "GPU time by class" counts) over the same
    windows; and per kernel name. ``steps_left_out``: the steps the plugin's window leaves
    out (:func:`plugin_steps`), kept for the wording."""
    launches = table.launches
    limits = _limits_by_device(table.meta.device_properties)
    first = next(iter(limits.values()), None)
    sms = first.sms if first is not None else None
    kern = table.cat[gpu.row] == Cat.KERNEL
    if launches is None or not len(launches) or not kern.any():
        return SmOccupancy(False, (), (), (), (), (), sms, None if not kern.any() else
                           NO_FIELDS_NOTE)
    # every kernel row has a launch entry (rows ascending)
    pos = np.searchsorted(launches.row, gpu.row[kern])
    pos = np.minimum(pos, len(launches) - 1)
    ok = launches.row[pos] == gpu.row[kern]
    krow = gpu.row[kern][ok]
    kpos = pos[ok]
    korig = np.flatnonzero(kern)[ok]  # index into gpu
    bps = launches.blocks_per_sm[kpos]
    occ = launches.occupancy_pct[kpos]
    has_bps = bps > 0
    has_occ = occ >= 0
    available = bool(has_bps.any() or has_occ.any())
    start = table.ts_ns[krow]
    end = start + table.dur_ns[krow]
    device = table.device[krow]
    sel = np.ones(len(krow), bool) if mask is None else mask[korig]  # the class figures'

    devices: list[DeviceSm] = []
    over_time: list[OverTime] = []
    steps: list[StepSm] = []
    if available:
        for dev, (w0, w1) in sorted(windows.items()):
            on = device == dev  # every kernel of the device, as the plugin
            b = on & has_bps
            o = on & has_occ
            busy, s, e, v = sm_busy(start[b], end[b], bps[b], (w0, w1))
            span = w1 - w0
            eff = busy / span if b.any() and span > 0 else None
            ach = _weighted(start[o], end[o], occ[o], (w0, w1))
            devices.append(DeviceSm(int(dev), int(w0), int(span), eff,
                                    None if ach is None else ach / 100.0, busy,
                                    int((b & (end > w0) & (start < w1)).sum())))
            for number, s0, s1 in step_windows:
                sb, *_ = sm_busy(start[b], end[b], bps[b], (s0, s1))
                sa = _weighted(start[o], end[o], occ[o], (s0, s1))
                steps.append(StepSm(number, int(dev),
                                    sb / (s1 - s0) if b.any() and s1 > s0 else None,
                                    None if sa is None else sa / 100.0))
            if span > 0:
                over_time.append(_over_time(int(dev), (w0, w1), s, e, v, start[o], end[o],
                                            occ[o]))
    classes = _classes(gpu.klass[korig], sel, device, start, end, bps, occ, windows) \
        if available else ()
    kernels, underfill = _kernel_groups(table, gpu, korig, krow, kpos, limits)
    idle = sorted((k for k in kernels if k.idle_sm_ns > 0), key=lambda k: -k.idle_sm_ns)
    note = None if available else NO_FIELDS_NOTE
    return SmOccupancy(available, tuple(devices), tuple(steps),
                       tuple(kernels[:TOP_KERNELS]), tuple(idle[:TOP_IDLE]),
                       tuple(over_time), sms, note, *underfill, classes=classes,
                       steps_left_out=steps_left_out if available else ())


def _classes(klass: np.ndarray, sel: np.ndarray, device: np.ndarray, start: np.ndarray,
             end: np.ndarray, bps: np.ndarray, occ: np.ndarray,
             windows: dict[int, tuple[int, int]]) -> tuple[ClassSm, ...]:
    """Per hotspot class: min(blocks per SM, 1) and the occupancy estimate of the kernels
    in ``sel``, each weighted by its time inside its device's window (the weight of the
    device's achieved occupancy)."""
    lo = np.full(len(start), np.iinfo(np.int64).max, dtype=np.int64)
    hi = np.full(len(start), np.iinfo(np.int64).min, dtype=np.int64)
    for dev, (w0, w1) in windows.items():
        on = device == dev
        lo[on], hi[on] = w0, w1
    t = (np.minimum(end, hi) - np.maximum(start, lo)).astype(np.float64)
    inside = sel & (t > 0)
    hb, ho = inside & (bps > 0), inside & (occ >= 0)
    n = len(classify.CLASSES)
    k = klass.astype(np.int64)
    eff_w = np.bincount(k[hb], weights=t[hb], minlength=n)
    eff_s = np.bincount(k[hb], weights=t[hb] * np.minimum(bps[hb], 1.0), minlength=n)
    occ_w = np.bincount(k[ho], weights=t[ho], minlength=n)
    occ_s = np.bincount(k[ho], weights=t[ho] * occ[ho], minlength=n)
    count = np.bincount(k[hb | ho], minlength=n)
    time = np.bincount(k[hb | ho], weights=t[hb | ho], minlength=n)
    return tuple(
        ClassSm(classify.CLASSES[c], int(count[c]),
                float(eff_s[c] / eff_w[c]) if eff_w[c] > 0 else None,
                float(occ_s[c] / occ_w[c] / 100.0) if occ_w[c] > 0 else None)
        for c in np.argsort(-time, kind="stable").tolist() if count[c])


def launch_figures(table: EventTable, gpu: GpuActivity) -> tuple[np.ndarray, np.ndarray]:
    """Per GPU activity of ``gpu``: its kernel's blocks per SM (0: none) and Kineto's
    achieved occupancy estimate in % (-1: none), for figures over other groupings."""
    bps = np.zeros(len(gpu))
    occ = np.full(len(gpu), -1.0)
    launches = table.launches
    if launches is None or not len(launches) or not len(gpu):
        return bps, occ
    kern = np.flatnonzero(table.cat[gpu.row] == Cat.KERNEL)
    pos = np.minimum(np.searchsorted(launches.row, gpu.row[kern]), len(launches) - 1)
    ok = launches.row[pos] == gpu.row[kern]
    bps[kern[ok]] = launches.blocks_per_sm[pos[ok]]
    occ[kern[ok]] = launches.occupancy_pct[pos[ok]]
    return bps, occ


def _over_time(dev: int, window: tuple[int, int], s: np.ndarray, e: np.ndarray, v: np.ndarray,
               os_: np.ndarray, oe: np.ndarray, ov: np.ndarray) -> OverTime:
    """The figures in ``BUCKETS`` equal buckets of ``window``: integrals of step functions
    read at the bucket edges (no pass over the kernels per bucket)."""
    w0, w1 = window
    size = max(1, -(-(w1 - w0) // BUCKETS))
    starts = np.arange(w0, w1, size, dtype=np.int64)
    edges = np.append(starts, w1)
    busy = np.diff(_integral_at(s, e, v, edges))
    # occupancy: the sum of running kernels' occupancy and their count, as step functions
    n = len(os_)
    t = np.concatenate([os_, oe])
    order = np.argsort(t, kind="stable")
    t = t[order]
    occ_level = np.cumsum(np.concatenate([ov, -ov])[order])[:-1] if n else np.empty(0)
    cnt_level = np.cumsum(np.concatenate([np.ones(n), -np.ones(n)])[order])[:-1] \
        if n else np.empty(0)
    occ = np.diff(_integral_at(t[:-1], t[1:], occ_level, edges)) if n else np.zeros(len(starts))
    cnt = np.diff(_integral_at(t[:-1], t[1:], cnt_level, edges)) if n else np.zeros(len(starts))
    width = np.diff(edges).astype(np.float64)
    eff = [round(float(x), 6) for x in busy / width]
    ach = [None if c <= 0 else round(float(o / c) / 100.0, 6)
           for o, c in zip(occ.tolist(), cnt.tolist(), strict=True)]
    return OverTime(dev, tuple(starts.tolist()), int(size), tuple(eff), tuple(ach))


def _integral_at(s: np.ndarray, e: np.ndarray, v: np.ndarray, points: np.ndarray) -> np.ndarray:
    """The integral up to each point of a step function that is ``v`` on the disjoint,
    sorted segments [s, e) and 0 elsewhere."""
    if not len(s):
        return np.zeros(len(points))
    cum = np.concatenate([[0.0], np.cumsum((e - s) * v)])
    k = np.searchsorted(s, points, side="right")  # segments starting at or before the point
    inside = np.clip(points - s[np.maximum(k - 1, 0)], 0, None)
    last = np.maximum(k - 1, 0)
    partial = np.where(k > 0, np.minimum(inside, e[last] - s[last]) * v[last], 0.0)
    return cum[np.maximum(k - 1, 0)] * (k > 0) + partial


def _limits_by_device(props: list[dict[str, Any]]) -> dict[int, DeviceLimits]:
    out: dict[int, DeviceLimits] = {}
    for p in props:
        d = device_limits(p)
        i = p.get("id")
        if d is not None and type(i) is int:
            out[i] = d
    return out


def _kernel_groups(table: EventTable, gpu: GpuActivity, korig: np.ndarray, krow: np.ndarray,
                   kpos: np.ndarray, limits: dict[int, DeviceLimits]
                   ) -> tuple[list[KernelSm], tuple[float, float, int]]:
    """Per kernel name: the figures weighted by kernel time, and the limiter; and the
    compute kernels' time and the SM time they idled in launches that cannot fill the GPU."""
    if not len(krow):
        return [], (0.0, 0.0, 0)
    L = table.launches
    assert L is not None
    dur = table.dur_ns[krow].astype(np.float64)
    bps = L.blocks_per_sm[kpos]
    occ = L.occupancy_pct[kpos]
    uniq, inv = dense_ids(table.name[krow])
    inv = inv.reshape(-1)
    n = len(uniq)
    count = np.bincount(inv, minlength=n)
    total = np.bincount(inv, weights=dur, minlength=n)
    hb = bps > 0
    eff_w = np.bincount(inv[hb], weights=dur[hb], minlength=n)
    eff = np.bincount(inv[hb], weights=dur[hb] * np.minimum(bps[hb], 1.0), minlength=n)
    idle = np.bincount(inv[hb], weights=dur[hb] * (1.0 - np.minimum(bps[hb], 1.0)), minlength=n)
    ho = occ >= 0
    occ_w = np.bincount(inv[ho], weights=dur[ho], minlength=n)
    occ_s = np.bincount(inv[ho], weights=dur[ho] * occ[ho], minlength=n)
    theo, lim_code, lim_names = _theoretical(table, krow, kpos, limits)
    compute = hb & (gpu.klass[korig] != classify.CLASS_INDEX[classify.COMMUNICATION])
    small = compute & (lim_code == (lim_names.index(GRID) if GRID in lim_names else -2))
    underfill = (float(dur[compute].sum()),
                 float((dur[small] * (1.0 - np.minimum(bps[small], 1.0))).sum()),
                 int(small.sum()))
    ht = ~np.isnan(theo)
    theo_w = np.bincount(inv[ht], weights=dur[ht], minlength=n)
    theo_s = np.bincount(inv[ht], weights=dur[ht] * theo[ht], minlength=n)
    # the limiter with most time per name (column 0: none)
    lim_time = np.zeros((n, len(lim_names) + 1))
    np.add.at(lim_time, (inv, lim_code + 1), dur)
    best_lim = lim_time.argmax(axis=1)
    # the longest launch of each name (its configuration is shown), and the op of most time
    longest = np.full(n, -1, dtype=np.int64)
    order = np.lexsort((dur, inv))
    longest[inv[order]] = order
    ops = _ops(table, gpu, korig, inv, dur, n)
    shown = kpos[longest]
    grid, block, regs, smem = (_known(a[shown]) for a in (
        L.grid_blocks, L.block_threads, L.registers, L.shared_memory_bytes))
    top_lim = best_lim.tolist()
    top_lim_ns = lim_time[np.arange(n), best_lim].tolist()
    name_id, count_l, total_l = uniq.tolist(), count.tolist(), total.tolist()
    # floats even where a bincount had nothing to weigh (it is then of ints)
    eff_l, eff_w_l, occ_s_l, occ_w_l, idle_l, theo_s_l, theo_w_l = (
        a.astype(np.float64).tolist() for a in (eff, eff_w, occ_s, occ_w, idle, theo_s, theo_w))
    out = []
    for g in np.argsort(-total, kind="stable").tolist():
        out.append(KernelSm(
            name=table.names[name_id[g]], count=count_l[g], total_ns=int(round(total_l[g])),
            sm_efficiency=eff_l[g] / eff_w_l[g] if eff_w_l[g] > 0 else None,
            achieved_occupancy=occ_s_l[g] / occ_w_l[g] / 100.0 if occ_w_l[g] > 0 else None,
            idle_sm_ns=idle_l[g],
            theoretical_occupancy=theo_s_l[g] / theo_w_l[g] if theo_w_l[g] > 0 else None,
            limiter=lim_names[top_lim[g] - 1] if top_lim[g] > 0 and top_lim_ns[g] > 0
            else None,
            grid_blocks=grid[g], block_threads=block[g], registers=regs[g],
            shared_memory_bytes=smem[g], op=ops[g]))
    return out, underfill


def _known(values: np.ndarray) -> list[int | None]:
    """The values, None where not known (negative)."""
    return [v if v >= 0 else None for v in values.tolist()]


def _theoretical(table: EventTable, krow: np.ndarray, kpos: np.ndarray,
                 limits: dict[int, DeviceLimits]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per launch: theoretical occupancy (NaN: unknown) and limiter (an index into the
    sorted limiter names returned; -1: none), one rule evaluation per distinct (device,
    configuration)."""
    L = table.launches
    assert L is not None
    if not limits:
        return np.full(len(krow), np.nan), np.full(len(krow), -1, dtype=np.int64), []
    keys = np.stack([table.device[krow].astype(np.int64), L.block_threads[kpos],
                     L.registers[kpos], L.shared_memory_bytes[kpos], L.grid_blocks[kpos]])
    # the distinct configurations (np.unique(axis=1) sorts a structured copy: 10x slower)
    order = np.lexsort(keys[::-1])
    ordered = keys[:, order]
    new = np.r_[True, (ordered[:, 1:] != ordered[:, :-1]).any(axis=0)]
    uniq = ordered[:, new]
    inv = np.empty(len(krow), dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    theo = np.full(uniq.shape[1], np.nan)
    limiter: list[str | None] = [None] * uniq.shape[1]
    for j, (dev, threads, regs, smem, grid) in enumerate(uniq.T.tolist()):
        d = limits.get(dev) or (next(iter(limits.values())) if len(limits) == 1 else None)
        if d is None or threads <= 0:
            continue
        o = theoretical(d, threads, regs if regs >= 0 else None, smem if smem >= 0 else None)
        if o is None:
            continue
        theo[j] = o.occupancy
        limiter[j] = GRID if fills_gpu(d, grid, o) is False else o.limiter
    names = sorted({x for x in limiter if x})
    code = np.array([names.index(x) if x else -1 for x in limiter], dtype=np.int64)
    return theo[inv], code[inv], names


def _ops(table: EventTable, gpu: GpuActivity, korig: np.ndarray, inv: np.ndarray,
         dur: np.ndarray, n: int) -> list[str | None]:
    """The launching op holding most of each name's time (None: not linked)."""
    op_row = gpu.op_row[korig]
    linked = op_row >= 0
    out: list[str | None] = [None] * n
    if not linked.any():
        return out
    op_name = table.name[op_row[linked]].astype(np.int64)
    key = inv[linked].astype(np.int64) * (len(table.names) + 1) + op_name
    u, k_inv = np.unique(key, return_inverse=True)
    t = np.bincount(k_inv.reshape(-1), weights=dur[linked])
    best: dict[int, tuple[float, int]] = {}
    for k, time in zip(u.tolist(), t.tolist(), strict=True):
        g, name = divmod(k, len(table.names) + 1)
        if g not in best or time > best[g][0]:
            best[g] = (time, name)
    for g, (_, name) in best.items():
        out[g] = table.names[name]
    return out


def sm_over_plugin_window(table: EventTable, gpu: GpuActivity, in_steps: np.ndarray | None,
                          windows: dict[int, tuple[int, int]], steps: Steps) -> SmOccupancy:
    """SM efficiency and occupancy of each device over the TensorBoard plugin's window (its
    steps' device-side span; ``windows``, each device's GPU window, where it has none);
    and per step."""
    step_windows = tuple((st.number, st.device_start_ns, st.device_start_ns + st.device_dur_ns)
                         for st in steps.steps if st.device_dur_ns > 0) \
        if in_steps is not None else ()
    span = plugin_window(table, gpu, steps)
    left_out: tuple[int, ...] = ()
    if span is not None and span[1] > span[0]:
        windows = {d: span for d in windows}
        kept = {st.number for st in plugin_steps(steps)}
        left_out = tuple(st.number for st in steps.steps if st.number not in kept)
    return analyze_sm_occupancy(table, gpu, in_steps, windows, step_windows, left_out)
