"""Predictions measured, not assumed: a trace's hot ops grouped by their recorded inputs,
rebuilt and timed on this machine (profiler_kit.measure.op_replay), and replayed as a
what-if change (MeasuredOps)."""

from __future__ import annotations

import pytest
from analysis_tables import Ev, kernel, launch, make_table, op
from real_traces import DATA

from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.whatif.changes import MeasuredOps
from profiler_kit.analysis.whatif.hot_ops import group_rows, hot_ops
from profiler_kit.analysis.whatif.replay import replay
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import Cat

US = 1000


def step(dur: int) -> Ev:
    return Ev(Cat.USER_ANNOTATION, "ProfilerStep#1", 0, dur)


def conv(ts: int, dur: int) -> Ev:
    e = op("aten::conv2d", ts, dur, dims=[[2, 3, 8, 8], [4, 3, 3, 3], []])
    e.input_types = ["float", "float", ""]
    return e


def test_ops_group_by_name_and_inputs_and_the_hot_ones_hold_most_of_the_time():
    t = make_table([step(100 * US), conv(0, 50 * US), conv(50 * US, 30 * US),
                    op("aten::relu", 80 * US, 5 * US), op("aten::add", 85 * US, 15 * US)])
    tree = build_op_tree(t)
    hot = hot_ops(t, tree, attribute_gpu(t, tree))
    assert not hot.by_device and hot.total_ns == 100 * US
    names = [(g.name, g.count, g.host_ns) for g in hot.groups]
    assert names == [("aten::conv2d", 2, 80 * US), ("aten::add", 1, 15 * US)]  # 95 % ≥ 90 %
    assert hot.groups[0].reason == "" and hot.groups[1].reason.startswith("the trace recorded")
    assert set(group_rows(t, tree)) >= {g.key for g in hot.groups}


def test_a_measured_host_cost_moves_the_cpu_step_by_exactly_that_much():
    t = make_table([step(100 * US), conv(0, 50 * US), conv(50 * US, 30 * US),
                    op("aten::relu", 80 * US, 20 * US)])
    tree = build_op_tree(t)
    key = hot_ops(t, tree, None).groups[0].key
    slower = replay(t, changes=[MeasuredOps("precision bf16", "cpu", {key: (10 * US, 1.0)})])
    assert slower.predicted_step_ns == 120 * US  # two calls, 10 µs more each
    faster = replay(t, changes=[MeasuredOps("precision bf16", "cpu", {key: (-40 * US, 1.0)})])
    assert faster.predicted_step_ns == 100 * US - 40 * US - 30 * US  # never below zero a call
    none = replay(t, changes=[MeasuredOps("precision bf16", "cpu", {"other": (1.0, 1.0)})])
    assert none.predicted_step_ns == none.replayed_step_ns
    assert [n.code for n in none.notes] == ["no_op_measured"]


def test_on_a_gpu_trace_the_kernels_beneath_a_measured_op_scale():
    """A GPU-bound step: the conv's kernel (80 µs) halves, the step follows."""
    t = make_table([step(5 * US), conv(0, 4 * US), launch(1 * US, 1),
                    kernel("implicit_convolve_sgemm", 10 * US, 80 * US, corr=1)])
    tree = build_op_tree(t)
    key = hot_ops(t, tree, attribute_gpu(t, tree)).groups[0].key
    r = replay(t, changes=[MeasuredOps("precision bf16", "cuda", {key: (0.0, 0.5)})])
    assert r.predicted_step_ns < r.replayed_step_ns - 35 * US
    (n,) = r.notes
    assert (n.figures["kernels_before_ns"], n.figures["kernels_after_ns"]) == (80 * US, 40 * US)


def test_the_real_cpu_trace_groups_its_convolutions():
    t = load(DATA / "cpu_concurrent_sequential.pt.trace.json.gz")
    tree = build_op_tree(t)
    hot = hot_ops(t, tree, attribute_gpu(t, tree))
    assert {g.name for g in hot.groups} == {"aten::conv2d", "aten::batch_norm"}
    held = sum(g.host_ns for g in hot.groups) / hot.total_ns
    assert 0.9 <= held < 0.95 and all(g.reason == "" for g in hot.groups)


def test_ops_rebuilt_from_recorded_shapes_run_and_are_timed_in_pairs():
    pytest.importorskip("torch")
    from profiler_kit.measure.op_replay import build_args, measure

    t = load(DATA / "cpu_concurrent_sequential.pt.trace.json.gz")
    tree = build_op_tree(t)
    groups = hot_ops(t, tree, None).groups
    conv2d = next(g for g in groups if g.name == "aten::conv2d")
    args = build_args(conv2d, __import__("torch").device("cpu"))
    assert list(args[0].shape) == conv2d.dims[0] and args[2] is None  # no bias recorded
    import json

    assert args[3:] == [json.loads(c) for c in conv2d.concrete[3:]]  # stride, padding...
    (m,) = measure([conv2d], "bf16", "cpu").ops
    assert m.reason == "" and m.base_ns > 0 and m.alt_ns > 0 and m.rounds >= 5
    effect = m.effect()
    assert effect is not None and effect[0] == pytest.approx(m.alt_ns - m.base_ns)


def test_an_op_the_trace_cannot_describe_says_why():
    pytest.importorskip("torch")
    from profiler_kit.analysis.whatif.hot_ops import OpGroup
    from profiler_kit.measure.op_replay import measure

    custom = OpGroup("k1", "vllm::rms_norm", [[2, 4]], ["float"], [], [], 3, 10, 0,
                     "not an aten op (a custom op or a Python range): its inputs are not "
                     "described")
    missing = OpGroup("k2", "aten::add", [[2, 4], [2, 4], []], ["float", "float", "Scalar"],
                      [], ["", "", ""], 1, 10, 0)
    a, b = measure([custom, missing], "bf16", "cpu").ops
    assert a.base_ns is None and a.reason.startswith("not an aten op")
    assert b.base_ns is None and "did not record" in b.reason


def test_work_added_on_a_pools_threads_moves_the_step_that_waits_for_them():
    """The threads strategy: the main thread's step waits (untraced, in Python) for two
    worker threads that run one model each. Host time added to the workers' ops reaches
    the step's end through that join: each worker's burst joins the event of the main
    thread it fills and which ends after it with nothing recorded between."""
    t = load(DATA / "cpu_concurrent_threads.pt.trace.json.gz")
    tree = build_op_tree(t)
    hot = hot_ops(t, tree, None)
    effects = {g.key: (1_000_000.0, 1.0) for g in hot.groups}  # 1 ms more a call
    r = replay(t, changes=[MeasuredOps("precision bf16", "cpu", effects)])
    calls_per_step = sum(g.count for g in hot.groups) / 2 / 2  # two steps, two threads
    assert r.predicted_step_ns - r.replayed_step_ns > 0.5 * calls_per_step * 1_000_000


def test_ops_of_an_autocast_trace_and_arguments_recorded_without_a_value_are_rebuilt():
    """An autocast trace records a bf16 activation beside a float32 weight: its call is
    timed under the autocast it ran in (and a layout change keeps it). A string argument
    the trace recorded with no value (``approximate`` of ``aten::gelu``) takes its default."""
    pytest.importorskip("torch")
    from profiler_kit.analysis.whatif.hot_ops import OpGroup
    from profiler_kit.measure.op_replay import measure

    t = load(DATA / "cpu_concurrent_sequential_amp.pt.trace.json.gz")
    conv = next(g for g in hot_ops(t, build_op_tree(t), None).groups
                if g.name == "aten::conv2d" and "c10::BFloat16" in g.types)
    gelu = OpGroup("k", "aten::gelu", [[8, 64], []], ["float", ""], [[64, 1], []], ["", ""],
                   1, 10, 0)
    for m in measure([conv, gelu], "channels_last", "cpu").ops:
        assert m.reason == "" and m.base_ns > 0, m


def test_a_trace_whose_ops_cannot_be_timed_gets_no_measured_prediction(capsys):
    """Shapes not recorded: one line that says why, no '(measured)' figure; --repro writes
    nothing, not even its folder."""
    pytest.importorskip("torch")
    from profiler_kit import cli

    trace = str(DATA / "cpu_only_gloo.json.gz")
    assert cli.main(["whatif", trace, "--precision", "bf16", "--measure"]) == 2
    err = capsys.readouterr().err
    assert "no op of the trace could be timed" in err and "record_shapes was off" in err


def test_on_a_gpu_a_host_bound_calls_wall_ratio_is_not_applied_to_its_kernels_again():
    """Timed on a GPU, a call's host issue time is measured apart: its difference moves the
    host; the wall ratio scales the kernels only where the call is GPU-bound (else that
    ratio is the host's, counted once already)."""
    from profiler_kit.sources.measured_ops import MeasuredOp

    gpu_bound = MeasuredOp("k", "aten::mm", 1, base_ns=100_000, alt_ns=50_000,
                           host_base_ns=10_000, host_alt_ns=12_000)
    host_bound = MeasuredOp("k", "aten::add", 1, base_ns=20_000, alt_ns=30_000,
                            host_base_ns=18_000, host_alt_ns=28_000)
    cpu = MeasuredOp("k", "aten::add", 1, base_ns=20_000, alt_ns=30_000)
    assert gpu_bound.effect() == (2_000, 0.5)
    assert host_bound.effect() == (10_000, 1.0)
    assert cpu.effect() == (10_000, 1.0)


def test_top_level_ops_by_hand_on_a_real_gpu_trace():
    """BERT-small on an H100 (TraceLens' trace): the calls grouped as top-level ops are the
    aten ops no other aten op on their thread contains, counted here from the raw JSON."""
    import gzip
    import json
    from collections import Counter

    with gzip.open(DATA / "h100_bert_small.json.gz", "rt") as fh:
        ops = [e for e in json.load(fh)["traceEvents"] if e.get("cat") == "cpu_op"
               and e.get("ph") == "X" and str(e.get("name", "")).startswith("aten::")]
    by_thread: dict = {}
    for e in ops:
        by_thread.setdefault((e["pid"], e["tid"]), []).append(e)
    expected: Counter = Counter()
    for events in by_thread.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        end = -1.0
        for e in events:
            if e["ts"] >= end:  # not inside the previous outermost op
                expected[e["name"]] += 1
                end = e["ts"] + e["dur"]
    t = load(DATA / "h100_bert_small.json.gz")
    got: Counter = Counter()
    for rows in group_rows(t, build_op_tree(t)).values():
        got[t.name_of(int(rows[0]))] += len(rows)
    assert {k: v for k, v in got.items() if k.startswith("aten::")} == dict(expected)


def test_the_main_jobs_bf16_twin_is_predicted_within_a_fifth_of_its_run():
    """The accuracy held, without timing anything here: the main job's float32 trace from a
    real CPU run, its hot ops as they were timed in bf16 on that machine (the fixture says
    how), replayed; the timed step predicted as profkit run predicts it (the counterpart's
    timed median times the replay's ratio) against the bf16 twin's timed median of the
    same run. The issue's target on this CPU is 20 %; that run's own prediction erred by
    +6.9 %."""
    import json

    import msgspec

    from profiler_kit.analysis.whatif.replay import what_if

    doc = json.loads((DATA / "cpu_concurrent_bf16_measured.json").read_text())
    change = msgspec.convert(doc["measured"], MeasuredOps)
    w = what_if(load(DATA / "cpu_concurrent_sequential_measured.pt.trace.json.gz"),
                changes=[change]).replay
    base, twin = (doc["timed_median_ns"][n] for n in ("sequential", "sequential+amp"))
    predicted = base * w.predicted_step_ns / w.measured_step_ns
    assert predicted > base  # bf16 costs these small convolutions host time: slower
    assert abs(predicted - twin) / twin < 0.20, (predicted, twin)


def elementwise(name: str, ts: int, dur: int, dims=None) -> Ev:
    e = op(name, ts, dur, dims=dims if dims is not None else [[2, 8], [2, 8], []])
    e.input_types = ["float", "float", "Scalar"]
    return e


def test_chains_of_elementwise_ops_are_runs_on_one_shape():
    """add_ → relu_ on one shape is a chain; a conv breaks a run, as does a change of
    shape; a lone elementwise op is none."""
    from profiler_kit.analysis.whatif.hot_ops import chain_instances, elementwise_chains

    t = make_table([step(200 * US),
                    elementwise("aten::add_", 0, 10 * US),
                    elementwise("aten::relu_", 10 * US, 5 * US),
                    conv(20 * US, 30 * US),
                    elementwise("aten::add_", 60 * US, 10 * US),
                    elementwise("aten::relu_", 70 * US, 5 * US),
                    elementwise("aten::mul", 80 * US, 5 * US, dims=[[4, 8], [4, 8], []]),
                    conv(90 * US, 30 * US), elementwise("aten::relu_", 130 * US, 5 * US)])
    tree = build_op_tree(t)
    (instances,) = chain_instances(t, tree).values()
    assert [[t.name_of(r) for r in rows] for rows in instances] == [
        ["aten::add_", "aten::relu_"]] * 2
    (chain,) = elementwise_chains(t, tree, None)
    assert chain.count == 2 and chain.host_ns == 30 * US and not chain.reason
    assert [m.name for m in chain.members] == ["aten::add_", "aten::relu_"]


def test_a_compiled_chain_moves_the_cpu_step_by_its_measured_cost_shared_by_its_ops():
    from profiler_kit.analysis.whatif.hot_ops import elementwise_chains

    t = make_table([step(100 * US), elementwise("aten::add_", 0, 30 * US),
                    elementwise("aten::relu_", 30 * US, 10 * US), conv(50 * US, 50 * US)])
    tree = build_op_tree(t)
    (chain,) = elementwise_chains(t, tree, None)
    r = replay(t, changes=[MeasuredOps("compile", "cpu", {chain.key: (-20 * US, 1.0)},
                                       chains=True)])
    assert r.predicted_step_ns == 80 * US  # 15 µs off add_, 5 µs off relu_
    (n,) = r.notes
    assert n.code == "ops_measured" and n.figures["calls"] == 2 and n.figures["chains"]


def test_a_real_chain_is_compiled_and_timed_against_its_ops_one_by_one():
    """The real CPU trace's residual add_ → relu_ chain, compiled by torch.compile on this
    machine: both sides timed, the compile apart."""
    pytest.importorskip("torch")
    from profiler_kit.analysis.whatif.hot_ops import elementwise_chains
    from profiler_kit.measure.op_replay import measure_chains

    t = load(DATA / "cpu_concurrent_sequential_measured.pt.trace.json.gz")
    chain = elementwise_chains(t, build_op_tree(t), None)[0]
    assert [m.name for m in chain.members] == ["aten::add_", "aten::relu_"]
    (m,) = measure_chains([chain], "cpu").ops
    assert m.reason == "" and m.base_ns > 0 and m.alt_ns > 0 and m.compile_s > 0
    assert m.name == "aten::add_ → aten::relu_"


def test_a_fast_path_that_autocast_turns_off_is_not_timed_in_bf16():
    """nn.TransformerEncoderLayer's fused inference op runs only with autocast off: under
    autocast the model runs other ops, so the fused op timed in bf16 would predict a gain
    the model never sees (the tune example: predicted 1.7 ms, measured 2.9 ms against
    2.6 ms in float32). It keeps its recorded time, and says why."""
    pytest.importorskip("torch")
    from profiler_kit.analysis.whatif.hot_ops import OpGroup
    from profiler_kit.measure.op_replay import measure

    fused = OpGroup("k", "aten::_transformer_encoder_layer_fwd", [[8, 64, 128]], ["float"],
                    [[]], [""], 2, 1000, 0)
    (m,) = measure([fused], "bf16", "cpu").ops
    assert m.effect() is None and "fast path" in m.reason
