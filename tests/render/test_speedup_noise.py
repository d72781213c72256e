"""One word per noise verdict state (beyond noise, within noise, inconclusive, not judged),
the same in the console, summary.md, report.html and run.json, with the mark beside the
speedup following it and every legend naming every word."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import msgspec
import pytest
from rich.console import Console
from timed_strategies import timed

from profiler_kit.noise import (
    BEYOND_NOISE,
    CONTENDED,
    INCONCLUSIVE,
    NOT_JUDGED,
    PAIRED_BY_ROUND,
    STATES,
    UNSTABLE,
    WITHIN_NOISE,
    WITHIN_RUN,
    NoiseVerdict,
)
from profiler_kit.render.console import run as run_console
from profiler_kit.render.console.tune import verdict as tune_verdict
from profiler_kit.render.html import run_charts
from profiler_kit.render.markdown.run import render_markdown
from profiler_kit.render.wording import run_answer, speedup_noise
from profiler_kit.results import RunResult, StrategyResult, against_baseline, read_run

DATA = Path(__file__).parents[1] / "data"


def _verdict(low: float, high: float, beyond: bool | None, doubt: str = "",
             margin: float = 0.05) -> NoiseVerdict:
    return NoiseVerdict(PAIRED_BY_ROUND, beyond, low, high, margin,
                        "the rounds disagree: ..." if doubt else "3 rounds", doubt)


# (verdict, state, mark): the cases of the task, built as the noise models build them
CASES = [
    (_verdict(0.08, 0.30, True), BEYOND_NOISE, ""),  # entirely beyond +5 %
    (_verdict(-0.30, -0.08, True), BEYOND_NOISE, ""),  # entirely beyond -5 %
    (_verdict(-0.03, 0.04, False), WITHIN_NOISE, "~"),  # entirely inside +-5 %
    (_verdict(-0.05, 0.05, False), WITHIN_NOISE, "~"),  # on the line: not beyond it
    # sequential+amp 0.90x: [-20.2 %, -4.0 %] excludes 0 but crosses the -5 % line
    (_verdict(-0.202, -0.040, False), INCONCLUSIVE, "±"),
    (_verdict(-0.10, 0.12, False), INCONCLUSIVE, "±"),  # crosses both lines
    # threads 0.81x: an interval within, but the rounds disagree
    (_verdict(-0.04, 0.03, False, UNSTABLE), NOT_JUDGED, "?"),
    (_verdict(0.10, 0.40, None, UNSTABLE), NOT_JUDGED, "?"),  # beyond, doubted
    (_verdict(-0.40, -0.10, None, CONTENDED), NOT_JUDGED, "?"),
    (NoiseVerdict(WITHIN_RUN, None, reason="fewer than 5 samples"), NOT_JUDGED, "?"),
]


@pytest.mark.parametrize(("v", "state", "mark"), CASES)
def test_each_state_has_one_word_and_one_mark(v, state, mark) -> None:
    assert v.state == state
    assert speedup_noise.mark(v) == mark
    text = speedup_noise.interval(v)
    assert text.startswith(state)
    assert [w for w in STATES if w in text] == [state]  # no other state's word
    assert tune_verdict(v).endswith(state) or (v.doubt and "not judged" in tune_verdict(v))


def test_every_mark_is_its_own() -> None:
    marks = [speedup_noise.MARKS[s] for s in STATES]
    assert len(set(marks)) == len(STATES) and speedup_noise.MARKS[BEYOND_NOISE] == ""


def test_the_state_is_in_run_json_and_decodes_from_files_with_or_without_it() -> None:
    """run.json says the state in the same word; a file written before the key (or by a
    writer that drops it) decodes to the same verdict, and an older reader, whose struct
    has no such field, reads a file with it."""
    for v, state, _ in CASES:
        doc = {"name": "s", "status": "ok", "noise": msgspec.structs.asdict(v)}
        s = StrategyResult("s", "ok", noise=v)
        written = s.to_json()["noise"]
        assert written["state"] == state
        new = msgspec.convert({**doc, "noise": written}, StrategyResult)
        old = msgspec.convert(doc, StrategyResult)
        assert new.noise == old.noise == v and new.noise.state == state

    class OlderVerdict(msgspec.Struct, frozen=True):  # the struct before the state
        method: str
        beyond_noise: bool | None
        ci_low_fraction: float | None = None
        ci_high_fraction: float | None = None
        min_effect_fraction: float | None = None
        reason: str = ""
        doubt: str = ""

    for v, _, _ in CASES:
        written = StrategyResult("s", "ok", noise=v).to_json()["noise"]
        assert msgspec.convert(written, OlderVerdict).beyond_noise == v.beyond_noise


def test_every_legend_says_every_word_with_its_mark() -> None:
    rows = [StrategyResult("base", "ok"), StrategyResult("a", "ok", noise=CASES[0][0])]
    for line in (speedup_noise.legend(rows, "base", True),
                 speedup_noise.legend([StrategyResult("b", "ok", noise=CASES[4][0])], "b",
                                      True)):
        for state in STATES:
            assert state in line
        assert "~ within noise" in line and "± inconclusive" in line and "? not judged" in line
        assert "margin ±5 %" in line




def _run(strategies, name: str = "concurrent", baseline: str = "sequential") -> RunResult:
    return RunResult(
        run_dir=Path(f"traces/{name}/r1"), scenario=name, description="", baseline=baseline,
        item_unit="images", device="cpu", params={}, sweep=(), points=(),
        options={"iterations": 8, "warmup": 1}, environment={},
        strategies=against_baseline(strategies, baseline),
        started_at="2026-01-01T00:00:00+00:00")


@pytest.fixture(scope="module")
def constructed() -> RunResult:
    """Paired verdicts in every state, from rounds: beyond noise (twice the speed), within
    noise (the same speed), inconclusive (about 10 % faster, the interval crossing +5 %)
    and not judged (rounds that disagree)."""
    return _run((timed("sequential", [20, 20, 20]), timed("twice", [10, 10.1, 9.9]),
                 timed("same", [20, 20.1, 19.9]), timed("a-tenth", [18.2, 19, 17.5]),
                 timed("unsteady", [19, 12, 26])))


def test_constructed_rounds_reach_every_state(constructed) -> None:
    by = {s.name: s.noise.state for s in constructed.strategies if s.noise}
    assert by == {"twice": BEYOND_NOISE, "same": WITHIN_NOISE, "a-tenth": INCONCLUSIVE,
                  "unsteady": NOT_JUDGED}


@pytest.fixture(scope="module")
def real() -> RunResult:
    """The real run folder's run.json (recorded before verdicts), judged as the runner
    judges it: one round of 5 samples each, so within one run (margin +-10 %)."""
    run = read_run(DATA / "run_concurrent_cpu.json")
    return msgspec.structs.replace(run, strategies=against_baseline(run.strategies,
                                                                     run.baseline))


def test_the_real_run_has_three_states(real) -> None:
    """sequential+amp's interval [-30.7 %, +131 %] was called "within noise"; it crosses
    +-10 %, so it is inconclusive. threads is beyond noise, threads+amp's samples fall in
    two clusters (not judged)."""
    by = {s.name: s.noise for s in real.strategies if s.noise}
    assert {k: v.state for k, v in by.items()} == {
        "sequential+amp": INCONCLUSIVE, "threads": BEYOND_NOISE, "threads+amp": NOT_JUDGED}
    assert by["sequential+amp"].beyond_noise is False  # what older readers read
    assert by["threads+amp"].doubt == UNSTABLE


def _formats(run: RunResult) -> dict[str, str]:
    buf = io.StringIO()
    run_console.render(Console(file=buf, width=150, color_system=None,
                               force_terminal=False), run)
    return {"console": buf.getvalue(), "markdown": render_markdown(run)}


@pytest.mark.parametrize("which", ["real", "constructed"])
def test_every_format_says_the_same_word_and_mark(which, request) -> None:
    """Per strategy: the mark beside the speedup on the console, in summary.md and on the
    report's bars; the word in summary.md's noise cell, the bars' hover and run.json; and
    each format's legend naming every word."""
    run: RunResult = request.getfixturevalue(which)
    out = _formats(run)
    console = " ".join(out["console"].split())
    chart = run_charts.throughput_chart(run)
    (bars,) = chart.data
    by_label = dict(zip(bars["x"], zip(bars["text"], bars["customdata"], strict=True),
                        strict=True))
    doc = json.loads(json.dumps(run.to_json()))  # as run.json holds it
    saved = {s["name"]: s["noise"] for s in doc["strategies"]}
    for s in run.strategies:
        if s.noise is None:
            continue
        state, mark = s.noise.state, speedup_noise.MARKS[s.noise.state]
        shown = speedup_noise.speedup(s)
        assert shown == (f"{s.speedup:.2f}× {mark}" if mark else f"{s.speedup:.2f}×")
        row = next(ln for ln in out["markdown"].splitlines() if ln.startswith(f"| {s.name} |"))
        cells = [c.strip() for c in row.split(" | ")]
        assert shown in cells
        noise_cell = next(c for c in cells if any(c.startswith(w) for w in STATES))
        assert noise_cell.startswith(state)
        assert [w for w in STATES if w in noise_cell] == [state]
        assert re.search(rf"\b{re.escape(s.name)} .*{re.escape(shown)}", console)
        assert by_label[s.label] == (shown, speedup_noise.interval(s.noise))
        assert saved[s.name]["state"] == state
    for text in (console, out["markdown"], chart.caption):
        for state in STATES:
            assert state in text
        assert "± inconclusive" in text and "~ within noise" in text


def test_the_answer_never_contradicts_the_table(real) -> None:
    """threads is faster than sequential beyond noise; threads+amp, faster still, is not
    judged. The answer once said no strategy was faster beyond noise."""
    line = run_answer.answer(real, "")
    assert line.startswith("Answer: threads is faster than sequential beyond noise, 24.46× ")
    assert line.endswith("but not clearly the fastest: threads+amp may be as fast "
                         "(not judged)")
