"""The rules that fired, ranked by predicted gain, each with its evidence, and the notes:
the rules that could not run and why, and those held back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html import trace_charts
from profiler_kit.render.html.markup import e
from profiler_kit.render.json.plain import recommendations
from profiler_kit.render.sections.base import Body, Page, Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines, Styled
from profiler_kit.render.wording.notes import said
from profiler_kit.render.wording.recommendation_gain import gain_line
from profiler_kit.render.wording.trace_words import missing_gpu_line, recommendation_lines


def notes(a: TraceAnalysis) -> list[str]:
    """Every note, the line of GPU work gone unrecorded first (the JSON's and the
    report's; the console and Markdown say that line above, under the steps)."""
    m = a.gpu_activity_missing
    return ([missing_gpu_line(m)] if m is not None else []) + said(a.notes)


def markdown_list(title: str, items: Sequence[tuple[str, str]],
                  notes_said: Sequence[str]) -> list[str]:
    """Recommendations in Markdown under ``title``: each its head in bold and its body,
    then the notes (a trace's and a job's)."""
    out = [f"### {title}", ""]
    if not items:
        out.append("None fired.")
    out += [f"- **{head}**  \n  {body}" for head, body in items]
    return out + [f"- _note: {n}_" for n in notes_said] + [""]


def html_list(items: Sequence[tuple[str, str | None, str]], notes_said: Sequence[str]) -> str:
    """Recommendations in the report: each its head, its gain line (where it has one) and
    its body, then the notes (a trace's and a job's)."""
    out = [f'<li><div class="head">{e(head)}</div>'
           + (f"<div><strong>{e(gain)}</strong></div>" if gain else "")
           + f'<div class="evidence">{e(body)}</div></li>' for head, gain, body in items]
    out += [f'<li class="muted">note: {e(n)}</li>' for n in notes_said]
    return '<ul class="recs">' + "".join(out or ['<li class="muted">None fired.</li>']) + "</ul>"


class Recommendations(Presenter):
    fields = ("recommendations", "held_back", "notes")
    order = 280

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        pieces = [Styled("Recommendations\n" if a.recommendations
                         else "Recommendations: none fired.\n", "bold")]
        for i, r in enumerate(a.recommendations, 1):
            head, body = recommendation_lines(r)
            pieces.append(Styled(f"{i}. {head}\n", "yellow"))
            gain = gain_line(r)
            if gain is not None:
                pieces.append(Styled(f"   {gain}\n", "bold"))
            pieces.append(Styled(f"   {body}\n"))
        pieces += [Styled(f"note: {n}\n", "dim") for n in said(a.notes)]
        return [Lines(tuple(pieces))]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        items = []
        for r in a.recommendations:
            head, body = recommendation_lines(r)
            gain = gain_line(r)
            items.append((head, (f"_{gain}_  \n  " if gain else "") + body))
        return markdown_list("Recommendations", items, said(a.notes))

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"recommendations": recommendations(a.recommendations),
                "held_back": recommendations(a.held_back), "notes": notes(a)}

    def body(self, page: Page) -> Body | None:
        parts = []
        for a in page.analyses:
            items = [(head, gain_line(r), body) for r in a.recommendations
                     for head, body in [recommendation_lines(r)]]
            parts.append(f"<h3>{e(trace_charts.name_of(a))}</h3>"
                         + html_list(items, notes(a)))
        return Body("recommendations", "Recommendations", "\n".join(parts))
