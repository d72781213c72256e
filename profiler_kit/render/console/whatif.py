"""``profkit whatif``: the measured, replayed and predicted step of each trace, and the gain of
each change alone and of all together."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from profiler_kit.analysis.whatif.replay import Gain, TraceWhatIf
from profiler_kit.render.console.fit import WORDS, wrap
from profiler_kit.render.wording.notes import said, say
from profiler_kit.render.wording.units import duration
from profiler_kit.render.wording.whatif_notes import lacks

DELAY_CAUTION = 0.1  # fixed delays over this share of the steps' time get a caution line
_STEP = {"device": "device-side step", "cpu": "step (CPU span)", "window": "whole trace (no steps)"}


def _pct(fraction: float) -> str:
    return f"{fraction * 100:+.1f} %".replace("-", "−")


def _gain_row(g: Gain, width: int) -> str:
    more = f"{duration(g.gain_ns)} less" if g.gain_ns >= 0 else f"{duration(-g.gain_ns)} more"
    return (f"  {g.change:<{width}}  {duration(g.predicted_step_ns):>10}  "
            f"{_pct(-g.gain_pct):>9}  ({more})")


def trace_lines(t: TraceWhatIf) -> list[str]:
    w = t.result
    r = w.replay
    steps = f", median of {len(r.steps)} steps" if r.step != "window" and len(r.steps) > 1 \
        else ""
    lines = [f"{t.label}: {_STEP[r.step]}{steps}",
             f"  measured   {duration(r.measured_step_ns):>10}",
             f"  replayed   {duration(r.replayed_step_ns):>10}  error {r.step_error:.1%} "
             f"(median over steps), whole window {r.window_error:.1%}"
             + ("" if r.trusted else "  NOT TRUSTED")]
    if not r.trusted and r.untrusted_because:
        lines.append(f"  not trusted: {say(r.untrusted_because)}")
    for m in r.missing:
        lines.append(f"  missing dependency: {lacks(m.kind, m.events, m.wait_ns)} "
                     f"(kept as fixed delays)")
    if r.fixed_delay_share > DELAY_CAUTION:
        lines.append(f"  caution: the fixed delays of the steps' GPU work, summed over its "
                     f"streams, come to {r.fixed_delay_share:.0%} of the steps' time; the work "
                     f"held by them does not move with a change, so gains are a lower bound")
    if not w.gains:
        lines.append("  no change asked: the replay alone (see --kernels, --precision, "
                     "--cuda-graphs, --no-dataloader-wait, --no-sync, --overlap-comm)")
        return lines
    final = w.together or w.gains[0]
    lines.append(f"  predicted  {duration(r.predicted_step_ns):>10}  "
                 f"{_pct(-final.gain_pct)} against the replay")
    lines.append(f"  step {duration(r.measured_step_ns)} → {duration(r.predicted_step_ns)} "
                 f"predicted ({_pct(-final.gain_pct)})")
    rows = list(w.gains) + ([w.together] if w.together else [])
    width = max(len(g.change) for g in rows)
    lines.append(f"  {'change':<{width}}  {'step':>10}  {'gain':>9}")
    lines += [_gain_row(g, width) for g in rows]
    notes = [n for g in w.gains for n in said(g.notes)]
    if notes:
        lines.append("  what each change touched:")
        lines += [f"    {n}" for n in notes]
    return lines


def fold(line: str, width: int | None) -> list[str]:
    """``line`` broken at its spaces where it is wider than ``width`` (a number keeps its
    unit), the lines below it two spaces further in than it."""
    if not width or len(line) <= width:
        return [line]
    body = line.lstrip(" ")
    indent = line[:len(line) - len(body)]
    first, *rest = wrap(Text(body), max(width - len(indent) - 2, 20), WORDS).plain.split("\n")
    return [indent + first, *(f"{indent}  {r}" for r in rest)]


def report_lines(results: Sequence[TraceWhatIf], width: int | None = None) -> list[str]:
    """Every trace's lines; with ``width`` (the terminal's), a longer line goes on at
    word boundaries below itself."""
    out: list[str] = []
    for i, t in enumerate(results):
        if i:
            out.append("")
        out += [part for line in trace_lines(t) for part in fold(line, width)]
    return out
