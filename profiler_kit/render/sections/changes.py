"""What changed between the compared traces: the step-time waterfalls and verdicts, the
kernels, ops and shapes whose time per step changed most, and the predictions checked.

One presenter for the text formats, after the metrics table, because they place these
parts in different orders (the console's verdict last, where the eye lands, Markdown's
first; the JSON's ops before the steps). The report draws the waterfalls earlier on its
page (:class:`StepChange`) and the predictions under the metrics table.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from profiler_kit.analysis.compare import Comparison
from profiler_kit.analysis.diffs.op_diff import DiffRow
from profiler_kit.analysis.diffs.step_diff import Term, Waterfall
from profiler_kit.render.html import diff_charts
from profiler_kit.render.html.figures import Chart
from profiler_kit.render.html.markup import e
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Body, Page, Presenter, View
from profiler_kit.render.sections.blocks import (
    TEXT,
    Block,
    Cell,
    Column,
    Grid,
    Lines,
    Styled,
)
from profiler_kit.render.sections.comparison import markdown_groups
from profiler_kit.render.wording import prediction_checks, units
from profiler_kit.render.wording.diff_views import (
    delta_cell,
    per_step_cell,
    shape_label,
    signed_duration,
    unpaired_line,
    verdict_line,
    verdict_lines,
)
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.notes import say

_LAUNCHED_SHOWN = 3  # kernels listed under each op in the console

_BAR = 16  # widest waterfall bar, in characters
SHAPE_HEAD = "op (tensor input shapes, dtypes)"
DELTA = "Δ"  # a trace's change against the baseline, in the diff tables


class StepChange(Presenter):
    """Why the step time differs: a waterfall per compared trace, or why none is drawn
    (said where the waterfall would be, as the console and summary.md say it)."""
    order = 130

    def charts(self, page: Page) -> list[Chart]:
        return diff_charts.waterfall_charts(page.comparison, page.withheld)

    def body(self, page: Page) -> Body | None:
        """The verdicts (of the waterfalls drawn) and the traces on one side only, as the
        console says them; for a waterfall withheld, what is said instead."""
        c = page.comparison
        falls = [] if c is None or c.steps is None else c.steps.waterfalls
        paras = [f"<p><strong>{e(verdict_line(w))}</strong></p>" for w in falls
                 if w is not None and w.label not in page.withheld]
        paras += [f'<p class="withheld">{e(line)}</p>'
                  for line in dict.fromkeys(page.withheld.values())]
        if c is not None and c.unpaired:
            paras.append(f'<p class="muted">{e(unpaired_line(c))}</p>')
        return Body(None, diff_charts.STEP_CHANGE, "\n".join(paras)) if paras else None


class WhatChanged(Presenter):
    """The step-time waterfalls and verdicts, the op and kernel differences (from each
    trace's op and kernel names per step, ``names``, which no format writes as they are)
    and the predictions checked."""

    fields = ("names",)
    order = 275

    def comparison_console(self, c: Comparison, view: View) -> list[Block]:
        blocks: list[Block] = []
        if c.steps is not None:
            base = c.labels[c.baseline]
            blocks += [waterfall_table(w, w.against or base) for w in c.steps.waterfalls
                       if w is not None]
        for kind in ("kernels", "ops"):
            grid = diff_table(c, kind, view.top, view.width)
            if grid is not None:
                blocks.append(grid)
        if view.by_shape:
            shapes = shape_table(c, view.top, view.width)
            if shapes is not None:
                blocks.append(shapes)
        if c.predictions:
            blocks.append(prediction_table(c))
        lines = verdict_lines(c)
        if lines:
            blocks.append(Lines((Styled("Verdict\n"), *(Styled(f"{x}\n") for x in lines)),
                                "bold"))
        if c.unpaired:
            blocks.append(Lines.of(unpaired_line(c) + "\n", "dim"))
        return blocks

    def comparison_markdown(self, c: Comparison, view: View) -> list[str]:
        out: list[str] = []
        lines = verdict_lines(c)
        if lines:
            out += ["## Verdict", ""] + [f"- {line}" for line in lines] + [""]
        if c.steps is not None:
            base = c.labels[c.baseline]
            for w in c.steps.waterfalls:
                if w is not None:
                    out += _markdown_waterfall(w, w.against or base)
        if c.ops is not None:
            groups = markdown_groups(c)
            for kind, rows in (("kernels", c.ops.kernels), ("ops", c.ops.ops),
                               ("shapes", c.ops.op_shapes if view.by_shape else ())):
                if rows:
                    out += _markdown_diff(c, kind, rows, view.top, groups)
            if view.by_shape and not c.ops.op_shapes:
                out += [_no_shapes_line(c), ""]
        if c.predictions:
            out += ["### Predicted against measured", "", prediction_checks.title(c), ""]
            out += table(prediction_checks.HEAD, prediction_checks.rows(c))
        if c.unpaired:
            out += [f"_{unpaired_line(c)}_", ""]
        return out

    def comparison_json(self, c: Comparison) -> dict[str, Any]:
        falls = [None if w is None else {**plain(w), "verdict": verdict_line(w)}
                 for w in (c.steps.waterfalls if c.steps else ())]
        return {
            "ops": plain(c.ops),
            "steps": None if c.steps is None else {
                "baseline": c.labels[c.steps.baseline],
                "side": c.steps.side,
                "waterfalls": falls,
            },
            "verdicts": [f["verdict"] for f in falls if f],
            "unpaired": list(c.unpaired),
            "predictions": [{**plain(p), "caveat": say(p.caveat) if p.caveat else None}
                            for p in c.predictions],
        }


def _side(w: Waterfall) -> str:
    return "device side" if w.side == "device" else "CPU side"


def _term_cells(term: Term) -> tuple[str, str, str, str]:
    """A waterfall term's name, time before and after, and change: the overlap, which
    the step's time subtracts, as a negative time."""
    if term.name == "overlap":
        return ("overlap (−)", signed_duration(-term.before_ns),
                signed_duration(-term.after_ns), signed_duration(term.delta_ns))
    return (term.name, units.duration(term.before_ns), units.duration(term.after_ns),
            signed_duration(term.delta_ns))


def _markdown_waterfall(w: Waterfall, ref: str) -> list[str]:
    rows = [list(_term_cells(x)) for x in w.terms]
    rows.append(["**step**", units.duration(w.before_ns), units.duration(w.after_ns),
                 signed_duration(w.delta_ns)])
    return [f"### Step time, {w.label} against {ref} ({_side(w)}, per step)", ""] + table(
        ["term", ref, w.label, "change"], rows)


def _markdown_diff(c: Comparison, kind: str, rows: Sequence[DiffRow], top: int,
                   groups: Sequence[tuple[int, ...]]) -> list[str]:
    """The kernels, ops (``kind``) or ops by input shape (``"shapes"``) that changed
    most, a table per group of traces."""
    what = {"kernels": "GPU kernels", "ops": "CPU ops",
            "shapes": "CPU ops by input shape"}[kind]
    first = SHAPE_HEAD if kind == "shapes" else "name"
    out = [f"### {what} that changed most, per step", ""]
    for group in groups:
        header = [first, "class"]
        for i in group:
            header += [_trace_head(c, i)] + ([DELTA] if i != c.baseline else [])
        out += table(header, [[_markdown_name(r, kind), r.klass, *_trace_cells(c, r, group)]
                              for r in rows[:top]])
    return out


def _markdown_name(r: DiffRow, kind: str) -> str:
    name = f"`{short_name(r.name, 60)}`"
    return f"{name} {shape_label(r, 60)}" if kind == "shapes" else name


def diff_table(c: Comparison, kind: str, top: int, width: int = 120) -> Grid | None:
    """The ``top`` kernels (``kind="kernels"``) or ops (``"ops"``) whose time per step
    changed most; an op lists the kernels it launched below it."""
    if c.ops is None:
        return None
    rows: Sequence[DiffRow] = c.ops.kernels if kind == "kernels" else c.ops.ops
    if not rows:
        return None
    what = "GPU kernels" if kind == "kernels" else "CPU ops"
    name_w = _name_width(c, width)
    body = []
    for r in rows[:top]:
        body.append(_diff_row(c, r, short_name(r.name, name_w)))
        if kind == "ops":
            body += [_diff_row(c, k, "  └ " + short_name(k.name, name_w - 4), dim=True)
                     for k in r.launched[:_LAUNCHED_SHOWN]]
    caption = (f"{len(rows):,} names; per step = total over "
               + ", ".join(f"{n} {'step' if n == 1 else 'steps'}"
                           if w == "steps" else "the whole trace"
                           for n, w in zip(c.ops.steps, c.ops.windows, strict=True)))
    return Grid(Styled(f"{what} that changed most, per step (baseline: "
                       f"{c.labels[c.baseline]}; new, gone, = unchanged)"),
                _diff_columns(c, "name", name_w), tuple(body), caption, caption_left=True,
                fit=_diff_fit(c), repeat=2, joined=(DELTA,))


def shape_table(c: Comparison, top: int, width: int = 120) -> Block | None:
    """The ``top`` (op, input shapes, dtypes) whose time per step changed most; a line
    naming the traces without recorded shapes when there is nothing to show."""
    if c.ops is None:
        return None
    if not c.ops.op_shapes:
        return Lines.of(_no_shapes_line(c) + "\n")
    name_w = _name_width(c, width)
    body = tuple(_diff_row(c, r, short_name(r.name, name_w) + "\n  "
                           + shape_label(r, name_w - 2)) for r in c.ops.op_shapes[:top])
    return Grid(Styled("CPU ops by input shape that changed most, per step (baseline: "
                       f"{c.labels[c.baseline]}; new, gone, = unchanged)"),
                _diff_columns(c, SHAPE_HEAD, name_w), body,
                f"{len(c.ops.op_shapes):,} (op, shapes) pairs; full shapes in --json",
                caption_left=True, fit=_diff_fit(c), repeat=2, joined=(DELTA,))


def _no_shapes_line(c: Comparison) -> str:
    assert c.ops is not None
    missing = [label for label, ok in zip(c.labels, c.ops.shapes_recorded, strict=True)
               if not ok]
    return ("CPU ops by input shape: no input shapes recorded in " + ", ".join(missing)
            + " (profile with record_shapes=True)")


def _name_width(c: Comparison, width: int) -> int:
    """The width left for names beside each trace's column and its Δ."""
    n = len(c.labels)
    return max(24, width - 18 - 24 * n - 17 * (n - 1))


def _diff_columns(c: Comparison, first: str, name_w: int) -> tuple[Column, ...]:
    """The diff tables' columns: ``first`` (names), class, then each trace and its Δ against
    the baseline."""
    columns = [Column(first, no_wrap=True, max_width=name_w),
               Column("class", no_wrap=True, min_width=14)]
    for i in range(len(c.labels)):
        columns.append(Column(_trace_head(c, i), justify="right", no_wrap=True, min_width=17,
                              overflow="fold"))
        if i != c.baseline:
            columns.append(Column(DELTA, justify="right", no_wrap=True, min_width=14))
    return tuple(columns)


def _diff_fit(c: Comparison) -> dict[str, str]:
    """How the diff tables break on a narrow console: the traces' labels and their times
    as text; the names (already cut to their width), the class and each Δ stay whole,
    and the traces that do not fit go on below, after the name and class again."""
    return {_trace_head(c, i): TEXT for i in range(len(c.labels))}


def _diff_row(c: Comparison, r: DiffRow, name: str, dim: bool = False) -> tuple[Cell, ...]:
    style = "dim" if dim else ""
    return tuple(Styled(x, style)
                 for x in (name, r.klass, *_trace_cells(c, r, range(len(c.labels)))))


def _trace_head(c: Comparison, i: int) -> str:
    """A trace's column in the diff tables: its label, the baseline's marked."""
    return c.labels[i] + (" (base)" if i == c.baseline else "")


def _trace_cells(c: Comparison, r: DiffRow, traces: Iterable[int]) -> list[str]:
    """``r``'s time per step in each of ``traces`` and, but for the baseline, its Δ."""
    cells = []
    for i in traces:
        cells.append(per_step_cell(r, i))
        if i != c.baseline:
            cells.append(delta_cell(r, i))
    return cells


def waterfall_table(w: Waterfall, baseline: str) -> Grid:
    """One trace's step-time change against the baseline, term by term, with a bar each."""
    columns = tuple(Column(head, justify=just, no_wrap=True)
                    for head, just in (("term", "left"), (baseline, "right"),
                                       (w.label, "right"), ("change", "right"), ("", "left")))
    scale = max((abs(x.delta_ns) for x in w.terms), default=0.0)
    rows: list[tuple[Cell, ...]] = []
    for term in w.terms:
        name, before, after, change = _term_cells(term)
        colour = "green" if term.delta_ns < 0 else "red"
        rows.append((Styled(name), Styled(before), Styled(after),
                     Styled(change, colour if term.delta_ns else ""),
                     Styled(_bar(term.delta_ns, scale), colour)))
    rows.append((Styled("step", "bold"), Styled(units.duration(w.before_ns), "bold"),
                 Styled(units.duration(w.after_ns), "bold"),
                 Styled(signed_duration(w.delta_ns), "bold"), Styled("")))
    return Grid(Styled(f"Step time, {w.label} against {baseline} ({_side(w)}, per step)"),
                columns, tuple(rows), fit={baseline: TEXT, w.label: TEXT})


def _bar(delta: float, scale: float) -> str:
    if not scale or not delta:
        return ""
    n = max(1, round(_BAR * abs(delta) / scale))
    return ("◀" if delta < 0 else "▶") * n


def prediction_table(c: Comparison) -> Grid:
    """The baseline's what-if predictions against the other traces' measured steps."""
    return Grid("Predicted against measured",
                tuple(Column(head, justify="right" if i >= 2 else "left")
                      for i, head in enumerate(prediction_checks.HEAD)),
                tuple(tuple(row) for row in prediction_checks.rows(c)),
                prediction_checks.title(c), caption_left=True)
