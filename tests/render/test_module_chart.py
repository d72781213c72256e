"""The report's nn.Module icicle: its boxes are the code view's module tree, box for box,
on a real H100 trace with module events and on a CPU training step recorded here."""

from __future__ import annotations

import pytest
from real_traces import analysis

from profiler_kit.analysis.code.view import CodeView, ModuleNode
from profiler_kit.render.html import code_charts
from profiler_kit.render.html.report import charts_for
from profiler_kit.render.wording import units


def _expected(view: CodeView, measure: str, passes: list[str]) -> dict[str, list]:
    """The tree walked here, independently of the chart's own walk."""
    fields = {("device", "forward"): ("device_ns", "self_device_ns"),
              ("device", "backward"): ("backward_device_ns", "self_backward_device_ns"),
              ("cpu_op", "forward"): ("op_ns", "self_op_ns"),
              ("cpu_op", "backward"): ("backward_op_ns", "self_backward_op_ns")}
    out: dict[str, list] = {"ids": [], "labels": [], "parents": [], "values": [], "incl": []}

    def walk(nodes: tuple[ModuleNode, ...], parent: str, incl: str, own: str) -> None:
        for n in nodes:
            out["ids"].append(f"{parent}/{n.name}")
            out["labels"].append(n.name)
            out["parents"].append(parent)
            out["values"].append(getattr(n, own))
            out["incl"].append(units.duration(getattr(n, incl)))
            walk(n.children, f"{parent}/{n.name}", incl, own)

    for p in passes:
        out["ids"].append(p)
        out["labels"].append(p)
        out["parents"].append("")
        out["values"].append(0)
        out["incl"].append("")
        walk(view.modules, p, *fields[(measure, p)])
    return out


def _check(chart, view: CodeView, measure: str, passes: list[str]) -> None:
    (trace,) = chart.data
    want = _expected(view, measure, passes)
    assert trace["type"] == "icicle" and trace["branchvalues"] == "remainder"
    for key in ("ids", "labels", "parents", "values"):
        assert trace[key] == want[key], key
    assert [c[0] for c in trace["customdata"]] == want["incl"]


def _widths_are_inclusive(nodes: tuple[ModuleNode, ...], incl: str, own: str) -> None:
    """What Plotly draws (own value plus the children's boxes) is the module's inclusive
    time wherever the instances nest cleanly."""
    for n in nodes:
        assert getattr(n, own) + sum(getattr(c, incl) for c in n.children) == getattr(n, incl)
        _widths_are_inclusive(n.children, incl, own)


def test_icicle_is_the_module_tree_of_a_real_gpu_trace():
    a = analysis("h100_bert_small.json.gz")
    view = a.code
    assert view is not None and view.modules
    charts = [c for c in charts_for([a]) if c.section == code_charts.BY_MODULE]
    assert len(charts) == 1
    _check(charts[0], view, "device", ["forward"])  # inference: no backward box
    assert charts[0].data[0]["values"][1:] and max(charts[0].data[0]["values"]) > 0
    _widths_are_inclusive(view.modules, "device_ns", "self_device_ns")


def test_trace_without_module_events_draws_no_icicle():
    a = analysis("a100_simple_add.json.gz")
    assert not [c for c in charts_for([a]) if c.section == code_charts.BY_MODULE]


def test_cpu_training_step_draws_forward_and_backward_cpu_op_time(tmp_path):
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.profiler import ProfilerActivity, profile

    from profiler_kit.analysis.trace_analysis import analyze_table
    from profiler_kit.trace.loader import load

    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Sequential(nn.Linear(64, 8)))
    x = torch.randn(16, 32)
    net(x).sum().backward()
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        net(x).sum().backward()
    path = tmp_path / "train.pt.trace.json"
    prof.export_chrome_trace(str(path))
    view = analyze_table(load(path)).code
    assert view is not None and view.modules
    chart = code_charts.module_chart("m", "train", view)
    _check(chart, view, "cpu_op", ["forward", "backward"])
    _widths_are_inclusive(view.modules, "op_ns", "self_op_ns")
    _widths_are_inclusive(view.modules, "backward_op_ns", "self_backward_op_ns")
    assert sum(n.backward_op_ns for n in view.modules) > 0
