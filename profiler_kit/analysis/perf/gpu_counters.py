"""What the GPU's own counters measured, step by step: SM activity, memory throughput,
power, energy, clocks and temperature.

PyTorch's ``cupti_monitor`` backend samples counters while it records (CUPTI's PM
sampling for SM active % and DRAM throughput %, NVML-like environment records for power,
temperature and clocks) and writes them as counter events (``"C"`` in JSON, counter
tracks in a ``.pftrace``). Where they are, they measure what profkit otherwise estimates:
SM active % is the measured counterpart of the SM efficiency estimated from launch sizes
(:mod:`~profiler_kit.analysis.perf.sm_occupancy`); power over a step is its energy; an SM
clock that drops inside a step is throttling, which makes a step slow without any change
in the code.

A counter is a sampled signal: each sample holds until the next one (the last one for
one sampling period), so a window's figure is the time-weighted mean of what was held
over it, and says how much of the window the samples covered.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec
import numpy as np

from profiler_kit.analysis.core.steps import Steps
from profiler_kit.trace.table import CounterSamples

# PyTorch's series names (torch/profiler/_cupti/monitor_trace.py) by what they measure
SERIES = {
    "sm_active_pct": ("SM Active (%)",),
    "dram_bw_pct": ("DRAM BW (%)", "HBM BW (%)"),
    "power_w": ("Power (W)",),
    "sm_clock_mhz": ("SM Clock (MHz)",),
    "memory_clock_mhz": ("Memory Clock (MHz)",),
    "temperature_c": ("Temperature (C)",),
}
# an SM clock this much under the trace's highest is throttling, not sampling noise
THROTTLE_SHARE = 0.9
# under this share of a window covered by samples, a window's figures are withheld
MIN_COVERED = 0.5
MAX_POINTS = 400  # per track: a chart's worth


class WindowCounters(msgspec.Struct, frozen=True):
    """One device's counters over one window: a step, or the whole window (``step``
    None). Means are time-weighted; None where the series was not sampled there."""

    device: int
    step: int | None
    start_ns: int
    dur_ns: int
    covered: float  # the share of the window the samples cover (0..1)
    sm_active_pct: float | None = None
    dram_bw_pct: float | None = None
    power_w: float | None = None
    energy_j: float | None = None  # mean power × the window's length
    energy_per_item_j: float | None = None  # a step's energy / its items (run traces)
    sm_clock_mhz: float | None = None
    sm_clock_min_mhz: float | None = None
    memory_clock_mhz: float | None = None
    temperature_c: float | None = None  # the highest sampled


class Throttle(msgspec.Struct, frozen=True):
    """A window whose SM clock fell under ``THROTTLE_SHARE`` of the trace's highest."""

    device: int
    step: int | None
    from_mhz: float  # the trace's highest SM clock on the device
    to_mhz: float  # the lowest in the window
    temperature_c: float | None  # the window's highest temperature, a likely cause


class Track(msgspec.Struct, frozen=True):
    """One series of one device over its window, for a chart: at most ``MAX_POINTS``
    samples (every k-th where there are more), times from the window's start."""

    device: int
    name: str
    offset_ns: tuple[int, ...]
    value: tuple[float, ...]


class GpuCounters(msgspec.Struct, frozen=True):
    series: tuple[str, ...]  # every counter series of the trace, as named there
    samples: int
    items_per_step: int | None  # what one step processes, where the run says
    windows: tuple[WindowCounters, ...]  # per device: the whole window, then each step
    throttles: tuple[Throttle, ...]
    tracks: tuple[Track, ...] = ()  # the measured series over each device's window


def gpu_counters(counters: CounterSamples | None, steps: Steps,
                 device_windows: dict[int, tuple[int, int]],
                 items_per_step: int | None = None) -> GpuCounters | None:
    """The counters per device over its window (``device -> [start, end)``, the
    timeline's) and each step (device side where it has one), a step's energy also per
    item where ``items_per_step`` is known; None: no counters."""
    if counters is None or not len(counters):
        return None
    by_name = {name: i for i, name in enumerate(counters.names)}
    if not any(name in by_name for names in SERIES.values() for name in names):
        return None  # counters of something else (a queue's depth): none of a GPU
    devices = sorted(set(counters.device.tolist()) | set(device_windows))
    windows: list[WindowCounters] = []
    throttles: list[Throttle] = []
    tracks: list[Track] = []
    for device in devices:
        on = counters.device == device
        if not on.any():
            continue
        series = {key: _series(counters, on, by_name, names) for key, names in SERIES.items()}
        lo_hi = device_windows.get(device)
        if lo_hi is None:
            ts = counters.ts_ns[on]
            lo_hi = (int(ts.min()), int(ts.max()) + 1)
        spans = [(None, *lo_hi)] + [(s.number, *_step_span(s)) for s in steps.steps]
        tracks.extend(_tracks(device, lo_hi, series))
        top_clock = series["sm_clock_mhz"][1].max() if len(series["sm_clock_mhz"][1]) else None
        for step, lo, hi in spans:
            w = _window(device, step, lo, hi, series,
                        items_per_step if step is not None else None)
            windows.append(w)
            if (top_clock is not None and w.sm_clock_min_mhz is not None
                    and w.sm_clock_min_mhz < THROTTLE_SHARE * top_clock and step is not None):
                throttles.append(Throttle(device, step, float(top_clock), w.sm_clock_min_mhz,
                                          w.temperature_c))
    return GpuCounters(series=tuple(counters.names), samples=len(counters),
                       items_per_step=items_per_step,
                       windows=tuple(windows), throttles=tuple(throttles),
                       tracks=tuple(tracks))


def _tracks(device: int, lo_hi: tuple[int, int],
            series: dict[str, tuple[np.ndarray, np.ndarray]]) -> list[Track]:
    lo, hi = lo_hi
    out = []
    for key, (ts, values) in series.items():
        inside = (ts >= lo) & (ts < hi)
        ts, values = ts[inside], values[inside]
        if not len(ts):
            continue
        step = -(-len(ts) // MAX_POINTS)
        out.append(Track(device, SERIES[key][0], tuple((ts[::step] - lo).tolist()),
                         tuple(values[::step].tolist())))
    return out


def _step_span(step) -> tuple[int, int]:
    if step.device_dur_ns > 0:
        return step.device_start_ns, step.device_start_ns + step.device_dur_ns
    return step.start_ns, step.start_ns + step.dur_ns


def _series(counters: CounterSamples, on: np.ndarray, by_name: dict[str, int],
            names: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """The first of ``names`` sampled on the device: (times, values), by time."""
    for name in names:
        i = by_name.get(name)
        if i is None:
            continue
        sel = on & (counters.series == i)
        if sel.any():
            return counters.ts_ns[sel], counters.value[sel]
    return np.empty(0, dtype=np.int64), np.empty(0)


def _window(device: int, step: int | None, lo: int, hi: int,
            series: dict[str, tuple[np.ndarray, np.ndarray]],
            items: int | None) -> WindowCounters:
    figures: dict[str, float | None] = {}
    covered = 0.0
    for key, (ts, values) in series.items():
        mean, share = held_mean(ts, values, lo, hi)
        if mean is None or share < MIN_COVERED:
            continue
        covered = max(covered, share)
        figures[key] = mean
        if key == "sm_clock_mhz":
            figures["sm_clock_min_mhz"] = float(held_values(ts, values, lo, hi).min())
        elif key == "temperature_c":
            figures[key] = float(held_values(ts, values, lo, hi).max())
    power = figures.get("power_w")
    energy = None if power is None else power * (hi - lo) / 1e9
    per_item = energy / items if energy is not None and items else None
    return WindowCounters(device=device, step=step, start_ns=lo, dur_ns=hi - lo,
                          covered=round(covered, 6), energy_j=energy,
                          energy_per_item_j=per_item, **figures)


def hold_ns(ts: np.ndarray) -> int:
    """How long the last sample holds: the median sampling period (1 ns for one sample)."""
    return int(np.median(np.diff(ts))) if len(ts) > 1 else 1


def held_mean(ts: np.ndarray, values: np.ndarray, lo: int,
              hi: int) -> tuple[float | None, float]:
    """(the time-weighted mean of the held samples over [lo, hi), the share of it they
    cover); (None, 0) where no sample holds there."""
    if not len(ts) or hi <= lo:
        return None, 0.0
    ends = np.append(ts[1:], ts[-1] + hold_ns(ts))
    start = np.maximum(ts, lo)
    end = np.minimum(ends, hi)
    held = np.maximum(end - start, 0)
    total = int(held.sum())
    if not total:
        return None, 0.0
    return float((values * held).sum() / total), total / (hi - lo)


def held_values(ts: np.ndarray, values: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The values held at some time in [lo, hi): the one held at ``lo`` and those after."""
    first = max(int(np.searchsorted(ts, lo, side="right")) - 1, 0)
    last = int(np.searchsorted(ts, hi, side="left"))
    return values[first:max(last, first + 1)]
