"""The comparison's tables for the console (rich): the ops and kernels that changed most,
the CPU ops by input shape, and each trace's step-time waterfall; their words come from
:mod:`profiler_kit.render.wording.diff_views`."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.table import Table
from rich.text import Text

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.diffs.op_diff import DiffRow
from profiler_kit.analysis.diffs.step_diff import Waterfall
from profiler_kit.render.wording import units
from profiler_kit.render.wording.diff_views import (
    delta_cell,
    per_step_cell,
    shape_label,
    signed_duration,
)
from profiler_kit.render.wording.names import short_name

_TABLE = {"box": box.SIMPLE_HEAD, "pad_edge": False, "title_justify": "left",
          "title_style": "bold"}

_LAUNCHED_SHOWN = 3  # kernels listed under each op

_BAR = 16  # widest waterfall bar, in characters

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
