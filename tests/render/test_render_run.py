"""The run's console output and summary.md, rendered to a fixed-width console."""

from __future__ import annotations

import io
from pathlib import Path

import msgspec
from rich.console import Console

from profiler_kit.render.console import run as run_console
from profiler_kit.render.markdown.run import render_markdown
from profiler_kit.results import Equivalence, RunResult, StrategyResult, add_repeat, stats


def _ok(name: str, samples: list[int], speedup: float, point: str = "") -> StrategyResult:
    return StrategyResult(
        name=name, status="ok", point=point, samples_ns=tuple(samples), stats=stats(samples),
        profiled=stats([s * 2 for s in samples]), items_per_step=8,
        throughput_items_per_s=8e9 / stats(samples).median_ns, speedup=speedup,
        peak_memory={"cpu": {"allocated_bytes": 3 << 20}},
        hotspots={"convolution": 0.5, "batchnorm": 0.2, "gemm": 0.1, "other": 0.2},
        hotspot_basis="self CPU time", equivalence=Equivalence(True, True),
    )


def _result(strategies: tuple[StrategyResult, ...], points=()) -> RunResult:
    return RunResult(
        run_dir=Path("traces/concurrent/20260101-000000-abcd"), scenario="concurrent",
        description="two models", baseline="sequential", item_unit="images", device="cpu",
        params={"batch_size": 4}, sweep=("n",) if points else (), points=points,
        options={"iterations": 20, "warmup": 3},
        environment={"torch": "2.x", "hostname": "box", "cpu_threads": 2,
                     "command_line": "profkit run concurrent"},
        strategies=strategies, started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
    )


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=150, color_system=None, force_terminal=False), buf


def test_results_table_highlights_the_best_and_flags_noise() -> None:
    result = _result((
        _ok("sequential", [100_000_000] * 5, 1.0),
        _ok("threads", [50_000_000, 40_000_000, 60_000_000, 50_000_000, 70_000_000], 2.0),
        StrategyResult(name="streams", status="skipped",
                       reason="needs CUDA; this machine has none"),
        StrategyResult(name="broken", status="failed", error="RuntimeError: out of memory"),
    ))
    console, buf = _console()
    run_console.render(console, result)
    out = buf.getvalue()
    assert "threads (best)" in out and "sequential (best)" not in out
    assert "2.00×" in out and "100 ms" in out and "50 ms" in out
    assert "noisy" in out and "noisy (IQR/median > 10 %): threads" in out
    assert "skipped streams: needs CUDA; this machine has none" in out
    assert "failed broken: RuntimeError: out of memory" in out
    assert "convolution" in out and "50.0 %" in out
    assert "profkit tensorboard traces/concurrent/20260101-000000-abcd" in out
    assert "3 MiB" in out


def test_sweep_gets_a_table_per_point_and_a_growth_summary() -> None:
    result = _result((
        _ok("linear", [10_000] * 3, 1.0, "n=1"), _ok("bmm", [5_000] * 3, 2.0, "n=1"),
        _ok("linear", [80_000] * 3, 1.0, "n=8"), _ok("bmm", [9_000] * 3, 8.9, "n=8"),
    ), points=({"n": 1}, {"n": 8}))
    console, buf = _console()
    run_console.render(console, result)
    out = buf.getvalue()
    assert "concurrent on cpu  [n=1]" in out and "concurrent on cpu  [n=8]" in out
    assert "Median step time across the sweep" in out
    assert "80 µs" in out and "9 µs" in out


def test_interrupted_run_says_so() -> None:
    result = _result((_ok("sequential", [1_000] * 3, 1.0),
                      StrategyResult(name="threads", status="interrupted")))
    result = msgspec.structs.replace(result, interrupted=True)
    console, buf = _console()
    run_console.render(console, result)
    assert "interrupted: the strategies that finished are kept" in buf.getvalue()
    assert result.exit_status == 130
    assert "**Interrupted**" in render_markdown(result)


def test_summary_markdown_has_every_statistic_and_the_tensorboard_command() -> None:
    result = _result((_ok("sequential", [100, 200, 300, 400, 500], 1.0),
                      StrategyResult(name="streams", status="skipped", reason="needs CUDA")))
    md = render_markdown(result)
    assert "| strategy | n | median | IQR | mean | p50 | p75 | p90 | p95 | min | max" in md
    assert "**sequential** (best)" in md and "| 300 ns |" in md
    assert "skipped `streams`: needs CUDA" in md
    assert "profkit tensorboard traces/concurrent/20260101-000000-abcd" in md
    assert "profkit run concurrent" in md


def test_progress_bars_report_each_strategy_as_it_finishes() -> None:
    console, buf = _console()
    with run_console.ProgressBars(console) as bars:
        bars.strategy_started("sequential")
        bars.progress("timing", 1, 2)
        bars.progress("timing", 2, 2)
        first = _ok("sequential", [2_000_000] * 3, 1.0)
        bars.strategy_finished(first)
        bars.strategy_started("streams")
        bars.strategy_finished(StrategyResult(name="streams", status="skipped",
                                              reason="needs CUDA; this machine has none"))
        bars.strategy_started("sequential 2/3")
        # the second round's own median (6 ms), not the pool of both rounds (4 ms)
        bars.strategy_finished(add_repeat(first, [6_000_000] * 3))
    out = buf.getvalue()
    assert "sequential" in out and "ok round 1: median 2 ms" in out
    assert "ok round 2: median 6 ms" in out
    assert "streams" in out and "skipped needs CUDA; this machine has none" in out
    assert "oversubscribed" not in out and "beside other" not in out  # no record: quiet


def test_a_round_beside_other_work_says_so_as_it_ends() -> None:
    """The main job beside one busy process: the baseline's two intra-op threads on the
    one free core took 3.6 s a step (127 ms quiet); its progress line says why."""
    from profiler_kit.contention import RoundContention

    console, buf = _console()
    starved = RoundContention(wall_s=1.0, cores=2, others_cores=1.0, own_threads=2)
    slowed = RoundContention(wall_s=1.0, cores=2, others_cores=0.6, own_threads=1)
    quiet = RoundContention(wall_s=1.0, cores=2, others_cores=0.02, own_threads=2)
    with run_console.ProgressBars(console) as bars:
        for name, c in (("sequential", starved), ("threads", slowed), ("streams", quiet)):
            bars.strategy_started(name)
            r = _ok(name, [3_600_000_000] * 3, 1.0)
            bars.strategy_finished(msgspec.structs.replace(r, contention=(c,)))
    lines = " ".join(buf.getvalue().split()).split("  ")
    out = " ".join(lines)
    assert ("sequential ok round 1: median 3.6 s, oversubscribed: 2 busy threads on 1.0 "
            "free of 2 cores (other processes used 1.0)") in out
    assert "threads ok round 1: median 3.6 s, beside other processes using 0.6 of 2 cores" \
        in out
    assert "streams ok round 1: median 3.6 s" in out and out.count("cores") == 2


def test_ddp_run_is_judged_by_throughput_with_rank_medians_beside() -> None:
    from profiler_kit.results import against_baseline, throughput

    def ddp(name: str, items: int, median_ns: int, world: int,
            drift: tuple[float, ...]) -> StrategyResult:
        """Three rounds of five samples each, round k shifted by ``drift[k]``."""
        rounds = tuple(tuple(int(median_ns * (1 + f)) + j * 1000 for j in (-2, -1, 0, 1, 2))
                       for f in drift)
        samples = [v for r in rounds for v in r]
        return StrategyResult(
            name=name, status="ok", samples_ns=tuple(samples), stats=stats(samples),
            items_per_step=items, throughput_items_per_s=throughput(items, median_ns),
            world_size=world, repeat_samples_ns=rounds,
            per_rank_samples_ns=(tuple(samples), tuple(v - 9_000_000 for v in samples))
            if world > 1 else ())

    strategies = against_baseline((ddp("no-ddp", 8, 121_580_000, 1, (0, 0.01, -0.01)),
                                   ddp("ddp-w2", 16, 221_300_000, 2, (0, 0.011, -0.012))),
                                  "no-ddp")
    result = msgspec.structs.replace(_result(strategies), baseline="no-ddp", scenario="ddp")
    console, buf = _console()
    run_console.render(console, result)
    out = buf.getvalue()
    # +9.9 % in throughput, every round alike: beyond the 5 % margin, so ddp-w2 is best
    assert "ddp-w2 (best)" in out and "no-ddp (best)" not in out
    assert "1.10×" in out and "1.10× ~" not in out and "0.55×" not in out  # 72.3 vs 65.8/s
    assert "speedup against no-ddp, noise paired by round (3 rounds" in out
    assert "54.9 %" in out  # 72.3 / (2 x 65.8)
    assert "221 ms / 212 ms" in out  # each rank's median beside the slowest-rank step
    md = render_markdown(result)
    noise = strategies[1].noise
    interval = f"[{100 * noise.ci_low_fraction:+.1f} %, {100 * noise.ci_high_fraction:+.1f} %]"
    assert interval.startswith("[+9.") and noise.ci_high_fraction < 0.11
    assert "**ddp-w2** (best)" in md and f"| 1.10× | beyond noise {interval} | 54.9 % | " \
        "221 ms / 212 ms |" in md
    assert "best: the most images/s" in md and "independent rounds" not in md
    repeated = msgspec.structs.replace(result, options={**result.options, "repeats": 3})
    assert "in each of 3 independent rounds (the first one profiled)" in render_markdown(
        repeated)


def test_summary_shows_the_parameters_as_they_took_effect() -> None:
    """world_size 0 ("automatic") is recorded as the ranks it became; a sweep's values are
    listed as on the command line, not as a Python tuple."""
    from profiler_kit.scenario import builtin

    ddp = builtin("ddp")
    given = {"model": "resnet18", "world_size": 0, "bucket_cap_mb": (25.0,), "json_report": ""}
    resolved = ddp.resolve(given)
    assert resolved["world_size"] == 2  # no GPU here: 2 ranks on CPU
    assert builtin("pipeline").resolve({"world_size": 0})["world_size"] == 2
    result = msgspec.structs.replace(_result(()), params=dict(resolved))
    md = render_markdown(result)
    assert "parameters: model=resnet18, world_size=2, bucket_cap_mb=25.0\n" in md
    result = msgspec.structs.replace(result, params={"bucket_cap_mb": [25.0, 1.0]})
    assert "parameters: bucket_cap_mb=25.0,1.0\n" in render_markdown(result)
