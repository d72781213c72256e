"""The answer line: which strategy is fastest beyond noise, or why none is called so."""

from __future__ import annotations

from pathlib import Path

from timed_strategies import timed

from profiler_kit.render.wording.run_answer import answer
from profiler_kit.results import RunResult, StrategyResult, against_baseline


def _run(*strategies: StrategyResult) -> RunResult:
    return RunResult(
        run_dir=Path("traces/concurrent/r1"), scenario="concurrent", description="",
        baseline="sequential", item_unit="images", device="cpu", params={}, sweep=(),
        points=(), options={}, environment={},
        strategies=against_baseline(strategies, "sequential"),
        started_at="2026-01-01T00:00:00+00:00")


def test_a_strategy_beyond_noise_but_tied_with_another_is_not_called_the_fastest() -> None:
    """The main job on a 2-core machine: threads 1.25x beyond noise, threads+amp's
    interval reaching above threads' lower bound. Neither is clearly fastest, but threads
    is faster than the baseline beyond noise, and the line says both (it once read "no
    strategy is faster than sequential beyond noise; the fastest, threads at 1.25x, is
    beyond noise")."""
    run = _run(timed("sequential", [20, 20, 20]), timed("threads", [16, 15, 17]),
               timed("threads+amp", [17, 16, 18]))
    by = {s.name: s.noise for s in run.strategies}
    t, amp = by["threads"], by["threads+amp"]
    assert t.beyond_noise and t.ci_low_fraction > 0
    assert amp.ci_high_fraction >= t.ci_low_fraction  # the intervals overlap
    line = answer(run, "")
    assert line.startswith("Answer: threads is faster than sequential beyond noise, ")
    assert line.endswith("but not clearly the fastest: threads+amp may be as fast "
                         "(the intervals overlap)")
    assert "no strategy is faster" not in line


def test_a_rival_whose_rounds_disagree_is_named_as_not_judged() -> None:
    """threads+amp's rounds disagree (17, 15.5 and 19 ms against 20): its speedup is not
    judged, however its interval lies, and the line says so rather than "overlap"."""
    run = _run(timed("sequential", [20, 20, 20]), timed("threads", [16, 15, 17]),
               timed("threads+amp", [17, 15.5, 19]))
    assert {s.name: s.noise.state for s in run.strategies if s.noise} == {
        "threads": "beyond noise", "threads+amp": "not judged"}
    line = answer(run, "")
    assert line.startswith("Answer: threads is faster than sequential beyond noise, ")
    assert line.endswith("but not clearly the fastest: threads+amp may be as fast "
                         "(not judged)")


def test_a_clear_winner_and_no_winner_read_as_before() -> None:
    clear = _run(timed("sequential", [20, 20, 20]), timed("threads", [10, 10.2, 9.9]),
                 timed("threads+amp", [19, 21, 20]))
    assert answer(clear, "").startswith("Answer: threads is fastest, ")
    tie = _run(timed("sequential", [20, 20, 20]), timed("threads", [19, 21, 19.5]))
    assert answer(tie, "").startswith(
        "Answer: no strategy is faster than sequential beyond noise; the fastest, threads")
