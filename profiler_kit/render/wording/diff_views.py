"""Op/kernel differences, step-time waterfalls and verdict lines, for the console and
Markdown. Formats, never computes: every number comes from the comparison."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from rich import box
from rich.table import Table
from rich.text import Text

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.diffs.op_diff import DiffRow
from profiler_kit.analysis.diffs.step_diff import Evidence, Waterfall
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name

_TABLE = {"box": box.SIMPLE_HEAD, "pad_edge": False, "title_justify": "left",
          "title_style": "bold"}
_STATUS_TAG = {"added": " new", "removed": " gone", "changed": "", "same": " =", "absent": "",
               "baseline": ""}
_LAUNCHED_SHOWN = 3  # kernels listed under each op
_BAR = 16  # widest waterfall bar, in characters


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
    timing (``noise.explanation_conflict``): run.json's verdict, printed by the console
    and summary.md, and said by report.html in place of the waterfall."""
    return (f"{name}: explanation withheld: {conflict}; rerun with more --profile-active "
            "steps (or on a quieter machine)")


def is_withheld(name: str, verdict: str | None) -> bool:
    """Whether ``verdict`` (run.json's) is ``withheld_line``'s for ``name``."""
    return bool(verdict) and str(verdict).startswith(f"{name}: explanation withheld: ")


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


def diff_table(c: Comparison, kind: str, top: int, width: int = 120) -> Table | None:
    """The ``top`` kernels (``kind="kernels"``) or ops (``"ops"``) whose time per step
    changed most; an op lists the kernels it launched below it."""
    if c.ops is None:
        return None
    rows: Sequence[DiffRow] = c.ops.kernels if kind == "kernels" else c.ops.ops
    if not rows:
        return None
    what = "GPU kernels" if kind == "kernels" else "CPU ops"
    base = c.labels[c.baseline]
    t = Table(title=Text(f"{what} that changed most, per step (baseline: {base}; "
                         "new, gone, = unchanged)"), **_TABLE)
    name_w = _diff_columns(t, c, "name", width)
    for r in rows[:top]:
        _diff_row(t, c, r, short_name(r.name, name_w))
        if kind == "ops":
            for k in r.launched[:_LAUNCHED_SHOWN]:
                _diff_row(t, c, k, "  └ " + short_name(k.name, name_w - 4), dim=True)
    t.caption = (f"{len(rows):,} names; per step = total over "
                 + ", ".join(f"{n} {'step' if n == 1 else 'steps'}"
                             if w == "steps" else "the whole trace"
                             for n, w in zip(c.ops.steps, c.ops.windows, strict=True)))
    t.caption_justify = "left"
    return t


def _diff_columns(t: Table, c: Comparison, first: str, width: int) -> int:
    """The diff tables' columns: ``first`` (names), class, then each trace and its Δ against
    the baseline; returns the width left for names."""
    n = len(c.labels)
    name_w = max(24, width - 18 - 24 * n - 17 * (n - 1))
    t.add_column(first, overflow="ellipsis", no_wrap=True, max_width=name_w)
    t.add_column("class", no_wrap=True, min_width=14)
    for i, label in enumerate(c.labels):
        t.add_column(Text(label + (" (base)" if i == c.baseline else "")), justify="right",
                     no_wrap=True, min_width=17, overflow="fold")
        if i != c.baseline:
            t.add_column("Δ", justify="right", no_wrap=True, min_width=14)
    return name_w


def shape_table(c: Comparison, top: int, width: int = 120) -> Table | Text | None:
    """The ``top`` (op, input shapes, dtypes) whose time per step changed most; a line
    naming the traces without recorded shapes when there is nothing to show."""
    if c.ops is None:
        return None
    if not c.ops.op_shapes:
        missing = [label for label, ok in zip(c.labels, c.ops.shapes_recorded, strict=True)
                   if not ok]
        return Text("CPU ops by input shape: no input shapes recorded in "
                    + ", ".join(missing) + " (profile with record_shapes=True)\n")
    base = c.labels[c.baseline]
    t = Table(title=Text("CPU ops by input shape that changed most, per step (baseline: "
                         f"{base}; new, gone, = unchanged)"), **_TABLE)
    name_w = _diff_columns(t, c, "op (tensor input shapes, dtypes)", width)
    for r in c.ops.op_shapes[:top]:
        _diff_row(t, c, r, short_name(r.name, name_w) + "\n  " + shape_label(r, name_w - 2))
    t.caption = f"{len(c.ops.op_shapes):,} (op, shapes) pairs; full shapes in --json"
    t.caption_justify = "left"
    return t


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


def _diff_row(t: Table, c: Comparison, r: DiffRow, name: str, dim: bool = False) -> None:
    cells: list[str] = [name, r.klass]
    for i in range(len(c.labels)):
        cells.append(per_step_cell(r, i))
        if i != c.baseline:
            cells.append(delta_cell(r, i))
    style = "dim" if dim else ""
    t.add_row(*(Text(x, style=style) for x in cells))


def waterfall_table(w: Waterfall, baseline: str) -> Table:
    """One trace's step-time change against the baseline, term by term, with a bar each."""
    side = "device side" if w.side == "device" else "CPU side"
    t = Table(title=Text(f"Step time, {w.label} against {baseline} ({side}, per step)"),
              **_TABLE)
    for col, just in (("term", "left"), (baseline, "right"), (w.label, "right"),
                      ("change", "right"), ("", "left")):
        t.add_column(Text(col), justify=just, no_wrap=True)  # type: ignore[arg-type]
    scale = max((abs(x.delta_ns) for x in w.terms), default=0.0)
    for term in w.terms:
        before = term.before_ns if term.name != "overlap" else -term.before_ns
        after = term.after_ns if term.name != "overlap" else -term.after_ns
        t.add_row(Text(term.name if term.name != "overlap" else "overlap (−)"),
                  Text(signed_duration(before) if term.name == "overlap"
                       else units.duration(before)),
                  Text(signed_duration(after) if term.name == "overlap"
                       else units.duration(after)),
                  Text(signed_duration(term.delta_ns),
                       style="green" if term.delta_ns < 0 else "red" if term.delta_ns else ""),
                  Text(_bar(term.delta_ns, scale),
                       style="green" if term.delta_ns < 0 else "red"))
    t.add_row(Text("step", style="bold"), Text(units.duration(w.before_ns), style="bold"),
              Text(units.duration(w.after_ns), style="bold"),
              Text(signed_duration(w.delta_ns), style="bold"), Text(""))
    return t


def _bar(delta: float, scale: float) -> str:
    if not scale or not delta:
        return ""
    n = max(1, round(_BAR * abs(delta) / scale))
    return ("◀" if delta < 0 else "▶") * n
