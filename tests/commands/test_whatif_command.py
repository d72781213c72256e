"""``profkit whatif``: the text, the JSON keys, a run folder, bad input as one error line."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from profiler_kit import cli
from profiler_kit.results import RunResult, StrategyResult
from profiler_kit.util import artifacts

DATA = Path(__file__).parents[1] / "data"
OWL = DATA / "h100_owlv2_dataloader.json.gz"
SMALL = DATA / "h100_bert_small.json.gz"
CPU = DATA / "cpu_torch_profiler.pt.trace.json.gz"


def test_text_names_each_change_and_all_together(capsys):
    assert cli.main(["whatif", str(OWL), "--kernels", "gemm=2", "--no-dataloader-wait"]) == 0
    out = capsys.readouterr().out
    assert "measured" in out and "replayed" in out and "predicted" in out
    assert "error 0.1% (median over steps)" in out
    assert "kernels gemm=2" in out and "no-dataloader-wait" in out and "all together" in out
    assert "step 1.21 s → " in out and "predicted (−" in out


def test_json_keys(tmp_path: Path, capsys):
    out = tmp_path / "w.json"
    assert cli.main(["whatif", str(SMALL), "--kernels", "gemm=2", "--precision", "bf16",
                     "--cuda-graphs", "--no-sync", "--overlap-comm", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "profkit.whatif/1"
    (t,) = doc["traces"]
    for key in ("measured_step_ms", "replayed_step_ms", "predicted_step_ms", "step_error",
                "window_error", "trusted", "missing_dependencies", "model", "steps"):
        assert key in t
    assert [c["change"] for c in t["changes"]] == ["kernels gemm=2", "precision bf16",
                                                   "cuda-graphs", "no-sync", "overlap-comm"]
    for c in t["changes"] + [t["together"]]:
        assert {"gain_ms", "gain_pct", "predicted_step_ms"} <= set(c)
        assert c["predicted_step_ms"] == pytest.approx(t["replayed_step_ms"] - c["gain_ms"],
                                                       abs=1e-5)
    assert t["replayed_step_ms"] == pytest.approx(t["measured_step_ms"], rel=0.03)
    # the text is printed too when the JSON goes to a file
    assert "predicted" in capsys.readouterr().out


def test_json_to_stdout(capsys):
    assert cli.main(["whatif", str(CPU), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (t,) = doc["traces"]
    assert t["step"] == "cpu" and t["changes"] == [] and t["together"] is None
    assert t["replayed_step_ms"] == t["measured_step_ms"]


def test_cuda_graphs_before_the_trace_takes_no_region(capsys):
    assert cli.main(["whatif", "--cuda-graphs", str(SMALL)]) == 0
    assert "    cuda-graphs: " in capsys.readouterr().out  # the note of the region-less change


def test_a_run_folder_replays_each_strategy(tmp_path: Path, capsys):
    run_dir = tmp_path / "concurrent" / "20260101-000000-abcd"
    strategies = []
    for name, trace in (("sequential", CPU), ("gpu", SMALL)):
        folder = run_dir / name
        folder.mkdir(parents=True)
        shutil.copy(trace, folder / "host.1795377761762408591.pt.trace.json.gz")
        strategies.append(StrategyResult(name=name, status="ok", dir=name))
    run = RunResult(run_dir=run_dir, scenario="concurrent", description="",
                    baseline="sequential", item_unit="images", device="cpu", params={},
                    sweep=(), points=({},), options={}, environment={},
                    strategies=tuple(strategies), started_at="2026-01-01T00:00:00+00:00")
    artifacts.write_json_atomic(run_dir / artifacts.RUN_JSON, run.to_json())
    out = tmp_path / "run.json"
    assert cli.main(["whatif", str(run_dir), "--no-sync", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert sorted(t["label"] for t in doc["traces"]) == ["gpu", "sequential"]
    text = capsys.readouterr().out
    assert "gpu: device-side step" in text and "sequential: step (CPU span)" in text


def test_a_corrupt_trace_is_one_error_line(tmp_path: Path, capsys):
    bad = tmp_path / "bad.json.gz"
    with gzip.open(bad, "wt") as fh:
        fh.write('{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur"')
    assert cli.main(["whatif", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(bad) in err[0]


@pytest.mark.parametrize("spec", ["gemm", "gemm=0", "gemm=fast", "(=2", "=2"])
def test_a_bad_kernels_spec_is_one_error_line(spec: str, capsys):
    assert cli.main(["whatif", str(SMALL), "--kernels", spec]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--kernels" in err[0]


def test_json_never_replaces_an_input(capsys):
    assert cli.main(["whatif", str(SMALL), "--json", str(SMALL)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_caution_where_fixed_delays_hold_much_of_the_steps(capsys):
    """A recommendation model's rank: a third of its steps' time is GPU work waiting for what
    the trace does not show (other ranks, other streams); a faster GEMM moves none of it."""
    assert cli.main(["whatif", str(DATA / "a100_recsys_8gpu_rank3.json.gz"), "--kernels",
                     "gemm=4"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # at any terminal width
    assert "caution: the fixed delays of the steps' GPU work" in out
    assert "(other ranks" not in out  # the kinds are named on their own lines
    assert "wait for other ranks, which one rank's trace does not show" in out


def test_no_straggler_on_two_gloo_ranks(tmp_path: Path):
    """Rank 1 sleeps 50 ms before each of three all-reduces; rank 0 waits for it in each.
    Without the straggler rank 0 no longer waits: its steps shrink by its wait per step as
    the job view measures it; rank 1, the straggler, keeps its own steps."""
    from profiler_kit import api
    from profiler_kit.analysis.jobs.job_view import view_job
    from profiler_kit.analysis.jobs.rank_summary import summarize_rank
    from profiler_kit.trace.loader import load

    folder = DATA / "gloo_straggler"
    results = {r.label: r.result for r in api.whatif([folder], no_straggler=True)}
    assert sorted(results) == ["rank0", "rank1"]
    job = view_job([summarize_rank(load(p)) for p in sorted(folder.glob("*.json.gz"))])
    wait = {r.rank: r.wait_ns for r in job.per_rank}
    (fast,) = results["rank0"].gains
    (slow,) = results["rank1"].gains
    assert fast.gain_ns == pytest.approx(wait[0] / 3, rel=0.05)
    assert fast.gain_pct > 0.9
    assert slow.gain_ns == 0 and wait[1] == 0
    assert fast.notes[0].code == "straggler_waits_removed"
    assert (fast.notes[0].figures["kernels"], fast.notes[0].figures["spans"]) == (0, 3)


def test_no_straggler_needs_several_ranks(capsys):
    assert cli.main(["whatif", str(SMALL), "--no-straggler"]) == 0
    assert "needs the traces of two or more ranks" in capsys.readouterr().out


def test_measure_times_the_ops_of_a_cpu_trace_and_says_how_much(capsys):
    pytest.importorskip("torch")
    assert cli.main(["whatif", str(CPU), "--precision", "bf16", "--measure"]) == 0
    out = " ".join(capsys.readouterr().out.split())  # at any terminal width
    assert "precision bf16 (measured)" in out
    assert "timed on cpu from the trace's shapes" in out and "of the op time" in out


@pytest.mark.parametrize("argv, says", [
    (["--measure"], "--measure times a change: add --precision, --channels-last, --tf32 "
                    "or --compile"),
    (["--channels-last"], "--channels-last is measured, not modeled: add --measure"),
    (["--tf32"], "--tf32 is measured, not modeled: add --measure"),
])
def test_measure_asks_for_what_it_needs(argv, says, capsys):
    assert cli.main(["whatif", str(CPU), *argv]) == 2
    assert says in capsys.readouterr().err


def test_tf32_on_a_cpu_trace_says_it_exists_only_on_nvidia_gpus(capsys):
    """Nothing is timed: each op says why, and no modeled prediction is offered instead."""
    pytest.importorskip("torch")
    assert cli.main(["whatif", str(CPU), "--tf32", "--measure"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "TF32 exists only on NVIDIA GPUs" in err and "leave out --measure" not in err


def test_measure_without_torch_says_so_in_one_line(monkeypatch, capsys):
    from profiler_kit.sources import measured_ops as measured

    monkeypatch.setattr(measured, "torch_available", lambda: False)
    assert cli.main(["whatif", str(CPU), "--precision", "bf16", "--measure"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "measuring the ops needs torch (the run extra" in err[0]


def test_repro_writes_one_standalone_script_per_hot_op_that_runs(tmp_path, capsys):
    pytest.importorskip("torch")
    import subprocess
    import sys

    out = tmp_path / "repro"
    assert cli.main(["whatif", str(CPU), "--precision", "bf16", "--repro", str(out)]) == 0
    scripts = sorted(out.glob("op*.py"))
    names = {p.name.split("_", 1)[1] for p in scripts}  # forward and backward ops
    assert {"conv2d.py", "convolution_backward.py", "linear.py"} <= names
    conv = next(p for p in scripts if p.name.endswith("_conv2d.py"))
    assert "profiler_kit" not in conv.read_text()  # torch alone runs it
    done = subprocess.run([sys.executable, str(conv)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "aten::conv2d as recorded:" in done.stdout and "aten::conv2d bf16:" in done.stdout
    # a second time: the folder is not empty, nothing is overwritten
    before = scripts[0].read_text()
    assert cli.main(["whatif", str(CPU), "--precision", "bf16", "--repro", str(out)]) == 2
    assert "exists and is not an empty folder" in capsys.readouterr().err
    assert scripts[0].read_text() == before


def test_repro_of_a_trace_without_shapes_says_so_and_writes_nothing(tmp_path, capsys):
    pytest.importorskip("torch")
    out = tmp_path / "repro"
    assert cli.main(["whatif", str(DATA / "a100_alexnet.json.gz"), "--precision", "bf16",
                     "--repro", str(out)]) == 2
    assert "no op of the trace can be rebuilt" in capsys.readouterr().err
    assert not out.exists()


def test_two_measured_changes_together_say_they_were_timed_apart(capsys):
    pytest.importorskip("torch")
    assert cli.main(["whatif", str(CPU), "--precision", "bf16", "--channels-last",
                     "--measure"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "precision bf16 (measured)" in out and "channels-last (measured)" in out
    assert "they were not timed together" in out
