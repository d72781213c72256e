"""The what-if chart of the HTML report: each trace's replayed step and the step predicted
with each advised change, the same figures the recommendations carry, in rank order."""

from pathlib import Path

import pytest
from msgspec.structs import replace

from profiler_kit import api
from profiler_kit.render.html.whatif_charts import whatif_charts
from profiler_kit.render.wording.recommendation_gain import gain_line

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = ("h100_owlv2_dataloader.json.gz", "a100_ddp_nccl_rank0.json.gz",
          "cpu_torch_profiler.pt.trace.json.gz")


@pytest.fixture(scope="module")
def analyses():
    return list(api.analyze([DATA / n for n in TRACES], jobs=1))


def test_bars_are_the_recommendations_predicted_steps_top_down_in_rank_order(analyses):
    charts = {c.title.rsplit(": ", 1)[1]: c for c in whatif_charts(analyses)}
    # the CPU trace's rules have no change that predicts them: no chart for it
    assert set(charts) == {"h100_owlv2_dataloader", "a100_ddp_nccl_rank0"}
    for a in analyses[:2]:
        (bars,) = charts[a.label].data
        predicted = [r for r in a.recommendations if r.predicted_step_ns is not None]
        assert predicted, a.label
        # Plotly draws the first category at the bottom: the list reads bottom-up
        labels, steps, hover = bars["y"][::-1], bars["x"][::-1], bars["customdata"][::-1]
        assert labels[0] == "replayed, no change" and steps[0] == predicted[0].step_ns / 1e6
        changes = list(dict.fromkeys(r.change for r in predicted))
        assert [label.split(" (")[0] for label in labels[1:]] == changes
        for change, step, text in zip(changes, steps[1:], hover[1:], strict=True):
            first = next(r for r in predicted if r.change == change)
            assert step == first.predicted_step_ns / 1e6 and text == gain_line(first)
    # owlv2 waits for its DataLoader half the step: no-dataloader-wait halves it
    owl = charts["h100_owlv2_dataloader"].data[0]
    at = owl["y"].index("no-dataloader-wait (dataloader_share)")
    assert owl["x"][at] < 0.6 * owl["x"][owl["y"].index("replayed, no change")]


def test_a_prediction_not_trusted_is_grey(analyses):
    a = analyses[0]
    shaky = replace(a, recommendations=tuple(
        replace(r, prediction_trusted=False) if r.predicted_step_ns is not None else r
        for r in a.recommendations))
    (chart,) = whatif_charts([shaky])
    colors = chart.data[0]["marker"]["color"]
    assert colors[-1] == "#79706e" and set(colors[:-1]) == {"#bab0ac"}
    (trusted,) = whatif_charts([a])
    assert "#bab0ac" not in trusted.data[0]["marker"]["color"]
