"""A/B diff of two DDP benchmark reports, with a verdict on whether each change is beyond noise.

Reads profkit's ``ddp_report.json`` and PyTorch's own benchmark reports alike (the
latter only have ``ranks`` and ``measurements``; reduced reports may only have
percentiles under ``times``). For each model and configuration it compares the p50 to
p95 seconds per iteration and the aggregate examples/s they imply. Noise is judged on
the raw samples when both sides have them, between repeated runs where a report holds
repeats (``repeat_measurements``; one side's repeats stand for both when the other has
one run); with one run a side there is no verdict (the drift between runs is unknown,
see ``noise``), and with percentiles only it is "n/a". No torch.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import msgspec
import numpy as np

from profiler_kit.contention import (
    BASELINE_SIDE,
    STRATEGY_SIDE,
    RoundContention,
    different,
    judged,
)
from profiler_kit.noise import (
    ALPHA,
    MIN_EFFECT_ONE_RUN,
    MIN_EFFECT_REPEATED,
    NOT_TESTED,
    ONE_RUN_EACH,
    NoiseVerdict,
    mann_whitney_p,
    percentile_verdict,
)

DIFF_PERCENTILES = (50, 75, 90, 95)
HEADLINE_PERCENTILE = 50  # the configuration's verdict and throughput are the median's


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
    mann_whitney_p: float | None  # two-sided, on the raw samples of one run per side
    beyond_noise: bool | None  # the median's verdict; None when not testable (one run a side)
    base_repeats: int = 1  # independent runs of the configuration behind each side
    test_repeats: int = 1
    noise_model: str = NOT_TESTED  # BETWEEN_RUNS, ONE_RUN_EACH or NOT_TESTED
    base_examples_per_s: float | None = None  # aggregate, at the median step
    test_examples_per_s: float | None = None
    examples_change_fraction: float | None = None  # > 0 is more throughput


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
    # kept in the schema; nothing is judged within one run since one run a side gets no
    # verdict (noise.ONE_RUN_EACH)
    min_effect_one_run_fraction: float = MIN_EFFECT_ONE_RUN
    min_effect_repeated_fraction: float = MIN_EFFECT_REPEATED


# ---------------------------------------------------------------- reading reports


class _Config(msgspec.Struct, frozen=True):
    name: str
    world_size: int
    samples_s: tuple[float, ...] | None
    percentiles_s: Mapping[int, float]
    repeats_s: tuple[tuple[float, ...], ...] = ()  # samples grouped by repeat
    contention: tuple[RoundContention, ...] = ()  # what competed with each repeat


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
        grouped = res.get("repeat_measurements") or ([samples] if samples else [])
        repeats = tuple(tuple(float(v) for v in r) for r in grouped if r)
        if pct:
            found[name] = _Config(name, world, samples, pct, repeats,
                                  _contention_of(res.get("contention")))
    return found


def _contention_of(raw: Any) -> tuple[RoundContention, ...]:
    """A report's record of what competed with each round; () where there is none (a
    report of PyTorch's own benchmark, or of a profkit run before it was recorded)."""
    try:
        return msgspec.convert(raw or [], tuple[RoundContention, ...])
    except msgspec.ValidationError:
        return ()


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
    min_effect: float | None = None,
) -> ReportDiff:
    """Compare two DDP benchmark reports (profkit's or PyTorch's). ``min_effect`` (a
    fraction) replaces the between-runs model's default minimum effect."""
    pairs, unmatched = _pair_benchmarks(base, test)
    benchmarks = []
    for ba, bb in pairs:
        batch = int(ba.get("batch_size", 0))
        ca, cb = _configurations(ba), _configurations(bb)
        configs = [
            _diff_configuration(ca[name], cb[name], batch, seed, min_effect)
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
        min_effect_one_run_fraction=MIN_EFFECT_ONE_RUN if min_effect is None else min_effect,
        min_effect_repeated_fraction=(MIN_EFFECT_REPEATED if min_effect is None
                                      else min_effect),
    )


def _diff_configuration(a: _Config, b: _Config, batch: int, seed: int,
                        min_effect: float | None) -> ConfigurationDiff:
    raw = a.samples_s is not None and b.samples_s is not None
    rows = []
    for p in DIFF_PERCENTILES:
        if p not in a.percentiles_s or p not in b.percentiles_s:
            continue
        va, vb = a.percentiles_s[p], b.percentiles_s[p]
        change = vb / va - 1 if va > 0 else math.nan
        noise = (percentile_verdict(a.repeats_s, b.repeats_s, p, seed + p, min_effect,
                                    within_one_run=False)
                 if raw else NoiseVerdict(NOT_TESTED, None,
                                          reason="percentiles only: no raw samples"))
        ex_a, ex_b = _examples_per_s(batch, a.world_size, va), _examples_per_s(
            batch, b.world_size, vb)
        rows.append(PercentileDiff(
            percentile=p,
            base_ns=va * 1e9,
            test_ns=vb * 1e9,
            change_fraction=change,
            base_examples_per_s=ex_a,
            test_examples_per_s=ex_b,
            examples_change_fraction=ex_b / ex_a - 1 if ex_a and ex_b else None,
            noise=noise,
        ))
    # two runs beside different other work: not judged where the slower side had it worse
    diff = different(a.contention, b.contention)
    if diff is not None:
        rows = [msgspec.structs.replace(r, noise=judged(
            r.noise, diff, STRATEGY_SIDE if r.change_fraction < 0 else
            BASELINE_SIDE if r.change_fraction > 0 else None)) for r in rows]
    head = next((r for r in rows if r.percentile == HEADLINE_PERCENTILE), None)
    model = head.noise.method if head else NOT_TESTED
    p_value = None
    beyond = head.noise.beyond_noise if head else None
    if model == ONE_RUN_EACH:  # shown, not a verdict: it cannot see the drift between runs
        assert a.samples_s is not None and b.samples_s is not None
        p_value = mann_whitney_p(a.samples_s, b.samples_s)
    return ConfigurationDiff(
        configuration=a.name,
        world_size=a.world_size,
        base_samples=len(a.samples_s) if a.samples_s is not None else None,
        test_samples=len(b.samples_s) if b.samples_s is not None else None,
        percentiles=tuple(rows),
        mann_whitney_p=p_value,
        beyond_noise=beyond,
        base_repeats=max(len(a.repeats_s), 1),
        test_repeats=max(len(b.repeats_s), 1),
        noise_model=model,
        base_examples_per_s=head.base_examples_per_s if head else None,
        test_examples_per_s=head.test_examples_per_s if head else None,
        examples_change_fraction=head.examples_change_fraction if head else None,
    )


def _examples_per_s(batch: int, world_size: int, seconds: float) -> float | None:
    """Aggregate examples/s of every rank at one step time."""
    return batch * world_size / seconds if seconds > 0 else None


# ---------------------------------------------------------------- several runs a side


def merge_runs(reports: list[Mapping[str, Any]], labels: list[str]) -> dict[str, Any]:
    """Several runs of one benchmark as one report whose configurations hold every run's
    rounds as repeats (``repeat_measurements``) and all their samples: the diff's
    between-runs noise model then sees the drift from one run to the next. Runs must have
    measured the same models, batch sizes and configurations (UsageError naming the odd
    one otherwise). A run's own repeats stay separate repeats."""
    from profiler_kit.errors import UsageError

    first = reports[0]
    shape = _shape(first)
    for report, label in zip(reports[1:], labels[1:], strict=True):
        if _shape(report) != shape:
            raise UsageError(f"{label}: not a run of the same benchmark as {labels[0]} "
                             "(other models, batch sizes or configurations): runs on one side "
                             "must repeat one benchmark")
    merged = {k: v for k, v in first.items() if k != "benchmark_results"}
    merged["benchmark_results"] = [
        {**bench, "result": [_merged_result(res, [r["benchmark_results"][b]["result"][i]
                                                  for r in reports])
                             for i, res in enumerate(bench.get("result", []))]}
        for b, bench in enumerate(_benchmarks(first))
    ]
    return merged


def _shape(report: Mapping[str, Any]) -> list[tuple]:
    return [(b.get("model"), b.get("batch_size"), str(_bucket(report, b)),
             tuple(_configurations(b))) for b in _benchmarks(report)]


def _merged_result(first: Mapping[str, Any], results: list[Mapping[str, Any]]
                   ) -> dict[str, Any]:
    repeats: list[list[float]] = []
    for res in results:
        grouped = res.get("repeat_measurements") or (
            [res["measurements"]] if res.get("measurements") else [])
        repeats += [list(r) for r in grouped if r]
    if not repeats:  # percentiles only: the first run's stand
        return dict(first)
    return {**first, "repeat_measurements": repeats,
            "measurements": [v for r in repeats for v in r],
            "contention": [c for res in results for c in res.get("contention") or ()]}
