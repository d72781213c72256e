"""Comparison: any number of trace analyses side by side, with deltas against a baseline.

Each metric says which direction is better, so the best value can be highlighted;
deltas are relative to the baseline's value ((value - baseline) / baseline).

Two sides (two run folders, or two folders of the same strategies): each trace of the
other side is also matched with the trace of the same strategy (and sweep point, and
worker) on the baseline's side, and its step-time waterfall, its verdict and the
regression gate measure it against that trace rather than the baseline (see
:func:`sides_of`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.diffs.op_diff import OpDiff, op_diff
from profiler_kit.analysis.diffs.step_diff import StepDiff, step_diff
from profiler_kit.analysis.prediction_checks import PredictionCheck, check_predictions
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.errors import UsageError

Value = float | int | None


class Metric(msgspec.Struct, frozen=True):
    key: str
    label: str
    unit: str  # "ns", "bytes", "fraction", "count"
    better: str  # "lower", "higher" or "none"
    values: tuple[Value, ...]
    deltas: tuple[float | None, ...]  # relative to the baseline; None where undefined
    best: int | None  # index of the best value (None when nothing to choose)


class Comparison(msgspec.Struct, frozen=True):
    labels: tuple[str, ...]
    baseline: int
    metrics: tuple[Metric, ...]
    # per trace, what its figures cover: "steps", or "trace" (no steps: the whole window,
    # which renderers mark, since it is not comparable with a per-step median)
    windows: tuple[str, ...] = ()
    ops: OpDiff | None = None  # op and kernel names added, removed, changed
    steps: StepDiff | None = None  # the step-time change of each trace, term by term
    # two sides paired strategy by strategy: the traces with no match on the other side
    unpaired: tuple[str, ...] = ()
    # each change the baseline's (or paired trace's) replay priced, against each other
    # trace's measured step: the run that made the change checks its prediction
    predictions: tuple[PredictionCheck, ...] = ()


def _step(a: TraceAnalysis) -> Value:
    """The headline step time: device side on GPU traces with steps, else CPU side (or the
    whole window for a trace without steps, which the comparison marks)."""
    return a.steps.headline_median_ns


def _gpu(fn: Callable[[TraceAnalysis], Value]) -> Callable[[TraceAnalysis], Value]:
    return lambda a: fn(a) if a.has_gpu else None


def _peak(a: TraceAnalysis, field: str) -> Value:
    values = [getattr(d, field) for d in a.memory.devices if getattr(d, field) is not None]
    return max(values) if values else None


def _sm_mean(a: TraceAnalysis, field: str) -> Value:
    """A device figure of SM efficiency or occupancy, averaged over the GPUs (None where the
    trace does not record it)."""
    if a.sm is None or not a.sm.available:
        return None
    values = [getattr(d, field) for d in a.sm.devices if getattr(d, field) is not None]
    return sum(values) / len(values) if values else None


def _achieved_flops(a: TraceAnalysis) -> Value:
    """Modelled FLOPs per second of the modelled ops' own time (GPU time of their kernels,
    or op time on a CPU trace): FLOP/s while the kernels run."""
    return a.perf.flops_per_s if a.perf.ops else None


_METRICS: tuple[tuple[str, str, str, str, Callable[[TraceAnalysis], Value]], ...] = (
    ("step_median_ns", "step time (median)", "ns", "lower", _step),
    ("critical_path_ns", "critical path (median step)", "ns", "lower",
     lambda a: a.critical_path.length_ns if a.critical_path is not None else None),
    ("gpu_busy_ns", "GPU busy", "ns", "lower", _gpu(lambda a: a.timeline.busy_ns)),
    ("gpu_idle_ns", "GPU idle", "ns", "lower",
     _gpu(lambda a: a.timeline.window_ns - a.timeline.busy_ns)),
    ("gpu_idle_share", "GPU idle share", "fraction", "lower",
     _gpu(lambda a: a.timeline.idle_share)),
    ("step_gpu_busy_share", "GPU busy / device-side step", "fraction", "higher",
     _gpu(lambda a: a.step_gpu_busy_share)),
    ("sm_efficiency", "SM efficiency (est.)", "fraction", "higher",
     _gpu(lambda a: _sm_mean(a, "sm_efficiency"))),
    ("achieved_occupancy", "achieved occupancy (est.)", "fraction", "higher",
     _gpu(lambda a: _sm_mean(a, "achieved_occupancy"))),
    ("multi_stream_ns", "time with 2+ streams busy", "ns", "higher",
     _gpu(lambda a: sum(d.multi_stream_ns for d in a.timeline.devices))),
    ("multi_device_ns", "time with 2+ devices busy", "ns", "higher",
     _gpu(lambda a: a.timeline.multi_device_ns if len(a.timeline.devices) > 1 else None)),
    ("comm_compute_overlap_ns", "communication overlapped", "ns", "higher",
     _gpu(lambda a: sum(d.comm_compute_overlap_ns for d in a.timeline.devices))),
    ("exposed_communication_ns", "communication exposed", "ns", "lower",
     _gpu(lambda a: sum(d.exposed_communication_ns for d in a.timeline.devices))),
    ("host_wait_ns", "GPU idle waiting on the host", "ns", "lower",
     _gpu(lambda a: sum(d.host_wait_ns for d in a.launches.devices) if a.launches else None)),
    ("launch_delay_p50_ns", "launch delay (median)", "ns", "lower",
     _gpu(lambda a: a.launches.launch_delay.p50_ns
          if a.launches and a.launches.launch_delay else None)),
    ("low_precision_share", "GEMM+conv in fp16/bf16", "fraction", "higher",
     _gpu(lambda a: a.precision.low_precision_share)),
    ("modelled_flops_per_s", "achieved FLOP/s (modelled ops)", "FLOP/s", "higher",
     _achieved_flops),
    ("model_flops_utilization", "model FLOP utilization", "fraction", "higher",
     lambda a: a.perf.model_flops_utilization),
    ("flops_per_s_peak_share", "% of peak while kernels run", "fraction", "higher",
     lambda a: a.perf.flops_per_s_peak_share),
    ("kernels", "GPU kernels launched", "count", "lower",
     _gpu(lambda a: sum(k.count for k in a.kernels if k.category == "kernel"))),
    ("peak_allocated_bytes", "peak memory allocated", "bytes", "lower",
     lambda a: _peak(a, "peak_allocated_bytes")),
    ("peak_reserved_bytes", "peak memory reserved", "bytes", "lower",
     lambda a: _peak(a, "peak_reserved_bytes")),
)


def compare(analyses: Sequence[TraceAnalysis], baseline: str | int | None = None,
            sides: Sequence[tuple[int, str]] | None = None) -> Comparison:
    """Put ``analyses`` side by side; ``baseline`` is a label or an index (default: the first).

    ``sides`` (from :func:`sides_of`): per analysis, its side (0 or 1) and its key (the
    strategy folder under the side's root, and the worker). Each trace of the side
    without the baseline is then measured against the trace of the same key on the
    baseline's side (the waterfalls, verdicts and regression gate), not the baseline;
    traces on one side only get none and are listed in ``unpaired``."""
    if not analyses:
        raise UsageError("nothing to compare: no traces")
    labels = tuple(a.label for a in analyses)
    base = _baseline_index(labels, analyses, baseline)
    against, unpaired = _pairs(labels, base, sides) if sides else (None, ())
    metrics = []
    for key, label, unit, better, fn in _METRICS:
        values = tuple(fn(a) for a in analyses)
        if all(v is None for v in values):
            continue
        metrics.append(_metric(key, label, unit, better, values, base))
    any_gpu = any(a.has_gpu for a in analyses)
    for klass in classify.CLASSES:
        if any_gpu:
            values = tuple(a.gpu.ns(klass) if a.has_gpu else None for a in analyses)
            key, label = f"gpu_{klass}_ns", f"GPU {klass}"
        else:
            values = tuple(a.cpu.ns(klass) for a in analyses)
            key, label = f"cpu_{klass}_self_ns", f"CPU {klass} (self)"
        if any(v for v in values):
            metrics.append(_metric(key, label, "ns", "lower", values, base))
    ops = op_diff(labels, [a.names for a in analyses], base)
    steps = step_diff(labels, [a.step_terms for a in analyses], base, ops,
                      [a.idle for a in analyses], against)
    return Comparison(labels=labels, baseline=base, metrics=tuple(metrics),
                      windows=tuple(a.window for a in analyses), ops=ops, steps=steps,
                      unpaired=unpaired,
                      predictions=check_predictions(analyses, base, against))


def _pairs(labels: Sequence[str], base: int, sides: Sequence[tuple[int, str]]
           ) -> tuple[list[int | None], tuple[str, ...]]:
    """Per trace, the index of the trace of the same key on the baseline's side (None on
    that side and where the key is missing there), and the labels of the traces whose key
    the other side lacks."""
    if len(sides) != len(labels):
        raise ValueError("sides: one (side, key) per analysis")
    home = sides[base][0]
    at_home = {key: i for i, (side, key) in enumerate(sides) if side == home}
    away = {key for side, key in sides if side != home}
    against = [None if side == home else at_home.get(key) for side, key in sides]
    unpaired = tuple(labels[i] for i, (side, key) in enumerate(sides)
                     if (key not in away if side == home else key not in at_home))
    return against, unpaired


def sides_of(roots: Sequence[Path], files: Sequence[Path]) -> list[tuple[int, str]] | None:
    """Two folders given as two sides (two run folders, or two folders of the same
    strategies): per file, its side (the index of the root it lies under) and its key,
    the path of its folder under that root (a run's strategy folder: sweep point and
    strategy) and, where the folder holds several traces, the worker (the file name
    without the trace handler's time stamp). None unless there are exactly two roots,
    both folders, neither inside the other, every file under one of them, and at least
    one key on both sides; None too when each side holds one trace, which the baseline
    pairs already."""
    if len(roots) != 2 or not all(r.is_dir() for r in roots):
        return None
    a, b = (r.resolve() for r in roots)
    if a == b or a in b.parents or b in a.parents:
        return None
    found = []
    for f in files:
        full = f.resolve()
        side = 0 if a in full.parents else 1 if b in full.parents else None
        if side is None:
            return None
        found.append((side, full.parent.relative_to((a, b)[side]).as_posix()))
    stems = _short_stems(list(files))
    per_folder = Counter(found)
    keys = [(side, folder if per_folder[(side, folder)] == 1 else f"{folder}/{stem}")
            for (side, folder), stem in zip(found, stems, strict=True)]
    if max(Counter(s for s, _ in keys).values(), default=0) < 2:
        return None
    if not {k for s, k in keys if s == 0} & {k for s, k in keys if s == 1}:
        return None
    return keys


def _baseline_index(
    labels: tuple[str, ...], analyses: Sequence[TraceAnalysis], baseline: str | int | None
) -> int:
    if baseline is None:
        return 0
    if isinstance(baseline, int):
        if not 0 <= baseline < len(labels):
            raise UsageError(f"baseline index {baseline} out of range (0..{len(labels) - 1})")
        return baseline
    if baseline in labels:
        return labels.index(baseline)
    # A path given on the command line: the first trace at or below it.
    target = Path(baseline).resolve()
    for i, a in enumerate(analyses):
        p = Path(a.path).resolve()
        if p == target or target in p.parents:
            return i
    raise UsageError(f"baseline {baseline!r} is none of: {', '.join(labels)}")


def _metric(key: str, label: str, unit: str, better: str, values: tuple[Value, ...],
            base: int) -> Metric:
    b = values[base]
    deltas = tuple(
        (v - b) / b if v is not None and b not in (None, 0) else None for v in values
    )
    present = [(v, i) for i, v in enumerate(values) if v is not None]
    best = None
    if len(present) > 1 and better != "none" and len({v for v, _ in present}) > 1:
        best = (min(present) if better == "lower" else max(present))[1]
    return Metric(key, label, unit, better, values, deltas, best)


_TRACE_SUFFIX = re.compile(r"(\.pt\.trace)?(\.json|\.pftrace|\.perfetto-trace)(\.gz)?$")
# tensorboard_trace_handler names a trace <worker>.<time in ns>.pt.trace.json
_HANDLER_STAMP = re.compile(r"\.\d{10,}$")


def _short_stems(paths: Sequence[Path]) -> list[str]:
    """File names without the trace suffix, and without the trace handler's time stamp
    (``rank0.1795377761762408591`` -> ``rank0``) where that leaves them unique in
    their folder (a profiler that repeats writes one trace per cycle and worker)."""
    stems = [_TRACE_SUFFIX.sub("", p.name) for p in paths]
    short = [_HANDLER_STAMP.sub("", s) for s in stems]
    taken = Counter((p.parent, s) for p, s in zip(paths, short, strict=True))
    return [s if taken[(p.parent, s)] == 1 else full
            for p, s, full in zip(paths, short, stems, strict=True)]


def label_traces(paths: Sequence[Path], given: Sequence[bool] | None = None) -> list[str]:
    """Short unique labels: the strategy folder when it holds one trace, else the file stem.

    ``given`` marks files named directly by the user: they keep their own name.
    """
    paths = [Path(p) for p in paths]
    given = list(given) if given is not None else [False] * len(paths)
    per_parent = Counter(p.parent for p in paths)
    several_parents = len(per_parent) > 1
    stems = _short_stems(paths)
    parts: list[list[str]] = []
    depth: list[int] = []  # components each label starts with
    for p, named, stem in zip(paths, given, stems, strict=True):
        if named:
            parts.append([*p.parent.parts, stem])
            depth.append(1)
        elif several_parents and per_parent[p.parent] == 1:
            parts.append([*p.parent.parts])
            depth.append(1)
        elif several_parents:
            parts.append([*p.parent.parts, stem])
            depth.append(2)
        else:
            parts.append([stem])
            depth.append(1)

    def labels_at(extra: int) -> list[str]:
        return ["/".join(x[-(d + extra):]) for x, d in zip(parts, depth, strict=True)]

    extra = 0
    labels = labels_at(extra)
    while len(set(labels)) < len(labels) and extra < max(len(x) for x in parts):
        extra += 1
        labels = labels_at(extra)
    if len(set(labels)) < len(labels):  # the same file twice
        labels = [f"{lab} #{i + 1}" for i, lab in enumerate(labels)]
    return labels
