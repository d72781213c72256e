"""Op and kernel diff: per-name counts and totals against counts made straight from the JSON."""

from __future__ import annotations

from pathlib import Path

import pytest
from analysis_tables import kernel, launch, make_table, op
from trace_counts import count_names

from profiler_kit import api
from profiler_kit.analysis.diffs.op_diff import op_diff
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.trace.normalize import SHAPES_NOT_KEPT
from profiler_kit.trace.table import Cat

DATA = Path(__file__).parents[1] / "data"
BERT = (DATA / "h100_bert_small.json.gz", DATA / "mi300_bert_small.json.gz")
CPU_RUN = (DATA / "cpu_concurrent_sequential.pt.trace.json.gz",
           DATA / "cpu_concurrent_sequential_amp.pt.trace.json.gz")


def _check_profile(analysis, counts) -> None:
    p = analysis.names
    assert p.steps == counts.steps
    assert {s.name: s.count for s in p.ops} == dict(counts.op_count)
    assert {s.name: s.total_ns for s in p.ops} == dict(counts.op_total)
    assert {(s.name, s.category): s.count for s in p.kernels} == dict(counts.kernel_count)
    assert {(s.name, s.category): s.total_ns for s in p.kernels} == dict(counts.kernel_total)
    launched = {(x.op, x.kernel): x.count for x in p.launches}
    expected = {k: v for k, v in counts.launches.items() if k[0]}
    assert launched == expected


def _check_diff(diff, counts, baseline: int = 0) -> None:
    """Every row's per-step figures and status from the independent counts."""
    for rows, count, total in ((diff.ops, "op_count", "op_total"),
                               (diff.kernels, "kernel_count", "kernel_total")):
        keys = set().union(*(getattr(c, count) for c in counts))
        assert len(rows) == len(keys)
        for r in rows:
            key = r.name if rows is diff.ops else (r.name, r.category)
            n = [getattr(c, count)[key] for c in counts]
            t = [getattr(c, total)[key] for c in counts]
            assert list(r.counts) == n and list(r.totals_ns) == t
            per = [x / c.steps for x, c in zip(t, counts, strict=True)]
            for i, d in enumerate(r.delta_ns_per_step):
                if i == baseline:
                    assert d is None and r.status[i] == "baseline"
                    continue
                assert d == pytest.approx(per[i] - per[baseline], abs=1e-6)
                if n[baseline] == 0 and n[i]:
                    assert r.status[i] == "added"
                elif n[i] == 0 and n[baseline]:
                    assert r.status[i] == "removed"
        changes = [r.change_ns for r in rows]
        assert changes == sorted(changes, reverse=True)


def test_h100_against_mi300_bert_matches_counts_from_the_json():
    analyses = api.analyze(list(BERT), jobs=1)
    counts = [count_names(p) for p in BERT]
    for a, c in zip(analyses, counts, strict=True):
        _check_profile(a, c)
    diff = api.compare(analyses).ops
    _check_diff(diff, counts)
    # The MI300 runs its own attention kernel where the H100 ran flash attention.
    rows = {r.name: r for r in diff.kernels}
    assert rows["attn_fwd"].status[1] == "added"
    flash = next(r for r in diff.kernels if "flash_fwd_kernel" in r.name)
    assert flash.status[1] == "removed" and flash.counts == (4, 0)
    # ops are grouped with the kernels they launched
    attention = next(r for r in diff.ops if r.name == "aten::_flash_attention_forward")
    assert {k.name for k in attention.launched} >= {"attn_fwd", flash.name}


@pytest.mark.skipif(not CPU_RUN[0].exists(), reason="CPU run traces not present")
def test_cpu_runs_of_sequential_and_amp_match_counts_from_the_json():
    analyses = api.analyze(list(CPU_RUN), jobs=1)
    counts = [count_names(p) for p in CPU_RUN]
    for a, c in zip(analyses, counts, strict=True):
        _check_profile(a, c)
    diff = api.compare(analyses).ops
    _check_diff(diff, counts)
    # autocast to bfloat16 adds casts of the weights and inputs
    to_copy = next(r for r in diff.ops if r.name == "aten::_to_copy")
    assert to_copy.count_per_step[1] > to_copy.count_per_step[0]


def _shape_counts(path: Path):
    """The independent counts; the ops that only make views or allocate (whose shapes
    the loader does not keep, by design) count under empty shapes."""
    return count_names(path, SHAPES_NOT_KEPT)


def _check_shapes(diff, counts, baseline: int = 0) -> None:
    """Rows by (op, input shapes, dtypes) against the counts from the JSON."""
    keys = set().union(*(c.shape_count for c in counts))
    assert len(diff.op_shapes) == len(keys)
    for r in diff.op_shapes:
        key = (r.name, r.input_dims, r.input_types)
        assert list(r.counts) == [c.shape_count[key] for c in counts]
        assert list(r.totals_ns) == [c.shape_total[key] for c in counts]
        per = [c.shape_total[key] / c.steps for c in counts]
        for i, d in enumerate(r.delta_ns_per_step):
            assert d is None if i == baseline else d == pytest.approx(per[i] - per[baseline])
    changes = [r.change_ns for r in diff.op_shapes]
    assert changes == sorted(changes, reverse=True)
    # the shapes of an op split its row: they add up to it
    for row in diff.ops:
        parts = [r for r in diff.op_shapes if r.name == row.name]
        assert tuple(map(sum, zip(*(r.counts for r in parts), strict=True))) == row.counts
        assert tuple(map(sum, zip(*(r.totals_ns for r in parts), strict=True))) == row.totals_ns


def test_ops_by_input_shape_match_counts_from_the_json():
    analyses = api.analyze(list(BERT), jobs=1)
    counts = [_shape_counts(p) for p in BERT]
    diff = api.compare(analyses).ops
    assert diff.shapes_recorded == (True, True)
    _check_shapes(diff, counts)
    # the same model on both GPUs: the same (op, shapes) pairs, only their times move
    assert {r.status[1] for r in diff.op_shapes} == {"same", "changed"}
    addmm = {r.input_dims for r in diff.op_shapes if r.name == "aten::addmm"}
    assert "[[512],[141,512],[512,512],[],[]]" in addmm


@pytest.mark.skipif(not CPU_RUN[0].exists(), reason="CPU run traces not present")
def test_autocast_shows_as_new_bf16_shapes_of_the_same_ops():
    analyses = api.analyze(list(CPU_RUN), jobs=1)
    counts = [_shape_counts(p) for p in CPU_RUN]
    diff = api.compare(analyses).ops
    _check_shapes(diff, counts)
    conv = [r for r in diff.op_shapes if r.name == "aten::mkldnn_convolution"]
    # same op count per step, but every fp32 convolution is gone and a bf16 one is new
    assert all(r.status[1] in ("added", "removed") for r in conv)
    assert {"bf16" in r.input_types or "BFloat16" in r.input_types
            for r in conv if r.status[1] == "added"} == {True}
    assert all("BFloat16" not in r.input_types for r in conv if r.status[1] == "removed")


def test_ops_by_shape_are_left_out_unless_every_trace_recorded_them():
    events = [op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
              op("aten::mm", 10, 100)]
    plain = analyze_table(make_table(events), label="plain")
    shaped = api.analyze([BERT[0]], jobs=1)[0]
    diff = op_diff(["plain", "shaped"], [plain.names, shaped.names], 0)
    assert diff.shapes_recorded == (False, True) and diff.op_shapes == ()
    assert diff.ops  # the rows by name stay


def _steps(n: int, kernel_ns: int, extra: bool = False):
    """``n`` steps of 1000 ns, each an aten::mm launching one gemm kernel."""
    events = []
    for i in range(n):
        t0 = i * 1000
        events += [op(f"ProfilerStep#{i}", t0, 1000, cat=Cat.USER_ANNOTATION),
                   op("aten::mm", t0 + 10, 100), launch(t0 + 20, corr=i + 1),
                   kernel("sgemm", t0 + 200, kernel_ns, corr=i + 1)]
        if extra:
            events += [op("aten::to", t0 + 300, 50), launch(t0 + 310, corr=100 + i),
                       kernel("cast_kernel", t0 + 400, 20, corr=100 + i)]
    return analyze_table(make_table(events))


def test_per_step_figures_let_different_step_counts_compare():
    a, b = _steps(2, 300), _steps(4, 300, extra=True)
    d = op_diff(["a", "b"], [a.names, b.names], 0)
    sgemm = next(r for r in d.kernels if r.name == "sgemm")
    assert sgemm.counts == (2, 4) and sgemm.count_per_step == (1.0, 1.0)
    assert sgemm.delta_ns_per_step == (None, 0.0) and sgemm.status == ("baseline", "same")
    cast = next(r for r in d.kernels if r.name == "cast_kernel")
    assert cast.status == ("baseline", "added") and cast.ns_per_step == (0.0, 20.0)
    to = next(r for r in d.ops if r.name == "aten::to")
    assert [k.name for k in to.launched] == ["cast_kernel"]
    # against b as the baseline the same names are removed
    back = op_diff(["a", "b"], [a.names, b.names], 1)
    assert next(r for r in back.kernels if r.name == "cast_kernel").status[0] == "removed"


def test_a_kernel_launched_outside_every_step_is_left_out():
    events = [op("ProfilerStep#1", 0, 1000, cat=Cat.USER_ANNOTATION),
              op("aten::mm", 10, 100), launch(20, corr=1), kernel("inside", 900, 500, corr=1),
              op("aten::mm", 1500, 100), launch(1510, corr=2),
              kernel("outside", 1600, 10, corr=2)]
    p = analyze_table(make_table(events)).names
    assert [k.name for k in p.kernels] == ["inside"]  # ends after the step: still its own
    assert [(o.name, o.count) for o in p.ops] == [("aten::mm", 1)]


def test_whole_trace_counts_equal_hta_trace_diff():
    """HTA 0.5.0's ``TraceDiff.compare_traces`` of the BERT pair (benchmarks/hta_trace_diff.py)
    counts every event name over the whole trace. Over the whole trace too, profkit's
    count of every CPU op and of every H100 GPU activity equals HTA's, and names only
    one trace has are HTA's "+" and "-". HTA 0.5.0 sees none of the MI300's GPU
    activities (its diff has no ``attn_fwd``), so those are checked against the JSON
    above only."""
    import json

    import msgspec

    from profiler_kit.analysis.core.launch_links import attribute_gpu
    from profiler_kit.analysis.core.op_tree import build_op_tree
    from profiler_kit.analysis.core.steps import analyze_steps
    from profiler_kit.analysis.diffs.op_diff import name_profile
    from profiler_kit.trace.loader import load

    hta = json.loads((DATA / "hta" / "bert_small_trace_diff.json").read_text())["names"]
    profiles = []
    for path in BERT:
        t = load(path)
        tree = build_op_tree(t)
        steps = analyze_steps(t)
        whole = msgspec.structs.replace(steps, source="window", steps=(), start_ns=int(
            t.ts_ns.min()), end_ns=int((t.ts_ns + t.dur_ns).max()))
        profiles.append(name_profile(t, tree, attribute_gpu(t, tree), whole))
    for i, p in enumerate(profiles):
        for s in list(p.ops) + (list(p.kernels) if i == 0 else []):
            assert hta[s.name][i] == s.count, s.name
    assert len(profiles[0].kernels) == 12 and "attn_fwd" not in hta
    diff = op_diff(["h100", "mi300"], profiles, 0)
    moved = 0
    for r in diff.ops:  # the same ops on both: HTA's "=" exactly where the counts agree
        assert (hta[r.name][2] == "=") == (r.counts[0] == r.counts[1]), r.name
        moved += r.counts[0] != r.counts[1]
    assert moved == 4  # as_strided, empty, permute and view run more often on the MI300


@pytest.mark.skipif(not CPU_RUN[0].exists(), reason="CPU run traces not present")
def test_by_shape_in_the_console_and_the_json(tmp_path, capsys, monkeypatch):
    import json

    from profiler_kit import cli

    monkeypatch.setenv("COLUMNS", "160")
    out = tmp_path / "c.json"
    assert cli.main(["compare", *map(str, CPU_RUN), "--by-shape", "--top", "3", "-j", "1",
                     "--json", str(out)]) == 0
    doc = json.loads(out.read_text())["comparison"]["ops"]
    counts = [_shape_counts(p) for p in CPU_RUN]
    assert doc["shapes_recorded"] == [True, True]
    assert len(doc["op_shapes"]) == len(set().union(*(c.shape_count for c in counts)))
    top = doc["op_shapes"][0]
    key = (top["name"], top["input_dims"], top["input_types"])
    assert top["counts"] == [c.shape_count[key] for c in counts]
    assert cli.main(["compare", *map(str, CPU_RUN), "--by-shape", "--top", "3",
                     "-j", "1"]) == 0
    text = capsys.readouterr().out
    assert "CPU ops by input shape that changed most" in text
    assert top["name"] in text and "bf16" in text
    # without record_shapes the console says so instead of listing nothing
    plain = DATA / "a100_simple_add.json.gz"
    assert cli.main(["compare", str(plain), str(CPU_RUN[0]), "--by-shape", "-j", "1"]) == 0
    assert "no input shapes recorded in a100_simple_add" in capsys.readouterr().out
