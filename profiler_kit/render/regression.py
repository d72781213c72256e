"""``--fail-on-regression PCT``: a CI gate on step time, for ``profkit compare`` and
``profkit diff``. Torch-free.

compare: each trace against the baseline, by its device-side (or CPU) step time per step,
the waterfall's total; a single trace a side carries no repeated sample, so "beyond noise"
there is beyond PCT itself, and the line names the waterfall terms that moved most.
diff: every p50-p95 of every configuration, regressed when slower by more than PCT *and*
beyond noise by the diff's own verdict (between runs with several runs or repeats a side,
within one run otherwise); a change that could not be tested (percentiles only) counts
when it passes PCT, and the line says it was not tested.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from profiler_kit.analysis.compare import Comparison
from profiler_kit.ddp_benchmark.diff import ReportDiff


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


def add_argument(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--fail-on-regression", type=percentage(1000), metavar="PCT",
                   help=f"exit 1 when {what} is slower than the baseline by more than PCT %% "
                        "(beyond noise where noise can be judged), with one line naming "
                        "what regressed; exit 0 otherwise")


def compare_regressions(c: Comparison, limit: float) -> list[str]:
    """One line per trace whose step time per step grew by more than ``limit``."""
    from profiler_kit.render.diff_views import verdict_line

    if c.steps is None:
        return []
    return [f"regression beyond {limit:.0%}: {verdict_line(w)}"
            for w in c.steps.waterfalls
            if w is not None and w.before_ns > 0 and w.delta_ns / w.before_ns > limit]


def diff_regressions(d: ReportDiff, limit: float) -> list[str]:
    """One line per configuration with a p50-p95 slower by more than ``limit`` beyond noise."""
    lines = []
    for b in d.benchmarks:
        for c in b.configurations:
            worse = [p for p in c.percentiles if p.change_fraction > limit
                     and p.noise.beyond_noise is not False]
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
