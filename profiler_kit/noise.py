"""Is a change larger than the noise? The statistics of ``profkit diff`` (two benchmark
reports) and of the speedups inside one ``profkit run`` (each strategy against its point's
baseline), all from ``scipy.stats``, imported inside the functions that use it so that
reading results (``profkit analyze``, ``report``) never pays for it.

Three noise models, chosen by what the samples hold:

- **Between runs** (each side repeated in independent rounds, ``--repeats N`` with N >= 2):
  one value per repeat (its percentile), and Welch's t interval of the difference of the
  logs of those values, i.e. of the relative change. Run-to-run variation (process
  placement, caches, other load) is what separates repeats, so it is what the interval
  measures, except the drift that repeats run back to back share (see below). Not a
  bootstrap over repeats: with the 2 to 5 repeats a run has, a bootstrap has a handful of
  distinct resamples and shrinks the spread by (k - 1) / k, while the t interval is exact
  for normal values at any k (``scipy.stats.ttest_ind``).
- **Within one run** (one repeat per side): a BCa bootstrap interval of the percentile's
  change (``scipy.stats.bootstrap``, both sides resampled; the percentile method where BCa
  is degenerate) and a Mann-Whitney U test of the whole distributions
  (``scipy.stats.mannwhitneyu``). Samples of one run share its conditions, so these
  measure sampling noise only and run-to-run noise is unknown, so the minimum effect is
  larger (``MIN_EFFECT_ONE_RUN``).
- **Paired by round** (two strategies of one run, each measured in N >= 2 rounds): the
  runner takes turns (round 1 of every strategy, then round 2, ...), so round k of a
  strategy and round k of the baseline share the machine's conditions. The per-round
  ratio of their medians and a t interval of its log with N - 1 degrees of freedom
  (``scipy.stats.ttest_1samp``) remove the drift both sides share, which an unpaired
  interval counts as noise (or, with drift between rounds, as a change).

Every model call a change real only when its whole 95 % interval lies beyond a minimum
effect (``min_effect``), not merely away from 0: "beyond noise" means the change is, with
95 % confidence, larger than the noise that the samples cannot measure. Between runs that
is the drift of the machine from one run to the next, which repeats run back to back
share (on a shared 2-core machine, 12 A/A pairs of tiny ``ddp`` runs with 3 repeats a side
differed by up to 19 % at the median, and the t interval alone excluded 0 in one of them);
within one run it is all of the run-to-run noise.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import msgspec
import numpy as np

ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 4000
MIN_SAMPLES = 5  # fewer raw samples than this on either side: no verdict
MIN_REPEATS = 2  # repeats per side for the between-runs model
EXACT_MAX_N = 50  # Mann-Whitney: the exact distribution up to this many samples a side
MIN_EFFECT_ONE_RUN = 0.10  # one run per side: the interval must lie beyond +-10 %
MIN_EFFECT_REPEATED = 0.05  # repeated runs: beyond +-5 %, the drift between runs

BETWEEN_RUNS = "between runs"
WITHIN_RUN = "within one run"
PAIRED_BY_ROUND = "paired by round"
NOT_TESTED = "n/a"


class NoiseVerdict(msgspec.Struct, frozen=True):
    """Whether a change is larger than the noise, and how that was judged."""

    method: str  # BETWEEN_RUNS, WITHIN_RUN, PAIRED_BY_ROUND or NOT_TESTED
    beyond_noise: bool | None  # None: cannot tell (see reason)
    ci_low_fraction: float | None = None  # 95 % interval of the relative change
    ci_high_fraction: float | None = None
    min_effect_fraction: float | None = None  # the interval must lie beyond +- this
    reason: str = ""


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test: scipy's exact distribution for up to
    ``EXACT_MAX_N`` samples a side without ties (its ``"auto"`` stops at 8, and the normal
    approximation errs most in the small p-values that decide a verdict), else its normal
    approximation with tie and continuity corrections."""
    from scipy import stats as sps

    pooled = np.concatenate([np.asarray(a, dtype=float), np.asarray(b, dtype=float)])
    exact = max(len(a), len(b)) <= EXACT_MAX_N and len(np.unique(pooled)) == len(pooled)
    return float(sps.mannwhitneyu(a, b, alternative="two-sided",
                                  method="exact" if exact else "asymptotic").pvalue)


def bootstrap_change(
    a: Sequence[float], b: Sequence[float], percentile: float,
    resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0, level: float = 1 - ALPHA,
) -> tuple[float, float]:
    """Interval of ``P(b) / P(a) - 1`` for percentile P, resampling each side (seeded, so
    a verdict is reproducible): BCa, or the percentile interval where BCa is degenerate
    (for example many equal samples, whose jackknife does not vary)."""
    from scipy import stats as sps

    def change(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.percentile(y, percentile, axis=axis) / np.percentile(x, percentile, axis=axis) - 1

    data = (np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a degenerate BCa warns and gives NaN
            ci = sps.bootstrap(data, change, n_resamples=resamples, confidence_level=level,
                               method=method, vectorized=True, batch=500,
                               rng=np.random.default_rng(seed)).confidence_interval
        if np.isfinite(ci.low) and np.isfinite(ci.high):
            break
    return float(ci.low), float(ci.high)


def between_runs_change(
    a_repeats: Sequence[float], b_repeats: Sequence[float], level: float = 1 - ALPHA,
) -> tuple[float, float]:
    """Interval of the relative change from one value per repeat on each side: Welch's t
    interval of ``mean(log b) - mean(log a)``, returned as ``exp(.) - 1``."""
    from scipy import stats as sps

    res = sps.ttest_ind(np.log(b_repeats), np.log(a_repeats), equal_var=False)
    ci = res.confidence_interval(level)
    return float(np.expm1(ci.low)), float(np.expm1(ci.high))


def paired_change(
    a_rounds: Sequence[float], b_rounds: Sequence[float], level: float = 1 - ALPHA,
) -> tuple[float, float]:
    """Interval of the relative change from one value per round on each side, round k of
    one paired with round k of the other: the t interval (N - 1 degrees of freedom) of
    the mean of ``log(b_k / a_k)``, returned as ``exp(.) - 1``."""
    from scipy import stats as sps

    logs = np.log(np.asarray(b_rounds, dtype=float) / np.asarray(a_rounds, dtype=float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # equal ratios warn of precision loss: a 0-wide CI
        ci = sps.ttest_1samp(logs, 0.0).confidence_interval(level)
    return float(np.expm1(ci.low)), float(np.expm1(ci.high))


def verdict(low: float, high: float, method: str, min_effect: float,
            reason: str = "") -> NoiseVerdict:
    """Beyond noise when the whole interval lies beyond ``+-min_effect``."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return NoiseVerdict(method, None, reason="the spread could not be estimated "
                            "(the values do not vary)")
    beyond = low > min_effect or high < -min_effect
    return NoiseVerdict(method, bool(beyond), low, high, min_effect, reason)


def percentile_verdict(
    a_repeats: Sequence[Sequence[float]], b_repeats: Sequence[Sequence[float]],
    percentile: float, seed: int = 0, min_effect: float | None = None,
) -> NoiseVerdict:
    """The verdict on one percentile's change, from each side's samples grouped by repeat
    (one group when the run was not repeated). ``min_effect`` replaces the model's default
    minimum effect."""
    if min(len(a_repeats), len(b_repeats)) >= MIN_REPEATS:
        pa = [float(np.percentile(r, percentile)) for r in a_repeats]
        pb = [float(np.percentile(r, percentile)) for r in b_repeats]
        low, high = between_runs_change(pa, pb)
        return verdict(low, high, BETWEEN_RUNS, _or(min_effect, MIN_EFFECT_REPEATED),
                       f"{len(a_repeats)} and {len(b_repeats)} repeats")
    a = [v for r in a_repeats for v in r]
    b = [v for r in b_repeats for v in r]
    if min(len(a), len(b)) < MIN_SAMPLES:
        return NoiseVerdict(NOT_TESTED, None, reason=f"fewer than {MIN_SAMPLES} samples")
    low, high = bootstrap_change(a, b, percentile, seed=seed)
    return verdict(low, high, WITHIN_RUN, _or(min_effect, MIN_EFFECT_ONE_RUN),
                   "a side has one run: run-to-run noise unknown")


def _or(given: float | None, default: float) -> float:
    return default if given is None else given


def speedup_verdict(
    baseline_rounds: Sequence[Sequence[float]], rounds: Sequence[Sequence[float]],
    work_ratio: float = 1.0, seed: int = 0,
) -> NoiseVerdict:
    """The verdict on a strategy's speedup over the baseline of the same run, from each
    side's step times grouped by round: the interval is of ``speedup - 1``, where the
    speedup is ``work_ratio`` (the strategy's items per step over the baseline's) times
    the baseline's median step over the strategy's. Paired by round when both sides have
    ``MIN_REPEATS`` rounds or more (the rounds both have), else within the first round."""
    n = min(len(baseline_rounds), len(rounds))
    if n >= MIN_REPEATS:
        base = [float(np.median(r)) for r in baseline_rounds[:n]]
        mine = [float(np.median(r)) for r in rounds[:n]]
        low, high = paired_change(mine, base)  # the change of base / mine
        return verdict(_scaled(low, work_ratio), _scaled(high, work_ratio), PAIRED_BY_ROUND,
                       MIN_EFFECT_REPEATED, f"{n} rounds")
    base_samples = baseline_rounds[0] if baseline_rounds else ()
    samples = rounds[0] if rounds else ()
    if min(len(base_samples), len(samples)) < MIN_SAMPLES:
        return NoiseVerdict(NOT_TESTED, None, reason=f"fewer than {MIN_SAMPLES} samples")
    low, high = bootstrap_change(samples, base_samples, 50, seed=seed)
    return verdict(_scaled(low, work_ratio), _scaled(high, work_ratio), WITHIN_RUN,
                   MIN_EFFECT_ONE_RUN, "one round: run-to-run noise unknown")


def _scaled(change: float, ratio: float) -> float:
    """A relative change of a time ratio as the change of a throughput ratio ``ratio``
    times larger (monotone, so an interval's ends map to the ends)."""
    return (1.0 + change) * ratio - 1.0
