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
  With repeats on one side only (``--repeats 3`` against ``--repeats 1``), the single run
  is one more draw from the same spread: the repeated side's standard deviation of the
  log values stands for both sides, and the t interval has its k - 1 degrees of freedom
  (``one_run_against_repeats_change``).
- **Within one run** (one repeat per side): a BCa bootstrap interval of the percentile's
  change (``scipy.stats.bootstrap``, both sides resampled; the percentile method where BCa
  is degenerate) and a Mann-Whitney U test of the whole distributions
  (``scipy.stats.mannwhitneyu``). Samples of one run share its conditions, so these
  measure sampling noise only and run-to-run noise is unknown, so the minimum effect is
  larger (``MIN_EFFECT_ONE_RUN``). Between separate invocations even that is not
  enough: on a shared 2-core machine this bootstrap called changes of -47 % and +51 %
  between identical ``ddp`` runs 2.5 minutes apart beyond noise (three runs pooled on
  one side, one on the other). So ``profkit diff`` judges nothing with one run a side
  (``ONE_RUN_EACH``: no verdict, and the reason says to repeat the runs); the speedups
  of one run's strategies and the tuning's comparison of strategies measured one after
  another in one process still use this model.
- **Paired by round** (two strategies of one run, each measured in N >= 2 rounds): the
  runner takes turns (round 1 of every strategy, then round 2, ...), so round k of a
  strategy and round k of the baseline share the machine's conditions. The per-round
  ratio of their medians and a t interval of its log with N - 1 degrees of freedom
  (``scipy.stats.ttest_1samp``) remove the drift both sides share, which an unpaired
  interval counts as noise (or, with drift between rounds, as a change).

Two doubts override any model: rounds that disagree (the per-round ratios of the two
sides' medians spread wider than the change, or a round's samples fall in two clusters)
are **unstable**, and two sides that
ran under different contention (other processes, oversubscribed threads; see
:mod:`profiler_kit.contention`) are **contended**. Either makes a change "not judged"
(``doubt`` says which; ``beyond_noise`` is never True), never "beyond noise": the
difference belongs to the machine, not the strategy.

Every model call a change real only when its whole 95 % interval lies beyond a minimum
effect (``min_effect``), not merely away from 0: "beyond noise" means the change is, with
95 % confidence, larger than the noise that the samples cannot measure. Between runs that
is the drift of the machine from one run to the next, which repeats run back to back
share (on a shared 2-core machine, 12 A/A pairs of tiny ``ddp`` runs with 3 repeats a side
differed by up to 19 % at the median, and the t interval alone excluded 0 in one of them);
within one run it is all of the run-to-run noise.

So a verdict is in one of four states (``NoiseVerdict.state``), each said in one word in
every format: **beyond noise** (the interval lies beyond the margin), **within noise**
(it lies inside it: any change is smaller than the margin), **inconclusive** (it crosses
the margin's line: neither can be told) and **not judged** (a doubt, or no interval).
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

UNSTABLE = "unstable"  # a side's rounds disagree
CONTENDED = "contended"  # the two sides ran under different contention

# A verdict's state, one word each, the same in every format (NoiseVerdict.state)
BEYOND_NOISE = "beyond noise"  # the whole interval lies beyond +-min_effect
WITHIN_NOISE = "within noise"  # the whole interval lies inside +-min_effect
INCONCLUSIVE = "inconclusive"  # the interval crosses the +-min_effect line
NOT_JUDGED = "not judged"  # a doubt (unstable, contended), or no interval
STATES = (BEYOND_NOISE, WITHIN_NOISE, INCONCLUSIVE, NOT_JUDGED)
BIMODAL_MIN_JUMP = 0.5  # two clusters of samples: a gap of at least +50 % between them
BIMODAL_MIN_SHARE = 0.10  # ... each holding at least this share of the samples
UNSTABLE_MIN_SPREAD = 0.10  # round medians may spread this much whatever the change
ONE_RUN_EACH = "one run a side"  # no verdict: the noise between runs is unknown
ONE_RUN_EACH_REASON = ("one run a side: the noise between runs is unknown; run with "
                       "--repeats 3 on both sides (or give several runs a side)")


class NoiseVerdict(msgspec.Struct, frozen=True):
    """Whether a change is larger than the noise, and how that was judged."""

    method: str  # BETWEEN_RUNS, WITHIN_RUN, PAIRED_BY_ROUND, ONE_RUN_EACH or NOT_TESTED
    beyond_noise: bool | None  # None: cannot tell (see reason)
    ci_low_fraction: float | None = None  # 95 % interval of the relative change
    ci_high_fraction: float | None = None
    min_effect_fraction: float | None = None  # the interval must lie beyond +- this
    reason: str = ""
    doubt: str = ""  # UNSTABLE or CONTENDED: why a change is not judged whatever the model

    @property
    def state(self) -> str:
        """One of ``STATES``, derived from the fields (so run.json written before it reads
        alike): ``beyond_noise`` False alone cannot tell an interval inside the margin
        from one that crosses it, and a doubted verdict keeps False when its interval
        was within, yet is judged no more than one whose interval was beyond."""
        if self.doubt or self.beyond_noise is None:
            return NOT_JUDGED
        if self.beyond_noise:
            return BEYOND_NOISE
        low, high, m = self.ci_low_fraction, self.ci_high_fraction, self.min_effect_fraction
        if low is not None and high is not None and m is not None and -m <= low and high <= m:
            return WITHIN_NOISE
        return INCONCLUSIVE


def doubted(v: NoiseVerdict, doubt: str, reason: str) -> NoiseVerdict:
    """``v`` with a doubt: never beyond noise (a change beyond noise becomes not judged;
    within noise stays within noise), the interval kept for the record."""
    beyond = None if v.beyond_noise else v.beyond_noise
    return NoiseVerdict(v.method, beyond, v.ci_low_fraction, v.ci_high_fraction,
                        v.min_effect_fraction, reason, doubt)


def bimodal(samples: Sequence[float]) -> tuple[float, float] | None:
    """The medians of two clusters when the samples fall in two (the largest jump between
    sorted samples is at least ``BIMODAL_MIN_JUMP`` and each side holds at least
    ``BIMODAL_MIN_SHARE`` of them, two at the least), else None."""
    x = np.sort(np.asarray(samples, dtype=float))
    x = x[x > 0]
    n = len(x)
    least = max(2, int(np.ceil(BIMODAL_MIN_SHARE * n)))
    if n < 2 * least:
        return None
    logs = np.log(x)
    gaps = np.diff(logs)[least - 1:n - least]  # the cuts that leave `least` on each side
    if not len(gaps):
        return None
    cut = int(np.argmax(gaps)) + least
    if gaps[cut - least] < np.log1p(BIMODAL_MIN_JUMP):
        return None
    return float(np.median(x[:cut])), float(np.median(x[cut:]))


def rounds_disagree(rounds: Sequence[Sequence[float]], against: Sequence[Sequence[float]],
                    change: float) -> str | None:
    """Why a strategy's rounds and the baseline's (``against``, taken in turns with them)
    disagree, or None: the per-round ratios of their medians spread wider than ``change``
    (the relative difference being judged, and at least ``UNSTABLE_MIN_SPREAD``). Drift
    that both sides share cancels in the ratio, as in the paired verdict."""
    mine = [float(np.median(r)) for r in rounds if len(r)]
    base = [float(np.median(r)) for r in against if len(r)]
    n = min(len(mine), len(base))
    if n < 2 or min(base[:n]) <= 0 or min(mine[:n]) <= 0:
        return None
    ratios = [m / b for m, b in zip(mine[:n], base[:n], strict=True)]
    spread = max(ratios) / min(ratios) - 1
    if spread <= max(abs(change), UNSTABLE_MIN_SPREAD):
        return None
    return (f"round medians {' / '.join(_duration(m) for m in mine[:n])} against the "
            f"baseline's {' / '.join(_duration(b) for b in base[:n])}, ratios spread "
            f"{spread:.0%}")


def clustered(rounds: Sequence[Sequence[float]]) -> str | None:
    """Why a side is unstable within a round, or None: a round whose samples fall in two
    clusters (``bimodal``). Values are in the samples' unit (ns)."""
    for k, r in enumerate(rounds, 1):
        two = bimodal(r)
        if two is not None:
            where = f"round {k}'s" if len(rounds) > 1 else "its"
            return (f"{where} samples fall in two clusters, around {_duration(two[0])} "
                    f"and {_duration(two[1])}")
    return None


def _duration(ns: float) -> str:
    return f"{ns / 1e9:.3g} s" if ns >= 1e9 else f"{ns / 1e6:.3g} ms"


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


def one_run_against_repeats_change(
    a_repeats: Sequence[float], b_repeats: Sequence[float], level: float = 1 - ALPHA,
) -> tuple[float, float]:
    """Interval of the relative change when one side has a single value (one run) and the
    other ``k >= 2`` (one per repeat): the single run is taken as one more draw from the
    repeated side's spread, so the difference of the logs, ``log b - log a`` (the mean of
    the logs on the repeated side), has the standard error ``s * sqrt(1 + 1/k)`` with
    ``s`` the repeated side's standard deviation of the logs, and a t interval with
    ``k - 1`` degrees of freedom; returned as ``exp(.) - 1``. NaN when ``s`` is 0 (the
    repeats do not vary, so their spread is unknown)."""
    from scipy import stats as sps

    la, lb = np.log(np.asarray(a_repeats, dtype=float)), np.log(np.asarray(b_repeats,
                                                                          dtype=float))
    if min(len(la), len(lb)) != 1 or max(len(la), len(lb)) < MIN_REPEATS:
        raise ValueError("one side must have one value and the other two or more")
    repeated = la if len(la) > 1 else lb
    k = len(repeated)
    s = float(repeated.std(ddof=1))
    if not s > 0:
        return float("nan"), float("nan")
    change = float(lb.mean() - la.mean())
    half = float(sps.t.ppf(0.5 + level / 2, k - 1)) * s * float(np.sqrt(1 + 1 / k))
    return float(np.expm1(change - half)), float(np.expm1(change + half))


def percentile_verdict(
    a_repeats: Sequence[Sequence[float]], b_repeats: Sequence[Sequence[float]],
    percentile: float, seed: int = 0, min_effect: float | None = None,
    *, within_one_run: bool = True,
) -> NoiseVerdict:
    """The verdict on one percentile's change, from each side's samples grouped by repeat
    (one group when the run was not repeated). ``min_effect`` replaces the model's default
    minimum effect.

    Two or more repeats a side: between runs (Welch). Repeats on one side only: between
    runs with the repeated side's spread for both (``one_run_against_repeats_change``).
    One run a side: with ``within_one_run`` the bootstrap within the run (sampling noise
    only: for strategies measured one after another in one process); without it, no
    verdict (``ONE_RUN_EACH``, the reason says to repeat), which is what separate runs
    need, since their drift dwarfs the sampling noise."""
    na, nb = len(a_repeats), len(b_repeats)
    if min(na, nb) >= MIN_REPEATS or (min(na, nb) == 1 and max(na, nb) >= MIN_REPEATS):
        pa = [float(np.percentile(r, percentile)) for r in a_repeats]
        pb = [float(np.percentile(r, percentile)) for r in b_repeats]
        if min(na, nb) >= MIN_REPEATS:
            low, high = between_runs_change(pa, pb)
            why = f"{na} and {nb} repeats"
        else:
            low, high = one_run_against_repeats_change(pa, pb)
            why = (f"{na} and {nb} repeats: the spread between the "
                   f"{max(na, nb)} repeats stands for both sides")
        return verdict(low, high, BETWEEN_RUNS, _or(min_effect, MIN_EFFECT_REPEATED), why)
    if not within_one_run and min(na, nb) == 1:
        return NoiseVerdict(ONE_RUN_EACH, None, reason=ONE_RUN_EACH_REASON)
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
    ``MIN_REPEATS`` rounds or more (the rounds both have), else within the first round.
    A side whose rounds disagree (``unstable``) makes the speedup not judged."""
    v = _speedup_verdict(baseline_rounds, rounds, work_ratio, seed)
    base_all = [float(np.median(r)) for r in baseline_rounds if len(r)]
    mine_all = [float(np.median(r)) for r in rounds if len(r)]
    if not base_all or not mine_all:
        return v
    change = float(np.median(base_all) / np.median(mine_all)) - 1
    why = rounds_disagree(rounds, baseline_rounds, change)
    if why:
        return doubted(v, UNSTABLE, f"the rounds disagree: {why}")
    for who, side in (("the baseline", baseline_rounds), ("this strategy", rounds)):
        why = clustered(side)
        if why:
            return doubted(v, UNSTABLE, f"{who} is unstable: {why}")
    return v


EXPLANATION_MAX_FACTOR = 2.0  # two changes the same way may differ this much as ratios


def explanation_conflict(timed_ratio: float, profiled_ratio: float,
                         min_effect: float = MIN_EFFECT_ONE_RUN) -> str | None:
    """Why an explanation from the profiled steps cannot stand beside the timing, or None.
    Both ratios are a strategy's step time over the baseline's: ``timed_ratio`` of the
    timed medians, ``profiled_ratio`` of the profiled steps the explanation is made of
    (few, and slowed by the profiler). A change within ``min_effect`` counts as none. They
    conflict when one sees a change and the other none, when they point opposite ways,
    or when they differ by more than ``EXPLANATION_MAX_FACTOR``: an explanation would
    then be printed for a result the timing did not find."""
    if timed_ratio <= 0 or profiled_ratio <= 0:
        return None
    t, p, m = np.log(timed_ratio), np.log(profiled_ratio), np.log1p(min_effect)
    if abs(t) <= m and abs(p) <= m:
        return None
    if abs(t) > m and abs(p) > m and t * p > 0 and abs(p - t) <= np.log(EXPLANATION_MAX_FACTOR):
        return None
    return (f"the profiled steps say {profiled_ratio - 1:+.1%} where the timed medians say "
            f"{timed_ratio - 1:+.1%}")


def _speedup_verdict(
    baseline_rounds: Sequence[Sequence[float]], rounds: Sequence[Sequence[float]],
    work_ratio: float, seed: int,
) -> NoiseVerdict:
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
