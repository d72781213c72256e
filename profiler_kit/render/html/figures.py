"""What every chart of the HTML report shares: the chart record, colours and unit scales.

A chart is a Plotly figure (``data`` traces and ``layout``) plus a title and a one-line
caption; the page's script draws it as it is. Figures carry the analyses' numbers
scaled to display units (ns to ms, bytes to MiB) and nothing computed here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.perf import perf_model

NS_PER_MS = 1e6
BYTES_PER_MIB = float(1 << 20)

# One colour per hotspot class, the same in every chart; readable on light and dark.
CLASS_COLORS: dict[str, str] = {
    classify.CONVOLUTION: "#4e79a7",
    classify.BATCHNORM: "#f28e2b",
    classify.NORMALIZATION: "#ffbe7d",
    classify.GEMM: "#e15759",
    classify.ATTENTION: "#b07aa1",
    classify.ELEMENTWISE: "#59a14f",
    classify.REDUCTION: "#76b7b2",
    classify.POOLING: "#9c755f",
    classify.COPY: "#b6992d",
    classify.MEMCPY: "#edc948",
    classify.MEMSET: "#d4a6c8",
    classify.COMMUNICATION: "#ff5fa2",
    classify.OTHER: "#a0a0a0",
}
# The perf model's op families that are not hotspot classes (the roofline's points); the
# families that are classes (gemm, convolution, ...) take the class's colour.
FAMILY_COLORS: dict[str, str] = {
    perf_model.SOFTMAX: "#d37295",
    perf_model.EMBEDDING: "#a0cbe8",
}
# The parts of TensorBoard's split of a step (``analysis.steps.STEP_PARTS``) that are no
# class; the parts named as a class (memcpy, memset, communication, other) take its colour.
STEP_PART_COLORS: dict[str, str] = {
    "kernel": "#499894",
    "runtime": "#79706e",
    "dataloader": "#8cd17d",
    "cpu_exec": "#d7b5a6",
}
# Series that are neither classes nor strategies (measures, phases, ranks, GPUs), in order.
SERIES_COLORS = ("#4e79a7", "#e15759", "#59a14f", "#f28e2b", "#b07aa1", "#76b7b2",
                 "#edc948", "#ff9da7", "#9c755f", "#bab0ac")
# One colour per strategy (or per trace standing for one), the same in every chart of a
# report, and taken by nothing else: no class, op family, step part or other series has
# one, so a colour never means a strategy in one chart and something else in the next.
STRATEGY_COLORS = ("#1f78b4", "#d95f02", "#1b9e77", "#7570b3", "#e7298a", "#66a61e",
                   "#e6ab02", "#a6761d", "#6a3d9a", "#b2182b")
# What is no strategy in a strategy chart (the p95 mark, the samples): grey.
NEUTRAL = "#8c8c8c"
NEUTRAL_SAMPLES = "rgba(140,140,140,0.55)"


@dataclass(frozen=True)
class Chart:
    """One chart: ``kind`` "plotly" is drawn as is; "timeline" is a compact mini trace view
    the page expands into one line trace per class (see report.js)."""

    id: str
    section: str
    title: str
    caption: str
    data: list[dict[str, Any]] = field(default_factory=list)
    layout: dict[str, Any] = field(default_factory=dict)
    kind: str = "plotly"
    timeline: dict[str, Any] | None = None
    note: str = ""  # a second line under the caption, e.g. "downsampled"

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "section": self.section, "title": self.title,
                "caption": self.caption, "note": self.note, "kind": self.kind,
                "data": self.data, "layout": self.layout, "timeline": self.timeline}


def class_color(klass: str) -> str:
    """The colour of a hotspot class, or of a perf-model op family, in every chart: every
    chart that colours by class takes it from here."""
    return CLASS_COLORS.get(klass) or FAMILY_COLORS.get(klass) or CLASS_COLORS[classify.OTHER]


def step_part_color(part: str) -> str:
    """The colour of a part of the step split: a class's own where the part is one."""
    return STEP_PART_COLORS.get(part) or class_color(part)


def ms(ns: float | int | None) -> float | None:
    return None if ns is None else ns / NS_PER_MS


def mib(n: float | int | None) -> float | None:
    return None if n is None else n / BYTES_PER_MIB


def byte_unit(largest: float) -> tuple[str, float]:
    """The binary unit an axis reaching ``largest`` bytes reads best in, and its size."""
    for unit, size in (("GiB", float(1 << 30)), ("MiB", BYTES_PER_MIB), ("KiB", 1024.0)):
        if largest >= size:
            return unit, size
    return "bytes", 1.0


def series_color(i: int) -> str:
    """The colour of the ``i``-th series that is neither a class nor a strategy."""
    return SERIES_COLORS[i % len(SERIES_COLORS)]


def counted_bar(i: int, name: str, x: list[str], ns: list[int], counts: list[int],
                hover: str, noun: str) -> dict[str, Any]:
    """One series of a stacked bar chart of time per trace, each bar with how many things
    (``noun``) its time sums: ``hover`` names the series on hover."""
    return {"type": "bar", "name": name, "x": x, "y": [ms(v) for v in ns],
            "customdata": [[n] for n in counts], "marker": {"color": series_color(i)},
            "hovertemplate": f"{hover}: %{{y:.4g}} ms in %{{customdata[0]:,}} {noun}"
                             "<extra>%{x}</extra>"}


def strategy_colors(names: Iterable[str]) -> dict[str, str]:
    """One colour per distinct name (a strategy, or a trace where there is none), in the
    order the names first come: a report passes the same map to every chart."""
    found: dict[str, str] = {}
    for name in names:
        if name not in found:
            found[name] = STRATEGY_COLORS[len(found) % len(STRATEGY_COLORS)]
    return found


def axis(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "automargin": True, **extra}
