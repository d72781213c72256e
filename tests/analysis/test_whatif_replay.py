"""The replay's fidelity on every real trace: the unchanged trace replayed with modeled
waits (launch latency, gaps, wake-ups) lands within 3 % of the measured median step and
whole window, or the result names the dependency the graph lacks."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.core.steps import analyze_steps
from profiler_kit.analysis.whatif import engine
from profiler_kit.analysis.whatif.graph import build
from profiler_kit.analysis.whatif.replay import TRUSTED_ERROR, measured_step_ns, replay
from profiler_kit.render.wording.whatif_notes import lacks
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"


def _traces(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.json.gz") if "expected" not in p.name)


TRACES = _traces(DATA)


def _prepared(path: Path):
    table = load(path)
    return table, attribute_gpu(table, build_op_tree(table))


def test_every_real_trace_is_replayed():
    assert len(TRACES) >= 20


@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(DATA)))
def test_replay_fidelity_on_real_traces(path: Path):
    """The figures of the fidelity table in docs/analyses/whatif.md: every real trace
    within 3 % (a replay that missed would say which dependency it lacks, in
    ``untrusted_because``; none does today)."""
    table, gpu = _prepared(path)
    r = replay(table, gpu)
    assert r.trusted, r.untrusted_because
    assert r.step_error <= TRUSTED_ERROR and r.window_error <= TRUSTED_ERROR
    assert r.untrusted_because is None
    # the figures are the replay's, not the recording's: the modeled waits are medians
    for s in r.steps:
        assert s.predicted_ns == s.replayed_ns  # no change asked
    # every fixed delay is a named missing dependency
    named = sum(m.wait_ns for m in r.missing)
    assert named == r.fixed_delay_ns
    assert all(m.events > 0 and m.wait_ns > 0 for m in r.missing)


@pytest.mark.parametrize("name", ["h100_owlv2_dataloader.json.gz", "a100_ddp_nccl_rank0.json.gz",
                                  "a100_recsys_8gpu_rank3.json.gz", "cpu_torch_profiler.pt."
                                  "trace.json.gz", "a100_alexnet.json.gz"])
def test_measured_steps_are_the_steps_profkit_reports(name: str):
    table, gpu = _prepared(DATA / name)
    steps = analyze_steps(table, gpu)
    g = build(table, gpu)
    measured, _ = engine.step_times(g, engine.recorded(g, table.ts_ns, table.dur_ns))
    if steps.steps:
        want = [s.device_dur_ns if steps.headline == "device" else s.dur_ns
                for s in steps.steps]
        assert measured.tolist() == want
        assert int(np.median(measured)) == steps.headline_median_ns
    else:
        assert g.headline == "window"
    assert measured_step_ns(table) == int(np.median(measured)) == replay(table).measured_step_ns


def test_waits_are_modeled_not_copied():
    """On a GPU-bound trace with many stream-bound kernels, the replayed kernels start where
    the model says, not where they were recorded: most starts move."""
    table, gpu = _prepared(DATA / "a100_ddp_nccl_rank0.json.gz")
    g = build(table, gpu)
    times = engine.simulate(g, engine.Edits(g), table.ts_ns, table.dur_ns)
    moved = np.mean(times.act_start != g.start)
    assert moved > 0.5
    assert 1_000 <= g.model.gap_ns <= 3_000  # about a microsecond or two between kernels
    assert 5_000 <= g.model.launch_latency_ns <= 20_000


def test_missing_dependencies_are_named_on_a_ddp_rank():
    table, gpu = _prepared(DATA / "a100_ddp_nccl_rank0.json.gz")
    r = replay(table, gpu)
    kinds = {m.kind: m for m in r.missing}
    assert "other_ranks" in kinds
    m = kinds["other_ranks"]
    assert "wait for other ranks, which one rank's trace does not show" in lacks(
        m.kind, m.events, m.wait_ns)


def test_replay_of_the_largest_trace_is_fast():
    """The replay alone (graph built) of the largest trace in tests/data: well under a
    second even on a loaded machine (the docs give the figure on a quiet one)."""
    path = max(TRACES, key=lambda p: p.stat().st_size)
    table, gpu = _prepared(path)
    g = build(table, gpu)
    best = min(_timed(lambda: engine.simulate(g, engine.Edits(g), table.ts_ns, table.dur_ns))
               for _ in range(3))
    assert best < 2.0


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def test_a_change_that_finds_nothing_is_not_replayed_again(monkeypatch):
    """The CPU trace has no blocking call: ``--no-sync`` leaves the graph as recorded, so
    its prediction is the unchanged replay without a second one; GEMMs 2x faster on the
    GPU-bound OWLv2 trace do change it and are replayed."""
    from profiler_kit.analysis.whatif.changes import Kernels, NoSync
    from profiler_kit.analysis.whatif.replay import each_alone

    runs = []
    simulate = engine.simulate
    monkeypatch.setattr(engine, "simulate", lambda *a: runs.append(1) or simulate(*a))
    table, gpu = _prepared(DATA / "cpu_torch_profiler.pt.trace.json.gz")
    base, (gain,) = each_alone(table, gpu, [NoSync()])
    assert len(runs) == 1  # the unchanged replay only
    assert gain.predicted_step_ns == base.replayed_step_ns and gain.gain_ns == 0
    assert [n.code for n in gain.notes] == ["no_blocking_wait_in_steps"]
    table, gpu = _prepared(DATA / "h100_owlv2_dataloader.json.gz")
    base, (gain,) = each_alone(table, gpu, [Kernels("gemm", 2.0)])
    assert len(runs) == 3 and gain.predicted_step_ns < base.replayed_step_ns


@given(st.lists(st.tuples(st.integers(-1, 2), st.integers(0, 50), st.integers(0, 50)),
                max_size=30))
def test_removed_spans_merge_per_thread_as_a_sorted_sweep_does(removals) -> None:
    """Per thread, overlapping removals join and touching ones stay apart; empty ones and
    those of no thread (-1) go."""
    e = engine.Edits.__new__(engine.Edits)
    e.removed_spans = []
    for th, a, b in removals:
        e.remove(th, [a], [b])
    want: dict[int, list[tuple[int, int]]] = {}
    for th, a, b in sorted(removals):
        if b <= a or th < 0:
            continue
        spans = want.setdefault(th, [])
        if spans and a < spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], b))
        else:
            spans.append((a, b))
    th, a, b = engine._merged_removals(e)
    got: dict[int, list[tuple[int, int]]] = {}
    for t, x, y in zip(th.tolist(), a.tolist(), b.tolist(), strict=True):
        got.setdefault(t, []).append((x, y))
    assert got == want


def _every_change():
    from profiler_kit.analysis.whatif import changes as c

    return [None, c.CudaGraphs(), c.Precision("bf16"), c.Fusion(), c.NoSync(),
            c.OverlapComm(), c.NoDataloaderWait(), c.Kernels("gemm", 2.0)]


@pytest.mark.parametrize("name", [
    "a100_ddp_nccl_rank0.json.gz",  # blocking calls, two streams, NCCL
    "a100_alexnet.json.gz",  # activities waiting on recorded events of another stream
    "v100_resnet50_train.json.gz",  # a launch queue that keeps filling
    "mi300_resnet_act_checkpoint.json.gz",  # activities no launch call is linked to
    "h100_owlv2_dataloader.json.gz",  # bursts of work woken from other threads
    "cpu_concurrent_threads.pt.trace.json.gz",  # host threads only
])
def test_runs_replayed_at_once_land_where_one_by_one_does(name: str, monkeypatch) -> None:
    """The activities between the replay's visits go at once, a running maximum per
    stream, and a thread's removed spans between two reads of its clock a running sum:
    the same integer times as replaying each activity and span in turn (runs and chains of
    any length go one by one when the short-run threshold is above them all), unchanged
    and with every change."""
    from profiler_kit.analysis.whatif.changes import Context

    table, gpu = _prepared(DATA / name)
    g = build(table, gpu)
    ctx = Context(table, gpu, g, build_op_tree(table))
    for change in _every_change():
        e = engine.Edits(g)
        if change is not None:
            change.apply(ctx, e)
        monkeypatch.setattr(engine, "_SHORT_RUN", 0)
        at_once = engine.simulate(g, e, table.ts_ns, table.dur_ns)
        monkeypatch.setattr(engine, "_SHORT_RUN", 1 << 40)
        one_by_one = engine.simulate(g, e, table.ts_ns, table.dur_ns)
        for field in ("act_start", "act_end", "cpu_start", "cpu_end"):
            assert np.array_equal(getattr(at_once, field), getattr(one_by_one, field)), (
                change, field)
