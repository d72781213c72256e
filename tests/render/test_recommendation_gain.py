"""A recommendation's predicted gain as a line: the figures, and what stands in for them
where they are not to be read as fact."""

from __future__ import annotations

from profiler_kit.analysis.core.note import note
from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.render.wording.recommendation_gain import gain_line


def _rec(**kw) -> Recommendation:
    return Recommendation("host_bound", "gpu:0", 0.5, 0.2, "above", "fraction", (), **kw)


def test_the_figures_of_a_trusted_prediction():
    r = _rec(change="cuda-graphs", step_ns=77_000_000, predicted_step_ns=41_200_000,
             predicted_gain_pct=46.49, prediction_trusted=True)
    assert gain_line(r) == "step 77.0 → 41.2 ms predicted (−46 %) with cuda-graphs"


def test_a_slower_step_a_small_gain_and_no_change():
    r = _rec(change="overlap-comm", step_ns=1_500_000_000, predicted_step_ns=1_520_000_000,
             predicted_gain_pct=-1.33, prediction_trusted=True)
    assert gain_line(r) == "step 1.50 → 1.52 s predicted (+1.3 %) with overlap-comm"
    lower = note("prediction_lower_bound", fixed_delay_share=0.31)
    bound = ("a lower bound: the fixed delays of the steps' GPU work (waits the trace does "
             "not explain), summed over its streams, come to 31% of the steps' time and do "
             "not move with a change")
    r = _rec(change="no-sync", step_ns=900_000, predicted_step_ns=900_000,
             predicted_gain_pct=0.0, prediction_trusted=True, prediction_caveat=lower)
    # ±0 % as a lower bound is no gain to read: the line says what holds the step instead
    assert gain_line(r) == f"no gain the replay can show with no-sync: {bound}"
    r = _rec(change="no-sync", step_ns=900_000, predicted_step_ns=850_000,
             predicted_gain_pct=5.56, prediction_trusted=True, prediction_caveat=lower)
    assert gain_line(r) == f"step 900.0 → 850.0 µs predicted (−5.6 %) with no-sync; {bound}"


def test_an_untrusted_prediction_says_so_before_its_figures():
    r = _rec(change="cuda-graphs", step_ns=77_000_000, predicted_step_ns=41_200_000,
             predicted_gain_pct=46.49, prediction_trusted=False,
             prediction_caveat=note("prediction_not_trusted", step_error=0.09,
                                    window_error=0.02, missing=(("late_return", 3, 1_500_000),)))
    line = gain_line(r)
    assert line == ("prediction with cuda-graphs not trusted (the replay misses the measured "
                    "step by 9.0% and the window by 2.0%; the graph lacks: 3 blocking calls "
                    "return 1.5 ms later than the GPU work they wait for allows: they wait for "
                    "something else the trace does not show); it reads step 77.0 → 41.2 ms")
    assert "predicted" not in line.split("; it reads")[1]


def test_no_prediction_and_no_change():
    assert gain_line(_rec()) is None
    r = _rec(change="no-dataloader-wait",
             prediction_caveat=note("no_dataloader_next", change="no-dataloader-wait"))
    assert gain_line(r) == ("no prediction with no-dataloader-wait: no-dataloader-wait: no "
                            "DataLoader __next__ in the trace")
    r = _rec(no_prediction=note("memory_is_not_time"))
    assert gain_line(r) == "no prediction: memory is not time: the step does not move"


def test_every_format_gives_each_recommendation_its_gain_line():
    """On a real trace whose rules carry predictions: the console, Markdown and the
    report say each recommendation's gain line under its title."""
    import html
    import io

    from real_traces import analysis
    from rich.console import Console

    from profiler_kit.render.console.analysis import trace_view
    from profiler_kit.render.html import report
    from profiler_kit.render.markdown.analysis import trace_section

    a = analysis("h100_bert_small.json.gz")
    gains = [gain_line(r) for r in a.recommendations]
    assert len(gains) >= 2 and all(gains)
    buf = io.StringIO()
    Console(file=buf, width=400, color_system=None).print(trace_view(a, width=400))
    md = "\n".join(trace_section(a))
    page = report.render("analyze", [a])
    for gain in gains:
        assert f"   {gain}\n" in buf.getvalue()
        assert f"_{gain}_" in md
        assert f"<div><strong>{html.escape(gain)}</strong></div>" in page
