"""The words for a run's speedup noise verdicts, shared by the console, summary.md and
report.html: a mark beside the speedup, the interval, and the legend naming the model
that judged them. Formats only; the verdicts come computed in run.json."""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.noise import (
    BEYOND_NOISE,
    INCONCLUSIVE,
    NOT_JUDGED,
    PAIRED_BY_ROUND,
    WITHIN_NOISE,
    WITHIN_RUN,
    NoiseVerdict,
)
from profiler_kit.render.wording import units
from profiler_kit.results import OK, StrategyResult

# the mark beside a speedup, one per state: a beyond-noise speedup reads as it is
MARKS = {BEYOND_NOISE: "", WITHIN_NOISE: "~", INCONCLUSIVE: "±", NOT_JUDGED: "?"}
WITHIN = MARKS[WITHIN_NOISE]
UNKNOWN = MARKS[NOT_JUDGED]


def mark(n: NoiseVerdict | None) -> str:
    """The mark of ``n``'s state (``MARKS``); "" without a verdict (the baseline)."""
    return "" if n is None else MARKS[n.state]


def speedup(s: StrategyResult) -> str:
    """``1.04x ~``: the speedup with its mark."""
    text = units.speedup(s.speedup)
    m = mark(s.noise) if s.speedup is not None else ""
    return f"{text} {m}" if m else text


def interval(n: NoiseVerdict | None) -> str:
    """``within noise [-3 %, +5 %]``, ``inconclusive [...]``, ``beyond noise [...]``, or
    ``not judged, unstable (why)``: the state's word first, as the mark says."""
    if n is None:
        return "-"
    state = n.state
    if state == NOT_JUDGED:
        head = f"{NOT_JUDGED}, {n.doubt}" if n.doubt else NOT_JUDGED
        return f"{head} ({n.reason})" if n.reason else head
    return (f"{state} [{units.signed_percent(n.ci_low_fraction)}, "
            f"{units.signed_percent(n.ci_high_fraction)}]")


def legend(rows: Sequence[StrategyResult], baseline: str, best_found: bool) -> str:
    """One line: which model judged the speedups at this point, its margin, each state's
    word and mark, and why no strategy is called best where none is."""
    verdicts = [s.noise for s in rows if s.noise is not None]
    if not verdicts:
        return ""
    parts = []
    paired = [n for n in verdicts if n.method == PAIRED_BY_ROUND]
    within = [n for n in verdicts if n.method == WITHIN_RUN]
    if paired:
        rounds = min((s.rounds for s in rows if s.noise is not None
                      and s.noise.method == PAIRED_BY_ROUND), default=0)
        parts.append(f"noise paired by round ({rounds} rounds: 95 % t interval of the "
                     f"per-round ratio of medians, so drift both share cancels), margin "
                     f"±{_margin(paired)}")
    if within:
        parts.append(f"noise within one run (95 % bootstrap interval of the median's "
                     f"change; run-to-run noise unknown, --repeats N measures it), margin "
                     f"±{_margin(within)}")
    text = (f"speedup against {baseline}, {'; '.join(parts)}; unmarked: {BEYOND_NOISE} "
            f"(the interval lies beyond the margin), {MARKS[WITHIN_NOISE]} {WITHIN_NOISE} "
            f"(it lies inside), {MARKS[INCONCLUSIVE]} {INCONCLUSIVE} (it crosses the "
            f"margin), {MARKS[NOT_JUDGED]} {NOT_JUDGED} (unstable: the rounds disagree; "
            "contended: the slower side ran beside more other work)")
    timed = [s for s in rows if s.status == OK and s.stats]
    if not best_found and len(timed) > 1:
        text += "; no strategy is best beyond noise"
    return text + "."


def _margin(verdicts: Sequence[NoiseVerdict]) -> str:
    return units.percent(verdicts[0].min_effect_fraction, 0)
