"""The nn.Module tree of a trace as an icicle: device time per module instance, forward
and backward (CPU op time on traces without GPU work), as the code view gives it.

Each box is one instance as the profiler and the TensorBoard plugin name it
(``Linear_3`` under ``DecoderLayer_0``). A box's own value is the module's self time
(``self_device_ns``, ...), so Plotly's boxes (``branchvalues: "remainder"``) are as
wide as the module's inclusive time; the hover shows the analysis's inclusive and self
times and calls. Traces without module events draw nothing (their note says how to
record them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profiler_kit.analysis.code.view import CodeView, ModuleNode
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.html.trace_charts import name_of
from profiler_kit.render.wording import units

BY_MODULE = "Time by module"
FORWARD = "forward"
BACKWARD = "backward"
MAX_DEPTH = 5  # levels drawn at once (root included); a click zooms into a box

# (inclusive, self) field names per pass and measure
_FIELDS = {
    ("device", FORWARD): ("device_ns", "self_device_ns"),
    ("device", BACKWARD): ("backward_device_ns", "self_backward_device_ns"),
    ("cpu_op", FORWARD): ("op_ns", "self_op_ns"),
    ("cpu_op", BACKWARD): ("backward_op_ns", "self_backward_op_ns"),
}


def measure_of(view: CodeView) -> str:
    """"device" where the trace has GPU work, else "cpu_op" (as the coverage line)."""
    return view.coverage.measure if view.coverage is not None else "device"


def module_charts(analyses: Sequence[TraceAnalysis]) -> list[Chart]:
    """One icicle per trace with nn.Module events."""
    charts = []
    for a in analyses:
        view = a.code
        if view is None or not view.modules:
            continue
        charts.append(module_chart(f"modules-{len(charts)}", name_of(a), view))
    return charts


def module_chart(chart_id: str, label: str, view: CodeView) -> Chart:
    measure = measure_of(view)
    passes = [FORWARD]
    if any(_total(n, measure, BACKWARD) for n in view.modules):
        passes.append(BACKWARD)
    ids: list[str] = []
    labels: list[str] = []
    parents: list[str] = []
    values: list[int] = []
    custom: list[list[Any]] = []
    for p in passes:
        ids.append(p)
        labels.append(p)
        parents.append("")
        values.append(0)
        custom.append(["", "-", "-"])
        _add(view.modules, p, measure, p, ids, labels, parents, values, custom)
    what = ("GPU time of the kernels launched inside its calls" if measure == "device"
            else "CPU op self time inside its calls (the trace has no GPU work)")
    steps = f" over {view.steps} steps" if view.steps else ""
    return Chart(
        id=chart_id, section=BY_MODULE, title=f"Time by nn.Module: {label}",
        caption=f"Each box is one nn.Module instance, as wide as its {what}{steps}; "
                "backward: the kernels of the backward ops of its forward ops. "
                "Click a box to zoom into it, the top bar to zoom out.",
        data=[{
            "type": "icicle", "ids": ids, "labels": labels, "parents": parents,
            "values": values, "branchvalues": "remainder", "maxdepth": MAX_DEPTH,
            "customdata": custom, "sort": False,
            "texttemplate": "%{label}<br>%{customdata[0]}",
            "hovertemplate": "%{label}: %{customdata[0]} (self %{customdata[1]}), "
                             "%{customdata[2]} calls<extra>%{id}</extra>",
            "tiling": {"orientation": "v"}, "root": {"color": "rgba(0,0,0,0)"},
        }],
        layout={"height": 520, "margin": {"t": 8, "l": 8, "r": 8, "b": 8}},
    )


def _total(n: ModuleNode, measure: str, p: str) -> int:
    return getattr(n, _FIELDS[(measure, p)][0])


def _add(nodes: Sequence[ModuleNode], parent: str, measure: str, p: str, ids: list[str],
         labels: list[str], parents: list[str], values: list[int],
         custom: list[list[Any]]) -> None:
    inclusive_field, self_field = _FIELDS[(measure, p)]
    for n in nodes:
        node_id = f"{parent}/{n.name}"
        ids.append(node_id)
        labels.append(n.name)
        parents.append(parent)
        values.append(getattr(n, self_field))
        custom.append([units.duration(getattr(n, inclusive_field)),
                       units.duration(getattr(n, self_field)), n.calls])
        _add(n.children, node_id, measure, p, ids, labels, parents, values, custom)
