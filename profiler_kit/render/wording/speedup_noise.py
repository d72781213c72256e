"""The words for a run's speedup noise verdicts, shared by the console, summary.md and
report.html: a mark beside the speedup, the interval, and the legend naming the model
that judged them. Formats only; the verdicts come computed in run.json."""

from __future__ import annotations

from collections.abc import Sequence

from profiler_kit.noise import PAIRED_BY_ROUND, WITHIN_RUN, NoiseVerdict
from profiler_kit.render.wording import units
from profiler_kit.results import OK, StrategyResult

WITHIN = "~"  # beside a speedup that is within noise
UNKNOWN = "?"  # beside a speedup whose noise could not be judged


def mark(n: NoiseVerdict | None) -> str:
    """"" beyond noise (or no verdict: the baseline), "~" within noise, "?" not judged."""
    if n is None or n.beyond_noise:
        return ""
    return WITHIN if n.beyond_noise is False else UNKNOWN


def speedup(s: StrategyResult) -> str:
    """``1.04x ~``: the speedup with its mark."""
    text = units.speedup(s.speedup)
    m = mark(s.noise) if s.speedup is not None else ""
    return f"{text} {m}" if m else text


def interval(n: NoiseVerdict | None) -> str:
    """``within noise [-3 %, +5 %]``, ``beyond noise [...]`` or why it was not judged."""
    if n is None:
        return "-"
    if n.beyond_noise is None:
        head = f"not judged, {n.doubt}" if n.doubt else "not judged"
        return f"{head} ({n.reason})" if n.reason else head
    word = "beyond noise" if n.beyond_noise else "within noise"
    text = (f"{word} [{units.signed_percent(n.ci_low_fraction)}, "
            f"{units.signed_percent(n.ci_high_fraction)}]")
    return f"{text}, {n.doubt} ({n.reason})" if n.doubt else text


def legend(rows: Sequence[StrategyResult], baseline: str, best_found: bool) -> str:
    """One line: which model judged the speedups at this point, its margin, what the marks
    mean, and why no strategy is called best where none is."""
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
                     f"per-round ratio of medians, so drift both share cancels): beyond "
                     f"noise when the interval lies beyond ±{_margin(paired)}")
    if within:
        parts.append(f"noise within one run (95 % bootstrap interval of the median's "
                     f"change; run-to-run noise unknown, --repeats N measures it): beyond "
                     f"noise when the interval lies beyond ±{_margin(within)}")
    text = (f"speedup against {baseline}, {'; '.join(parts)}; {WITHIN} within noise, "
            f"{UNKNOWN} not judged (unstable: the rounds disagree; contended: the slower "
            "side ran beside more other work)")
    timed = [s for s in rows if s.status == OK and s.stats]
    if not best_found and len(timed) > 1:
        text += "; no strategy is best beyond noise"
    return text + "."


def _margin(verdicts: Sequence[NoiseVerdict]) -> str:
    return units.percent(verdicts[0].min_effect_fraction, 0)
