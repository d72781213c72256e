"""The first lines of a run's report, shared by the console, summary.md and report.html:
the answer (which strategy is fastest beyond noise, by how much and why, or that none
is) and, when other work competed with the timing, one line saying what and how much.
Words only: the verdicts, the best strategy and the contention come computed."""

from __future__ import annotations

from profiler_kit import results
from profiler_kit.noise import NOT_JUDGED
from profiler_kit.render.wording import speedup_noise, units
from profiler_kit.render.wording.diff_views import strategy_verdict
from profiler_kit.results import OK, RunResult, StrategyResult

QUIET_ADVICE = ("rerun on a quiet machine, or give profkit cores of its own "
                "(taskset -c), for verdicts that hold")


def contention_line(result: RunResult) -> str | None:
    """``other processes used 1.7 of 2 cores during 9 of 12 rounds: python (pytest) 1.2;
    ...``, or None when nothing competed."""
    c = result.contention
    if c is None or not c.mattered:
        return None
    parts = []
    if c.contended_rounds:
        text = (f"other processes used {c.others_cores:.1f} of {c.cores} cores during "
                f"{c.contended_rounds} of {c.rounds} timed rounds")
        if c.busiest:
            text += ": " + ", ".join(f"{x.name} {x.cores:.1f}" for x in c.busiest)
        parts.append(text)
    if c.steal_cores >= 0.05:
        parts.append(f"the hypervisor gave {c.steal_cores:.1f} of {c.cores} cores to other "
                     "machines (steal time)")
    if c.gpu_others:
        parts.append("other processes used the GPU: " + ", ".join(c.gpu_others))
    if c.gpu_throttle:
        parts.append("the GPU's clocks were throttled (" + ", ".join(c.gpu_throttle) + ")")
    if c.frequency_scaled:
        parts.append("the CPU's frequency was scaled (its governor or a lowered clock)")
    return "; ".join(parts) + "; " + QUIET_ADVICE


def _why(s: StrategyResult) -> str:
    verdict = strategy_verdict(s)
    return verdict.removeprefix(f"{s.name}: ") if verdict else ""


def answer(result: RunResult, point: str) -> str:
    """One line: the strategy that is fastest beyond noise, its speedup and interval and
    the one-line why from its trace; or that none is, with the fastest's figure and why
    it was not judged."""
    rows = result.at(point)
    timed = [s for s in rows if s.status == OK and s.stats]
    where = f" [{point}]" if point else ""
    if not timed:
        return f"Answer{where}: no strategy was timed"
    top = results.best(rows)
    base = result.baseline
    if top is not None and top.noise is None:
        if len(timed) == 1:
            return f"Answer{where}: only {top.name} was timed"
        return f"Answer{where}: {top.name} (the baseline) is fastest: every other " \
               "strategy is slower beyond noise"
    if top is not None:
        text = (f"Answer{where}: {top.name} is fastest, {units.speedup(top.speedup)} "
                f"{base}'s throughput, {speedup_noise.interval(top.noise)}")
        why = _why(top)
        return text + (f"; why: {why}" if why else "")
    fastest = max(timed, key=lambda s: s.speedup if s.speedup is not None else 0.0)
    # the fastest that is faster than the baseline beyond noise, though a faster one may
    # not be judged (it is then a rival, never passed over)
    ahead = [s for s in timed if s.noise is not None and s.noise.beyond_noise
             and (s.noise.ci_low_fraction or 0) > 0]
    lead = max(ahead, key=lambda s: s.speedup or 0.0) if ahead else None
    rivals: list[StrategyResult] = []
    if lead is not None and lead.noise is not None:
        low = lead.noise.ci_low_fraction or 0.0
        rivals = [s for s in timed if s is not lead and s.name != base and (
            s.noise is None or s.noise.ci_high_fraction is None
            or s.noise.ci_high_fraction >= low)]
    if lead is not None and rivals:  # faster than the baseline beyond noise, not clear
        return (f"Answer{where}: {lead.name} is faster than {base} beyond noise, "
                f"{units.speedup(lead.speedup)} {base}'s throughput, "
                f"{speedup_noise.interval(lead.noise)}, but not clearly the fastest: "
                f"{_names([s.name for s in rivals])} may be as fast ({_overlap(rivals)})")
    text = f"Answer{where}: no strategy is faster than {base} beyond noise"
    if fastest.name != base and fastest.noise is not None:
        text += (f"; the fastest, {fastest.name} at {units.speedup(fastest.speedup)}, is "
                 f"{speedup_noise.interval(fastest.noise)}")
    return text


def _overlap(rivals: list[StrategyResult]) -> str:
    """Why rivals may be as fast: their intervals reach the leader's, or they were not
    judged (their interval is no verdict)."""
    unjudged = sum(s.noise is None or s.noise.state == NOT_JUDGED for s in rivals)
    if not unjudged:
        return "the intervals overlap"
    return NOT_JUDGED if unjudged == len(rivals) else f"{NOT_JUDGED}, or the intervals overlap"


def _names(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" or {names[-1]}"


def oversubscribed(result: RunResult, point: str) -> list[str]:
    """``threads: oversubscribed in 3 of 3 rounds: 4 busy threads ... on 2 cores``."""
    return [f"{s.name}: {s.oversubscription}" for s in result.at(point)
            if s.status == OK and s.oversubscription]
