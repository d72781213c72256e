"""A/B diff of two DDP benchmark reports, with a verdict on whether each change is beyond noise.

Reads profkit's ``ddp_report.json`` and PyTorch's own benchmark reports alike (the
latter only have ``ranks`` and ``measurements``; reduced reports may only have
percentiles under ``times``). For each model and configuration it compares the p75
and p95 seconds per iteration and the examples/s they imply. Noise is judged on the
raw samples when both sides have them: a percentile bootstrap of each percentile's
difference (seeded, so the verdict is reproducible) and a Mann-Whitney U test of the
whole distributions; with percentiles only, the verdict is "n/a". numpy only, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import numpy as np

DIFF_PERCENTILES = (75, 95)
ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 4000
MIN_SAMPLES = 5  # fewer raw samples than this on either side: no noise verdict
_EXACT_MAX_N = 50  # Mann-Whitney: exact distribution up to this many samples per side


class NoiseVerdict(msgspec.Struct, frozen=True):
    """Whether a change is larger than the run-to-run noise, and how that was judged."""

    method: str  # "bootstrap" or "n/a"
    beyond_noise: bool | None  # None: cannot tell (see reason)
    ci_low_fraction: float | None = None  # 95 % interval of the relative change
    ci_high_fraction: float | None = None
    reason: str = ""


class PercentileDiff(msgspec.Struct, frozen=True):
    """One percentile of one configuration, base against test."""

    percentile: int
    base_ns: float
    test_ns: float
    change_fraction: float  # test / base - 1: > 0 is slower
    base_examples_per_s: float | None
    test_examples_per_s: float | None
    examples_change_fraction: float | None  # > 0 is more throughput
    noise: NoiseVerdict


class ConfigurationDiff(msgspec.Struct, frozen=True):
    """One configuration (``no-ddp``, ``ddp-w2`` ...) present in both reports."""

    configuration: str
    world_size: int
    base_samples: int | None  # raw samples, None when the report has percentiles only
    test_samples: int | None
    percentiles: tuple[PercentileDiff, ...]
    mann_whitney_p: float | None  # two-sided, on the raw samples
    beyond_noise: bool | None  # mann_whitney_p < ALPHA; None when not testable


class BenchmarkDiff(msgspec.Struct, frozen=True):
    """One model and batch size: every configuration both reports measured."""

    model: str
    batch_size: int
    base_bucket_size: Any
    test_bucket_size: Any
    configurations: tuple[ConfigurationDiff, ...]
    only_in_base: tuple[str, ...]
    only_in_test: tuple[str, ...]


class MetadataRow(msgspec.Struct, frozen=True):
    key: str
    base: Any
    test: Any
    differs: bool


class ReportDiff(msgspec.Struct, frozen=True):
    base_label: str
    test_label: str
    metadata: tuple[MetadataRow, ...]
    benchmarks: tuple[BenchmarkDiff, ...]
    unmatched: tuple[str, ...]  # benchmarks in only one of the reports
    alpha: float = ALPHA


# ---------------------------------------------------------------- statistics


def mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the Mann-Whitney U test: exact without ties for small samples,
    else the normal approximation with tie and continuity corrections."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        raise ValueError("both samples need at least one value")
    both = np.concatenate([x, y])
    ranks = _average_ranks(both)
    u1 = float(ranks[:n1].sum() - n1 * (n1 + 1) / 2)
    ordered = np.sort(both)
    ties = bool(np.any(ordered[1:] == ordered[:-1]))
    if not ties and n1 <= _EXACT_MAX_N and n2 <= _EXACT_MAX_N:
        counts = _u_distribution(n1, n2)
        total = counts.sum()
        k = int(round(min(u1, n1 * n2 - u1)))
        return float(min(1.0, 2 * counts[: k + 1].sum() / total))
    mean = n1 * n2 / 2
    _, tie_counts = np.unique(both, return_counts=True)
    n = n1 + n2
    tie_term = float(((tie_counts**3) - tie_counts).sum()) / (n * (n - 1))
    var = n1 * n2 / 12 * ((n + 1) - tie_term)
    if var <= 0:
        return 1.0
    z = (abs(u1 - mean) - 0.5) / math.sqrt(var)
    return float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2))))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    sorted_vals = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_vals[j + 1] == sorted_vals[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def _u_distribution(n1: int, n2: int) -> np.ndarray:
    """Counts of each U value (0 .. n1*n2) over all arrangements, by the usual recursion
    f(m, n, u) = f(m-1, n, u-n) + f(m, n-1, u), in floats (large counts stay finite)."""
    # row[j] holds the distribution for (i, j) while i grows.
    prev = [np.ones(1) for _ in range(n2 + 1)]  # i = 0: only U = 0
    for i in range(1, n1 + 1):
        cur = [np.ones(1)]  # j = 0: only U = 0
        for j in range(1, n2 + 1):
            dist = np.zeros(i * j + 1)
            a = prev[j]  # (i-1, j), shifted by j
            dist[j : j + len(a)] += a
            b = cur[j - 1]  # (i, j-1)
            dist[: len(b)] += b
            cur.append(dist)
        prev = cur
    return prev[n2]


def bootstrap_change(
    a: Sequence[float], b: Sequence[float], percentile: float,
    resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0, level: float = 1 - ALPHA,
) -> tuple[float, float]:
    """Interval of ``P(b) / P(a) - 1`` for percentile P, by resampling each side."""
    rng = np.random.default_rng(seed)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    px = np.percentile(x[rng.integers(0, len(x), (resamples, len(x)))], percentile, axis=1)
    py = np.percentile(y[rng.integers(0, len(y), (resamples, len(y)))], percentile, axis=1)
    change = py / px - 1
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(change, [tail, 100 - tail])
    return float(low), float(high)


# ---------------------------------------------------------------- reading reports


class _Config(msgspec.Struct, frozen=True):
    name: str
    world_size: int
    samples_s: tuple[float, ...] | None
    percentiles_s: Mapping[int, float]


def _configurations(bench: Mapping[str, Any]) -> dict[str, _Config]:
    found: dict[str, _Config] = {}
    for i, res in enumerate(bench.get("result", [])):
        ranks = res.get("ranks") or []
        world = int(res.get("world_size") or len(ranks) or 1)
        # PyTorch's reports: the first result is the run without DDP, then 1, 2, 4... GPUs.
        name = str(res.get("configuration") or ("no-ddp" if i == 0 else f"ddp-w{world}"))
        raw = res.get("measurements")
        samples = tuple(float(v) for v in raw) if raw else None
        given = ((res.get("times") or {}).get("sec_per_iter") or {})
        pct: dict[int, float] = {}
        for p in DIFF_PERCENTILES:
            if samples:
                pct[p] = float(np.percentile(samples, p))
            elif f"p{p}" in given and given[f"p{p}"] is not None:
                pct[p] = float(given[f"p{p}"])
        if pct:
            found[name] = _Config(name, world, samples, pct)
    return found


def _benchmarks(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(report.get("benchmark_results") or [])


def _bucket(report: Mapping[str, Any], bench: Mapping[str, Any]) -> Any:
    return bench.get("bucket_size", report.get("bucket_size"))


def metadata_of(report: Mapping[str, Any]) -> dict[str, Any]:
    """Top-level scalars (PyTorch's keys) and profkit's ``metadata``, in one flat dict."""
    flat = {
        k: v for k, v in report.items()
        if k not in ("benchmark_results", "metadata", "schema") and not isinstance(v, dict)
    }
    flat.update(report.get("metadata") or {})
    return flat


def _metadata_rows(base: Mapping[str, Any], test: Mapping[str, Any]) -> tuple[MetadataRow, ...]:
    a, b = metadata_of(base), metadata_of(test)
    rows = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if key == "interconnect_topology":  # a whole table: say whether it matches
            va = "present" if va else "none"
            vb = "present" if vb else "none"
            differs = a.get(key) != b.get(key)
        else:
            differs = va != vb
        rows.append(MetadataRow(key, va, vb, differs))
    return tuple(rows)


def _pair_benchmarks(
    base: Mapping[str, Any], test: Mapping[str, Any]
) -> tuple[list[tuple[Mapping[str, Any], Mapping[str, Any]]], list[str]]:
    """Benchmarks by model and batch size; several of them (a bucket sweep) also by bucket."""
    pairs = []
    unmatched = []
    used: set[int] = set()
    for ba in _benchmarks(base):
        key = (ba.get("model"), int(ba.get("batch_size", 0)))
        same = [
            (j, bb) for j, bb in enumerate(_benchmarks(test))
            if j not in used and (bb.get("model"), int(bb.get("batch_size", 0))) == key
        ]
        if len(same) > 1:
            same = [(j, bb) for j, bb in same if _bucket(test, bb) == _bucket(base, ba)] or same
        if not same:
            unmatched.append(f"{key[0]} batch {key[1]}: only in the base report")
            continue
        j, bb = same[0]
        used.add(j)
        pairs.append((ba, bb))
    for j, bb in enumerate(_benchmarks(test)):
        if j not in used:
            unmatched.append(
                f"{bb.get('model')} batch {bb.get('batch_size')}: only in the test report"
            )
    return pairs, unmatched


# ---------------------------------------------------------------- the diff


def diff_reports(
    base: Mapping[str, Any], test: Mapping[str, Any],
    base_label: str = "base", test_label: str = "test", seed: int = 0,
) -> ReportDiff:
    """Compare two DDP benchmark reports (profkit's or PyTorch's)."""
    pairs, unmatched = _pair_benchmarks(base, test)
    benchmarks = []
    for ba, bb in pairs:
        batch = int(ba.get("batch_size", 0))
        ca, cb = _configurations(ba), _configurations(bb)
        configs = [
            _diff_configuration(ca[name], cb[name], batch, seed)
            for name in ca if name in cb
        ]
        benchmarks.append(BenchmarkDiff(
            model=str(ba.get("model")),
            batch_size=batch,
            base_bucket_size=_bucket(base, ba),
            test_bucket_size=_bucket(test, bb),
            configurations=tuple(configs),
            only_in_base=tuple(n for n in ca if n not in cb),
            only_in_test=tuple(n for n in cb if n not in ca),
        ))
    return ReportDiff(
        base_label=base_label,
        test_label=test_label,
        metadata=_metadata_rows(base, test),
        benchmarks=tuple(benchmarks),
        unmatched=tuple(unmatched),
    )


def _diff_configuration(a: _Config, b: _Config, batch: int, seed: int) -> ConfigurationDiff:
    testable = (
        a.samples_s is not None and b.samples_s is not None
        and min(len(a.samples_s), len(b.samples_s)) >= MIN_SAMPLES
    )
    if a.samples_s is None or b.samples_s is None:
        why = "percentiles only: no raw samples to judge noise"
    elif not testable:
        why = f"fewer than {MIN_SAMPLES} samples"
    else:
        why = ""
    rows = []
    for p in DIFF_PERCENTILES:
        if p not in a.percentiles_s or p not in b.percentiles_s:
            continue
        va, vb = a.percentiles_s[p], b.percentiles_s[p]
        if testable:
            assert a.samples_s is not None and b.samples_s is not None
            low, high = bootstrap_change(a.samples_s, b.samples_s, p, seed=seed + p)
            noise = NoiseVerdict("bootstrap", low > 0 or high < 0, low, high)
        else:
            noise = NoiseVerdict("n/a", None, reason=why)
        ex_a = batch * a.world_size / va if va > 0 else None
        ex_b = batch * b.world_size / vb if vb > 0 else None
        rows.append(PercentileDiff(
            percentile=p,
            base_ns=va * 1e9,
            test_ns=vb * 1e9,
            change_fraction=vb / va - 1 if va > 0 else math.nan,
            base_examples_per_s=ex_a,
            test_examples_per_s=ex_b,
            examples_change_fraction=ex_b / ex_a - 1 if ex_a and ex_b else None,
            noise=noise,
        ))
    p_value = (
        mann_whitney_p(a.samples_s, b.samples_s)  # type: ignore[arg-type]
        if testable else None
    )
    return ConfigurationDiff(
        configuration=a.name,
        world_size=a.world_size,
        base_samples=len(a.samples_s) if a.samples_s is not None else None,
        test_samples=len(b.samples_s) if b.samples_s is not None else None,
        percentiles=tuple(rows),
        mann_whitney_p=p_value,
        beyond_noise=(p_value < ALPHA) if p_value is not None else None,
    )
