"""A recommendation's predicted gain as a line: the figures, and what stands in for them
where they are not to be read as fact."""

from __future__ import annotations

from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.render.wording.recommendation_gain import gain_line


def _rec(**kw) -> Recommendation:
    return Recommendation("host_bound", "gpu:0", "t", "a", 0.5, 0.2, "above", "fraction", (),
                          **kw)


def test_the_figures_of_a_trusted_prediction():
    r = _rec(change="cuda-graphs", step_ns=77_000_000, predicted_step_ns=41_200_000,
             predicted_gain_pct=46.49, prediction_trusted=True)
    assert gain_line(r) == "step 77.0 → 41.2 ms predicted (−46 %) with cuda-graphs"


def test_a_slower_step_a_small_gain_and_no_change():
    r = _rec(change="overlap-comm", step_ns=1_500_000_000, predicted_step_ns=1_520_000_000,
             predicted_gain_pct=-1.33, prediction_trusted=True)
    assert gain_line(r) == "step 1.50 → 1.52 s predicted (+1.3 %) with overlap-comm"
    r = _rec(change="no-sync", step_ns=900_000, predicted_step_ns=900_000,
             predicted_gain_pct=0.0, prediction_trusted=True, prediction_caveat="a lower bound")
    # ±0 % as a lower bound is no gain to read: the line says what holds the step instead
    assert gain_line(r) == "no gain the replay can show with no-sync: a lower bound"
    r = _rec(change="no-sync", step_ns=900_000, predicted_step_ns=850_000,
             predicted_gain_pct=5.56, prediction_trusted=True, prediction_caveat="a lower bound")
    assert gain_line(r) == "step 900.0 → 850.0 µs predicted (−5.6 %) with no-sync; a lower bound"


def test_an_untrusted_prediction_says_so_before_its_figures():
    r = _rec(change="cuda-graphs", step_ns=77_000_000, predicted_step_ns=41_200_000,
             predicted_gain_pct=46.49, prediction_trusted=False,
             prediction_caveat="not trusted: the replay misses the measured step by 9.0 %")
    line = gain_line(r)
    assert line == ("prediction with cuda-graphs not trusted (the replay misses the measured "
                    "step by 9.0 %); it reads step 77.0 → 41.2 ms")
    assert "predicted" not in line.split("; it reads")[1]


def test_no_prediction_and_no_change():
    assert gain_line(_rec()) is None
    r = _rec(change="no-dataloader-wait",
             prediction_caveat="no-dataloader-wait: no DataLoader __next__ in the trace")
    assert gain_line(r) == ("no prediction with no-dataloader-wait: no-dataloader-wait: no "
                            "DataLoader __next__ in the trace")
