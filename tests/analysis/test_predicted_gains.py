"""Each recommendation's predicted gain: the change that models its advice, the step the
what-if replay predicts with it alone (the same as ``what_if`` gives), the ranking by
that gain and the rules held back under the line."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from analysis_tables import kernel, launch, make_table, op
from real_traces import DATA, analysis
from rule_codes import rule_entries

from profiler_kit.analysis import predicted_gains as pg
from profiler_kit.analysis.advice.counterparts import CHANGE_OF_RULE, WHY_NO_PREDICTION
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.analysis.whatif import changes as c
from profiler_kit.analysis.whatif.replay import what_if
from profiler_kit.render.wording.notes import say
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import Cat

ADVICE = Path(pg.__file__).parent / "advice"


def _rule_ids() -> set[str]:
    return {key.partition("/")[0] for key in rule_entries(ADVICE.glob("*.py"))}


def test_every_rule_says_which_change_models_it():
    ids = _rule_ids()
    assert {"launch_bound", "idle_after_synchronization", "idle_in_optimizer",
            "waiting_for_late_rank"} <= ids
    assert ids == set(CHANGE_OF_RULE)


def test_every_change_named_is_one_the_replay_knows():
    table = load(DATA / "h100_bert_small.json.gz")
    for label in {v for v in CHANGE_OF_RULE.values() if v is not None}:
        assert pg.change_of(label, table).label() == label


def test_precision_is_fp16_where_the_device_has_no_bf16_rate():
    assert pg.change_of("precision bf16", load(DATA / "v100_resnet50_tb_sample_step.json.gz")) \
        == c.Precision("fp16")


def _gain(table, change: c.Change) -> float:
    (g,) = what_if(table, changes=[change]).gains
    return round(100 * g.gain_pct, 3)


def _one(recs, rule: str) -> Recommendation:
    (r,) = [r for r in recs if r.rule == rule]
    return r


@pytest.mark.parametrize(("name", "rule", "change"), [
    ("h100_bert_small.json.gz", "host_bound", c.CudaGraphs()),
    ("v100_resnet50_tb_sample_step.json.gz", "dataloader_share", c.NoDataloaderWait()),
    ("v100_resnet50_tb_sample_step.json.gz", "reduced_precision_unused", c.Precision("fp16")),
    ("a100_event_sync_multi_stream.json.gz", "fp32_matmul_on_tensor_core_gpu",
     c.Precision("bf16")),
    ("mi300_resnet_act_checkpoint.json.gz", "exposed_communication", c.OverlapComm()),
])
def test_a_real_trace_predicts_what_whatif_gives(name, rule, change):
    a = analysis(name)
    r = _one(a.recommendations + a.held_back, rule)
    assert r.change == change.label()
    assert r.predicted_gain_pct == pytest.approx(_gain(load(DATA / name), change), abs=1e-9)
    assert r.prediction_trusted and r.step_ns > 0 and r.predicted_step_ns > 0


def test_launch_bound_predicts_what_cuda_graphs_gives():
    # each launch call starts just after the previous kernel ends and takes 980 ns; its
    # 10 ns kernel starts 5 ns after it returns: launch-bound
    events = [op("ProfilerStep#1", 0, 50 * 1000 + 100, cat=Cat.USER_ANNOTATION),
              op("aten::add", 0, 50 * 1000)]
    for i in range(50):
        events += [launch(i * 1000 + 5, corr=i + 1, dur=980),
                   kernel("k", i * 1000 + 990, 10, corr=i + 1)]
    table = make_table(events)
    r = _one(analyze_table(table).recommendations, "launch_bound")
    assert r.change == "cuda-graphs" and r.prediction_trusted
    assert r.predicted_gain_pct == pytest.approx(_gain(table, c.CudaGraphs()), abs=1e-9)
    assert r.predicted_gain_pct > 50  # 50 launches of 985 ns become one


def test_synchronization_predicts_what_no_sync_gives():
    """The GPU drains while the thread waits in a synchronization, then idles while the
    CPU goes on: without the wait the host launches its next work sooner."""
    events = [op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
              op("aten::mm", 0, 10), launch(2, corr=1), kernel("k1", 10, 300, corr=1),
              op("aten::item", 20, 300),
              launch(25, corr=9, name="cudaStreamSynchronize", dur=290),
              op("aten::add", 700, 10), launch(702, corr=2), kernel("k2", 710, 290, corr=2)]
    table = make_table(events)
    a = analyze_table(table, min_gain_pct=-math.inf)
    r = _one(a.recommendations, "idle_after_synchronization")
    assert r.change == "no-sync"
    assert r.predicted_gain_pct == pytest.approx(_gain(table, c.NoSync()), abs=1e-9)


def test_rules_without_a_counterpart_have_no_prediction():
    a = analysis("h100_bert_small.json.gz")
    for r in a.recommendations:
        if CHANGE_OF_RULE[r.rule] is None:
            assert r.change is None and r.predicted_step_ns is None \
                and r.predicted_gain_pct is None and r.prediction_trusted is None
            assert r.no_prediction == note(WHY_NO_PREDICTION[r.rule])
    # every rule no change models says why
    assert {r for r, change in CHANGE_OF_RULE.items() if change is None} == set(
        WHY_NO_PREDICTION)


def test_a_change_with_nothing_to_change_gives_no_prediction():
    """A DataLoader rule on a trace whose loader is not the __next__ the change removes."""
    events = [op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
              op("MyDataLoader.fetch", 0, 300), op("aten::mm", 400, 100)]
    (r,) = [r for r in analyze_table(make_table(events)).recommendations
            if r.rule == "dataloader_share"]
    assert r.change == "no-dataloader-wait" and r.predicted_gain_pct is None
    assert r.prediction_caveat == note("no_dataloader_next", change="no-dataloader-wait")


def _rec(rule: str, gain: float | None, trusted: bool = True, caveat: Note | None = None
         ) -> Recommendation:
    return Recommendation(rule, "trace", 0.5, 0.2, "above", "fraction", (),
                          change=None if gain is None else "cuda-graphs",
                          step_ns=None if gain is None else 100,
                          predicted_step_ns=None if gain is None else 100 - int(gain),
                          predicted_gain_pct=gain,
                          prediction_trusted=None if gain is None else trusted,
                          prediction_caveat=caveat)


def test_ranked_by_gain_then_the_rest_in_their_order_and_small_gains_held_back():
    recs = [_rec("a", None), _rec("b", 5.0), _rec("c", 1.0), _rec("d", 40.0),
            _rec("e", 60.0, trusted=False, caveat=note("prediction_not_trusted")),
            _rec("f", 0.5, caveat=note("prediction_lower_bound")),
            _rec("g", 3.0, caveat=note("prediction_lower_bound")),
            _rec("h", None)]
    out = pg.ranked(recs, 2.0)
    assert [r.rule for r in out.shown] == ["d", "b", "g", "a", "e", "f", "h"]
    assert [r.rule for r in out.held_back] == ["c"]
    assert out.note == note("rules_held_back", min_gain_pct=2.0,
                            rules=(("c", "trace", "cuda-graphs", 1.0),))
    assert say(out.note) == ("held back: 1 rule whose predicted gain is under 2 %: c [trace] "
                             "(cuda-graphs: 1.0 %) (--min-gain sets the line)")
    assert pg.ranked(recs, 0.0).held_back == ()
    assert [r.rule for r in pg.ranked(recs, 50.0).held_back] == ["b", "c", "d"]


def test_the_ranking_on_a_real_trace():
    """The plugin's ResNet-50 sample: the DataLoader's wait (−37 %) before fp16 (−7 %)."""
    recs = analysis("v100_resnet50_tb_sample_step.json.gz").recommendations
    assert [r.rule for r in recs] == ["dataloader_share", "reduced_precision_unused"]
    assert recs[0].predicted_gain_pct == pytest.approx(36.8, abs=0.1)
    assert recs[1].change == "precision fp16"
    assert recs[1].predicted_gain_pct == pytest.approx(6.8, abs=0.1)


def test_the_replay_runs_only_where_a_rule_has_a_change(monkeypatch):
    calls = []
    monkeypatch.setattr(pg, "each_alone", lambda *a, **k: calls.append(a) or (_ for _ in ()
                                                                                ).throw(
        AssertionError("replayed")))
    a = analyze_table(make_table([op("aten::mm", 0, 100)]))  # CPU-only: no rule fires
    assert not calls and a.held_back == ()
