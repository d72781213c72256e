"""The roofline: each modelled op and shape as a point, achieved FLOP/s against arithmetic
intensity, under the device's memory roof and compute ceilings (from the perf model).
Rates stay in FLOP/s; the axis labels them with SI prefixes (M, G, T)."""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.analysis.perf.roofline import DEVICE
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import Chart, axis, class_color
from profiler_kit.render.wording import units
from profiler_kit.render.wording.perf_tables import peak_share

ROOFLINE = "Against the hardware's limits"
TERA = 1e12


def roofline_charts(analyses: Sequence[TraceAnalysis]) -> list[Chart]:
    """One roofline per trace with modelled ops that have both rates."""
    charts = []
    for a in analyses:
        perf = a.perf
        groups = [g for g in perf.groups
                  if g.intensity_flops_per_byte and g.flops_per_s]
        if not groups:
            continue
        families = list(dict.fromkeys(g.family for g in groups))
        data = []
        for family in families:
            mine = [g for g in groups if g.family == family]
            data.append({
                "type": "scatter", "mode": "markers", "name": family,
                "x": [g.intensity_flops_per_byte for g in mine],
                "y": [g.flops_per_s for g in mine],
                "customdata": [[g.op, g.dtype, str(g.input_dims), g.count,
                                units.duration(g.total_ns), peak_share(g.compute_peak_share),
                                g.bound or "-"] for g in mine],
                "marker": {"color": class_color(family), "size": 10, "opacity": 0.85,
                           "line": {"width": 1, "color": "rgba(0,0,0,0.4)"}},
                "hovertemplate": "%{customdata[0]} %{customdata[1]} %{customdata[2]}<br>"
                                 "%{y:.3s}FLOP/s at %{x:.3g} FLOP/byte, "
                                 "%{customdata[5]} of peak (%{customdata[6]} bound)<br>"
                                 "%{customdata[3]} calls, %{customdata[4]}<extra></extra>",
            })
        data += _roofs(perf, groups)
        time_of = "the GPU time of each op's kernels" if perf.time_source == DEVICE else \
            "each op's CPU time"
        where = (f"under {perf.peak.name}'s memory roof and compute ceilings "
                 f"({perf.peak.source.split(',')[0]})" if perf.peak is not None
                 else "no device peaks known for this trace, so no roof")
        charts.append(Chart(
            id=f"roofline-{len(charts)}", section=ROOFLINE,
            title=f"Roofline of {a.label}",
            caption=f"Each point is one op at one input shape: FLOPs and bytes from the perf "
                    f"model over {time_of}, against arithmetic intensity, both axes "
                    f"logarithmic; {where}.{_coverage(perf)}",
            data=data,
            layout={"xaxis": axis("arithmetic intensity (FLOP/byte)", type="log"),
                    "yaxis": axis("achieved FLOP/s", type="log", tickformat="~s")},
        ))
    return charts


def _coverage(perf) -> str:
    """How much of the compute time the points stand for, and the MFU it allows: a
    roofline of a fifth of the work must not read as the whole."""
    if perf.modelled_share is None:
        return ""
    text = f" The modelled ops cover {units.percent(perf.modelled_share)} of the GPU " \
           f"compute time"
    if perf.mfu_partial:
        return text + "; too little for a model FLOP utilization (at least 50 % needed)."
    parts = []
    if perf.model_flops_utilization is not None:
        parts.append(f"model FLOP utilization {units.percent(perf.model_flops_utilization)} "
                     f"of the {perf.mfu_dtype} peak (per second of step wall time)")
    if perf.flops_per_s_peak_share is not None:
        parts.append(f"{units.percent(perf.flops_per_s_peak_share)} of it while their "
                     f"kernels run")
    return text + "".join(f"; {p}" for p in parts) + "."


def _roofs(perf, groups) -> list[dict]:
    """The memory roof rising to each compute ceiling the points are measured against."""
    if perf.peak is None:
        return []
    bandwidth = perf.peak.memory_bytes_per_s
    xs = [g.intensity_flops_per_byte for g in groups]
    lo, hi = min(xs) / 4, max(xs) * 4
    roofs = []
    for peak in sorted({g.peak_flops_per_s for g in groups if g.peak_flops_per_s}):
        ridge = peak / bandwidth  # where the memory roof meets this ceiling
        x = [min(lo, ridge / 4), ridge, max(hi, ridge * 4)]
        roofs.append({
            "type": "scatter", "mode": "lines", "name": f"ceiling {peak / TERA:.4g} TFLOP/s",
            "x": x, "y": [x[0] * bandwidth, peak, peak],
            "line": {"color": "rgba(128,128,128,0.8)", "width": 1.5, "dash": "dash"},
            "hovertemplate": f"peak {peak / TERA:.4g} TFLOP/s, "
                             f"{bandwidth / TERA:.3g} TB/s; ridge at {ridge:.3g} FLOP/byte"
                             "<extra></extra>",
        })
    return roofs
