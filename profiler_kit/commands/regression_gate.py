"""``--fail-on-regression PCT``: a CI gate on step time, for ``profkit compare`` and
``profkit diff``. Torch-free.

compare: of two run folders, each strategy of the second against the same strategy (and
sweep point) of the first, by its timed steps (run.json's rounds, not the few profiled
steps of its trace): slower by more than PCT at the median *and* beyond noise, judged
between runs (two rounds or more a side: Welch's interval of the round medians beyond
+-5 %) or, with one round a side, by the bootstrap within the runs beyond +-10 % (the
margin stands for the drift between runs that one round cannot show). A side whose
samples fall in two clusters, or two runs timed beside different other work, are not
judged and do not fail the gate (one line says why, as for diff). Traces without timed
samples, and any other traces, are gated against the baseline by their device-side (or
CPU) step time per step, the waterfall's total: a single trace a side carries no repeated
sample, so "beyond noise" there is beyond PCT itself, and the line names the waterfall
terms that moved most. Traces and strategies on one side only are named in one line
(``unpaired_line``) and not gated.
diff: every p50-p95 of every configuration, regressed when slower by more than PCT *and*
beyond noise by the diff's own verdict (between runs, with repeats on at least one side);
a change that could not be tested (percentiles only) counts when it passes PCT, and the
line says it was not tested. Where the diff judged but gave no verdict (one run a side,
or a doubt: a side's rounds disagree, or the runs ran beside different other work) the
gate does not fail on the change: one line says it could not judge it and why
(``diff_unjudged``), and the exit status stays 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import numpy as np

from profiler_kit.analysis.compare import Comparison
from profiler_kit.contention import BASELINE_SIDE, STRATEGY_SIDE, different, judged
from profiler_kit.contention import side as contention_of
from profiler_kit.ddp_benchmark.diff import ReportDiff
from profiler_kit.noise import (
    CONTENDED,
    NOT_TESTED,
    UNSTABLE,
    WITHIN_RUN,
    NoiseVerdict,
    clustered,
    doubted,
    percentile_verdict,
)
from profiler_kit.results import RunResult, StrategyResult

UNJUDGED_SHOWN = 3  # configurations the could-not-judge line names


def compare_regressions(c: Comparison, limit: float, timed: Sequence[str] = ()) -> list[str]:
    """One line per trace whose step time per step grew by more than ``limit``; the traces
    labelled in ``timed`` were gated on their timed steps instead (``timed_regressions``)."""
    from profiler_kit.render.wording.diff_views import verdict_line

    if c.steps is None:
        return []
    return [f"regression beyond {limit:.0%}: {verdict_line(w)}"
            for w in c.steps.waterfalls
            if w is not None and w.label not in timed and w.before_ns > 0
            and w.delta_ns / w.before_ns > limit]


class TimedGate(msgspec.Struct, frozen=True):
    """The gate on two runs' timed steps: what failed, what could not be judged, and the
    comparison labels (``<run folder>/<strategy>``) of the second run's strategies gated."""

    regressions: tuple[str, ...]
    unjudged: tuple[str, ...]
    gated: tuple[str, ...]


def timed_regressions(base: RunResult, test: RunResult, limit: float) -> TimedGate:
    """Each strategy of ``test`` with timed steps against the same strategy (and sweep
    point) of ``base``, by the median of its timed steps (see the module's docstring)."""
    before = {s.label: s for s in base.strategies if _timed(s)}
    failed, unjudged, gated = [], [], []
    for s in test.strategies:
        a = before.get(s.label)
        if a is None or not _timed(s):
            continue
        gated.append(f"{test.run_dir.name}/{s.label}")
        change = float(np.median(s.samples_ns)) / float(np.median(a.samples_ns)) - 1
        if change <= limit:
            continue
        v = _timed_verdict(a, s, change)
        what = (f"{test.run_dir.name}/{s.label} against {base.run_dir.name}/{a.label}: "
                f"median timed step {change:+.1%}")
        if v.beyond_noise:
            interval = f"[{v.ci_low_fraction:+.1%}, {v.ci_high_fraction:+.1%}]"
            failed.append(f"regression beyond {limit:.0%}: {what} (beyond noise, "
                          f"{interval}, {v.method})")
        elif v.beyond_noise is None:
            unjudged.append(f"regression gate could not judge {what}: "
                            f"{v.reason or 'no verdict'}; not failed")
    return TimedGate(tuple(failed), tuple(unjudged), tuple(gated))


def _timed(s: StrategyResult) -> bool:
    return s.status == "ok" and len(s.samples_ns) > 0


def _timed_verdict(a: StrategyResult, b: StrategyResult, change: float) -> NoiseVerdict:
    """Whether ``b``'s median step differs from ``a``'s beyond noise between two runs."""
    v = percentile_verdict(a.round_samples_ns, b.round_samples_ns, 50, within_one_run=True)
    for who, side in (("the first run", a), ("the second run", b)):
        why = clustered(side.round_samples_ns)
        if why:
            return doubted(v, UNSTABLE, f"{who} is unstable: {why}")
    if v.method == WITHIN_RUN:
        busy = [s for s in (contention_of(a.contention), contention_of(b.contention))
                if s is not None and s.contended_rounds]
        if busy:
            cores = max(s.cores for s in busy)
            used = " and ".join(f"{s.others_cores:.1f}" for s in busy)
            return doubted(v, CONTENDED, (
                f"other processes used {used} of {cores} cores while "
                f"{'the runs' if len(busy) == 2 else 'a run'} ran, and one round a side "
                "cannot tell their effect from a change; rerun on a quiet machine, or with "
                "--repeats 3"))
    return judged(v, different(a.contention, b.contention),
                  STRATEGY_SIDE if change < 0 else BASELINE_SIDE if change > 0 else None)


def unpaired_line(c: Comparison) -> str:
    """One line naming the traces that are on one side only, which the gate skips."""
    return "not gated, on one side only: " + ", ".join(c.unpaired)


def passed_line(limit: float) -> str:
    """The one line of a gate that did not fail: silence would not say it ran."""
    return f"no regression beyond {limit:.0%}: the regression gate passed"


def diff_regressions(d: ReportDiff, limit: float) -> list[str]:
    """One line per configuration with a p50-p95 slower by more than ``limit`` beyond noise."""
    lines = []
    for b in d.benchmarks:
        for c in b.configurations:
            worse = [p for p in c.percentiles
                     if p.change_fraction > limit and _counts(p.noise)]
            if not worse:
                continue
            parts = []
            for p in worse:
                tested = ("beyond noise" if p.noise.beyond_noise else
                          f"noise not tested: {p.noise.reason or 'no samples'}")
                parts.append(f"p{p.percentile} {p.change_fraction:+.1%} ({tested})")
            lines.append(f"regression beyond {limit:.0%}: {b.model} batch {b.batch_size} "
                         f"{c.configuration}: " + ", ".join(parts))
    return lines


def diff_unpaired(d: ReportDiff) -> str | None:
    """One line naming the benchmarks and configurations in one report only, which the
    gate skips; None when every one has its match."""
    found = [line.replace(": only in", " (only in") + ")" for line in d.unmatched]
    for b in d.benchmarks:
        found += [f"{b.model} batch {b.batch_size} {n} (only in the base report)"
                  for n in b.only_in_base]
        found += [f"{b.model} batch {b.batch_size} {n} (only in the test report)"
                  for n in b.only_in_test]
    return "not gated, on one side only: " + ", ".join(found) if found else None


def _counts(n: NoiseVerdict) -> bool:
    """A change over the margin fails the gate when it is beyond noise, or when noise could
    not be tested at all (percentiles only, no doubt)."""
    return n.beyond_noise is True or (n.beyond_noise is None and n.method == NOT_TESTED
                                      and not n.doubt)


def _unjudged(n: NoiseVerdict) -> bool:
    """No verdict where the diff had samples to judge: one run a side, or a doubt."""
    return n.beyond_noise is None and not _counts(n)


def diff_unjudged(d: ReportDiff, limit: float) -> str | None:
    """One line naming the configurations slower by more than ``limit`` that the gate
    could not judge (no verdict: one run a side, or a doubt), with the reasons; None when
    there are none. Such changes do not fail the gate."""
    found = []
    for b in d.benchmarks:
        for c in b.configurations:
            worse = [p for p in c.percentiles
                     if p.change_fraction > limit and _unjudged(p.noise)]
            if worse:
                top = max(worse, key=lambda p: p.change_fraction)
                found.append((f"{b.model} batch {b.batch_size} {c.configuration} "
                              f"p{top.percentile} {top.change_fraction:+.1%}",
                              top.noise.reason or "no verdict"))
    if not found:
        return None
    more = len(found) - UNJUDGED_SHOWN
    rest = f" and {more} more" if more > 0 else ""
    reasons = list(dict.fromkeys(r for _, r in found))
    if len(reasons) == 1:
        named = ", ".join(t for t, _ in found[:UNJUDGED_SHOWN]) + rest
        return (f"regression gate could not judge {named} (slower by more than "
                f"{limit:.0%}): {reasons[0]}; not failed")
    named = "; ".join(f"{t} ({r})" for t, r in found[:UNJUDGED_SHOWN]) + rest
    return (f"regression gate could not judge (slower by more than {limit:.0%}; not "
            f"failed): {named}")
