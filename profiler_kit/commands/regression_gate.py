"""``--fail-on-regression PCT``: a CI gate on step time, for ``profkit compare`` and
``profkit diff``. Torch-free.

compare: each trace against the baseline, by its device-side (or CPU) step time per step,
the waterfall's total; a single trace a side carries no repeated sample, so "beyond noise"
there is beyond PCT itself, and the line names the waterfall terms that moved most. Of two
run folders (or two folders of the same strategies) each trace of the second is measured
against the same strategy's trace in the first, as the comparison pairs them; traces on
one side only are named in one line (``unpaired_line``) and not gated.
diff: every p50-p95 of every configuration, regressed when slower by more than PCT *and*
beyond noise by the diff's own verdict (between runs, with repeats on at least one side);
a change that could not be tested (percentiles only) counts when it passes PCT, and the
line says it was not tested. Where the diff judged but gave no verdict (one run a side,
or a doubt: a side's rounds disagree, or the runs ran beside different other work) the
gate does not fail on the change: one line says it could not judge it and why
(``diff_unjudged``), and the exit status stays 0.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from profiler_kit.analysis.compare import Comparison
from profiler_kit.ddp_benchmark.diff import ReportDiff
from profiler_kit.noise import NOT_TESTED, NoiseVerdict

UNJUDGED_SHOWN = 3  # configurations the could-not-judge line names


def percentage(upper: float) -> Callable[[str], float]:
    """An argparse type: ``5`` is 5 %, the fraction 0.05; from 0 up to ``upper`` %."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not 0 <= value < upper:
            raise argparse.ArgumentTypeError(f"{text} is not a percentage from 0 to {upper:g}")
        return value / 100
    return parse


def add_argument(p: argparse.ArgumentParser, what: str, unjudged: str = "") -> None:
    p.add_argument("--fail-on-regression", type=percentage(1000), metavar="PCT",
                   help=f"exit 1 when {what} is slower than the baseline by more than PCT %% "
                        "(beyond noise where noise can be judged), with one line naming "
                        f"what regressed; exit 0 otherwise{unjudged}")


def compare_regressions(c: Comparison, limit: float) -> list[str]:
    """One line per trace whose step time per step grew by more than ``limit``."""
    from profiler_kit.render.wording.diff_views import verdict_line

    if c.steps is None:
        return []
    return [f"regression beyond {limit:.0%}: {verdict_line(w)}"
            for w in c.steps.waterfalls
            if w is not None and w.before_ns > 0 and w.delta_ns / w.before_ns > limit]


def unpaired_line(c: Comparison) -> str:
    """One line naming the traces that are on one side only, which the gate skips."""
    return "not gated, on one side only: " + ", ".join(c.unpaired)


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
