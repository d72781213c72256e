"""Op/kernel differences, step-time waterfalls and verdict lines, for the console and
Markdown. Formats, never computes: every number comes from the comparison."""

from __future__ import annotations

import msgspec

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.diffs.op_diff import DiffRow
from profiler_kit.analysis.diffs.step_diff import Evidence, Waterfall
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name
from profiler_kit.results import StrategyResult

_STATUS_TAG = {"added": " new", "removed": " gone", "changed": "", "same": " =", "absent": "",
               "baseline": ""}


def signed_duration(ns: float) -> str:
    """``-32e6`` -> ``'−32 ms'``; ``0`` -> ``'±0 ns'``."""
    if ns == 0:
        return "±0 ns"
    text = units.duration(abs(ns))
    return ("+" if ns > 0 else "−") + text


def _evidence(e: Evidence) -> str:
    name = short_name(e.name, 40)
    if e.status == "added":
        return f"new {name} ×{e.count_after:g}"
    if e.status == "removed":
        return f"no {name} (was ×{e.count_before:g})"
    if e.count_before != e.count_after:
        return f"{name} ×{e.count_before:g}→×{e.count_after:g}"
    return f"{name} {signed_duration(e.delta_ns)}"


def verdict_line(w: Waterfall) -> str:
    """``threads+amp: step −32 ms (−23.0 %): gemm −41 ms (new …, no …), idle +3 ms``;
    ``B/sequential against A/sequential: ...`` when two sides are paired."""
    where = "device step" if w.side == "device" else "CPU step"
    rel = f" ({units.signed_percent(w.delta_ns / w.before_ns)})" if w.before_ns else ""
    parts = []
    for t in w.verdict_terms:
        text = f"{t.name} {signed_duration(t.delta_ns)}"
        if t.evidence:
            text += " (" + "; ".join(_evidence(e) for e in t.evidence) + ")"
        parts.append(text)
    against = f" against {w.against}" if w.against else ""
    head = f"{w.label}{against}: {where} {signed_duration(w.delta_ns)}{rel}"
    return head + (": " + ", ".join(parts) if parts else ": no term moved")


def withheld_line(name: str, conflict: str) -> str:
    """What stands in for ``name``'s explanation where its profiled steps contradict its
    timing (``noise.explanation_conflict``, the reason run.json keeps): printed by the
    console and summary.md, and said by report.html in place of the waterfall."""
    return (f"{name}: explanation withheld: {conflict}; rerun with more --profile-active "
            "steps (or on a quieter machine)")


def is_withheld(s: StrategyResult) -> bool:
    """Whether run.json withholds the strategy's explanation (in a file written before
    ``explanation_withheld``: whether its line is ``withheld_line``'s)."""
    return s.explanation_withheld is not None or bool(s.verdict) and str(s.verdict).startswith(
        f"{s.name}: explanation withheld: ")


def strategy_verdict(s: StrategyResult) -> str | None:
    """A run's strategy against its point's baseline in a line, from run.json's figures:
    its step change term by term, or why the explanation is withheld (a file written
    before the figures: its line as written; None: no verdict)."""
    if s.explanation_withheld is not None:
        return withheld_line(s.name, s.explanation_withheld)
    if s.explanation is not None:
        try:
            return verdict_line(msgspec.convert(s.explanation, Waterfall))
        except msgspec.ValidationError:  # a run.json edited by hand: no line, not a crash
            return s.verdict
    return s.verdict


def unpaired_line(c: Comparison) -> str:
    """The traces of two paired sides that have no match on the other side."""
    return ("on one side only, not compared with the other side: "
            + ", ".join(c.unpaired))


def verdict_lines(c: Comparison) -> list[str]:
    """One verdict per trace against the baseline."""
    if c.steps is None:
        return []
    return [verdict_line(w) for w in c.steps.waterfalls if w is not None]


def per_step_cell(r: DiffRow, i: int) -> str:
    if r.counts[i] == 0:
        return "-"
    return f"{units.duration(r.ns_per_step[i])} ×{r.count_per_step[i]:g}"


def delta_cell(r: DiffRow, i: int) -> str:
    d = r.delta_ns_per_step[i]
    if d is None:
        return ""
    return signed_duration(d) + _STATUS_TAG[r.status[i]]


def shape_label(r: DiffRow, width: int) -> str:
    """The tensor inputs, ``2×576×1×1 bf16, 144×576×1×1 f32`` (scalars and empty
    inputs left out), cut to ``width``; ``(no shapes)`` when none were recorded."""
    if not r.input_dims:
        return "(no shapes)"
    dims = msgspec.json.decode(r.input_dims)
    types = msgspec.json.decode(r.input_types) if r.input_types else []
    parts = []
    for i, d in enumerate(dims if isinstance(dims, list) else []):
        if not isinstance(d, list) or not d:
            continue
        size = "×".join(str(x) for x in d) if all(type(x) is int for x in d) else \
            f"{len(d)} tensors"
        kind = types[i] if i < len(types) and isinstance(types[i], str) else ""
        parts.append(f"{size} {_DTYPES.get(kind, kind)}".rstrip())
    text = ", ".join(parts) or "(scalars only)"
    return text if len(text) <= width else text[: max(width - 1, 1)] + "…"


_DTYPES = {"float": "f32", "double": "f64", "c10::BFloat16": "bf16", "c10::Half": "f16",
           "long int": "i64", "int": "i32", "bool": "bool", "TensorList": ""}


