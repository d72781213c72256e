"""Every CUDA path, end to end on a real GPU (``pytest -m gpu``; skipped without CUDA).

Each test runs ``profkit`` as a user would, with small parameters, and then reads what it
wrote: run.json, the traces (through profkit's own analysis and through the TensorBoard
plugin). Tests that need two GPUs say so and skip on one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from profiler_kit import api, cli  # noqa: E402
from profiler_kit import tensorboard as tb  # noqa: E402

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(GPUS < 1, reason="needs CUDA: this machine has no GPU")]
two_gpus = pytest.mark.skipif(GPUS < 2, reason=f"needs two GPUs; this machine has {GPUS}")

SMALL_RUN = ["--iterations", "5", "--warmup", "2", "--profile-wait", "0",
             "--profile-warmup", "1", "--profile-active", "2", "--device", "cuda"]


def _run(tmp_path: Path, *argv: str) -> dict[str, Any]:
    """``profkit run ARGV`` into tmp_path; the run.json it wrote (exit status checked)."""
    status = cli.main(["run", *argv, *SMALL_RUN, "--out", str(tmp_path)])
    runs = sorted(tmp_path.glob("*/*/run.json"))
    assert runs, f"profkit run {' '.join(argv)} wrote no run.json (exit {status})"
    record = json.loads(runs[-1].read_text())
    failed = {s["name"]: s.get("error") for s in record["strategies"] if s["status"] == "failed"}
    assert status == 0 and not failed, failed
    record["_dir"] = str(runs[-1].parent)
    return record


def _ok(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in record["strategies"] if s["status"] == "ok"}


def _cuda_peak(strategy: dict[str, Any]) -> int:
    """The step's allocator peak on the GPU (run.json also keeps the host's rise under "cpu",
    from the profiler's memory events: a few bytes on a CUDA run)."""
    return strategy["peak_memory"]["cuda:0"]["allocated_bytes"]


def test_concurrent_runs_every_one_gpu_strategy_in_float16(tmp_path: Path) -> None:
    record = _run(tmp_path, "concurrent", "--amp", "--streams", "--batch-size", "16")
    ok = _ok(record)
    expected = {"sequential", "threads", "streams"}
    assert expected | {f"{n}+amp" for n in expected} <= set(ok), sorted(ok)
    for name, strategy in ok.items():
        assert strategy["equivalence"]["ok"], (name, strategy["equivalence"])
        peaks = strategy["peak_memory"]
        assert peaks and all(p["allocated_bytes"] > 0 for p in peaks.values()), (name, peaks)
        assert all(p["reserved_bytes"] >= p["allocated_bytes"] for p in peaks.values())
    if GPUS < 2:
        skipped = {s["name"]: s["reason"] for s in record["skipped"]}
        assert "devices" in skipped and "GPU" in skipped["devices"], skipped


def test_concurrent_trains_with_the_gradient_scaler(tmp_path: Path) -> None:
    record = _run(tmp_path, "concurrent", "--train", "--amp", "--streams", "--batch-size", "8",
                  "--strategies", "sequential,streams")
    assert {"sequential", "streams", "sequential+amp", "streams+amp"} <= set(_ok(record))


def test_analysis_of_the_cuda_traces_profkit_wrote(tmp_path: Path) -> None:
    record = _run(tmp_path, "concurrent", "--amp", "--batch-size", "16",
                  "--strategies", "sequential")
    analyses = {a.label: a for a in api.analyze(record["_dir"])}
    assert {"sequential", "sequential+amp"} <= set(analyses), sorted(analyses)
    for label, analysis in analyses.items():
        doc = _document(analysis)
        devices = doc["timeline"]["devices"]
        assert devices, f"{label}: no GPU in the trace"
        for device in devices:
            assert 0 < device["busy_ns"] <= device["window_ns"], device
        assert sum(k["count"] for k in doc["kernels"] if k["category"] == "kernel") > 0
        linked = doc["attribution"]
        total = linked["by_correlation"] + linked["by_external_id"] + linked["unlinked"]
        # kernels are linked to the ops that launched them through correlation ids
        assert linked["by_correlation"] >= 0.9 * total, linked
        cuda_memory = [d for d in doc["memory"]["devices"] if d["device"].startswith("cuda")]
        assert cuda_memory and cuda_memory[0]["peak_allocated_bytes"] > 0, doc["memory"]
    amp = _document(analyses["sequential+amp"])
    assert amp["precision"]["low_precision_share"] > 0.5, amp["precision"]


def _document(analysis: Any) -> dict[str, Any]:
    from profiler_kit.render.json.analysis import dumps

    return json.loads(dumps([analysis], None))["traces"][0]


def test_multimodel_peaks_match_a_hand_count(tmp_path: Path) -> None:
    """The step's own rise in allocated memory, from run.json, against a hand count. The peak
    is reset before the warm-up steps, so the rise holds what the first step brings to life
    on top of what the process already held (the weights, and what the equivalence check
    keeps: allocated_at_start_bytes)."""
    n, d_in, d_out, batch = 8, 1024, 2048, 32
    record = _run(tmp_path, "multimodel", "--n-model", str(n), "--d-in", str(d_in),
                  "--d-out", str(d_out), "--batch", str(batch), "--strategies", "bmm")
    memory = _ok(record)["bmm"]["peak_memory"]["cuda:0"]
    floats = 4
    weights = n * (d_in * d_out + d_out) * floats  # 67 MB here
    # Born in the first step: the weights' gradients and SGD's momentum buffers; each step's
    # inputs, targets and outputs. Above it: the loss's temporaries and cuBLAS's workspace,
    # which comes from the same allocator (at most 32 MiB per handle). Measured on an H200:
    # a rise of 141.7 MB against 139.6 MB counted.
    born = 2 * weights + n * batch * (d_in + 2 * d_out) * floats
    rise = memory["allocated_bytes"] - memory["allocated_at_start_bytes"]
    assert born <= rise <= 1.1 * born + 64 * 2**20, (memory, born)
    assert memory["allocated_at_start_bytes"] >= weights, memory  # the weights live throughout


def test_ddp_with_nccl_at_world_size_one(tmp_path: Path) -> None:
    record = _run(tmp_path, "ddp", "--world-size", "1", "--batch-size", "8")
    assert {"no-ddp", "ddp-w1"} <= set(_ok(record))
    assert record["environment"]["distributed"]["backend"] == "nccl"
    report = json.loads((Path(record["_dir"]) / "ddp_report.json").read_text())
    assert report["distributed_backend"] == "nccl"


def test_pipeline_on_one_gpu_is_skipped_with_the_reason(tmp_path: Path) -> None:
    if GPUS >= 2:
        pytest.skip("runs below on two GPUs")
    status = cli.main(["run", "pipeline", *SMALL_RUN, "--out", str(tmp_path)])
    record = json.loads(next(tmp_path.glob("*/*/run.json")).read_text())
    reasons = [s["reason"] for s in record["skipped"]]
    assert status in (0, 2) and reasons and all("GPU" in r for r in reasons), reasons


@two_gpus
def test_pipeline_with_nccl_on_two_gpus(tmp_path: Path) -> None:
    record = _run(tmp_path, "pipeline", "--world-size", "2")
    assert {"ddp", "gpipe", "1f1b"} <= set(_ok(record))
    for name in ("gpipe", "1f1b"):
        bubble = _ok(record)[name]["info"]["bubble"]
        assert 0 <= bubble < 1, (name, bubble)


@two_gpus
def test_concurrent_devices_strategy_on_two_gpus(tmp_path: Path) -> None:
    record = _run(tmp_path, "concurrent", "--strategies", "sequential,devices")
    assert "devices" in _ok(record)


def test_tensorboard_plugin_shows_the_gpu_kernel_view(tmp_path: Path) -> None:
    pytest.importorskip("torch_tb_profiler")
    record = _run(tmp_path, "concurrent", "--batch-size", "16", "--strategies", "sequential")
    port = tb.free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "profiler_kit", "tensorboard", record["_dir"], "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        run = "sequential"
        base = f"http://{tb.LOOPBACK}:{port}/data/plugin/{tb.PLUGIN_NAME}"
        views = _poll(f"{base}/views?run={run}", lambda v: "Kernel" in v)
        assert {"Overview", "Operator", "Kernel"} <= set(views), views
        workers = _poll(f"{base}/workers?run={run}&view=Kernel", bool)
        spans = _poll(f"{base}/spans?run={run}&worker={workers[0]}", bool)
        query = f"run={run}&worker={workers[0]}&span={spans[0]}"
        table = _poll(f"{base}/kernel/table?{query}&group_by=Kernel", lambda t: t["data"])
        assert len(table["data"]["rows"]) > 0
        overview = _poll(f"{base}/overview?{query}", bool)
        assert {"title": "Device Type", "value": "GPU"} in overview["environments"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def _poll(url: str, done, timeout_s: float = 120.0) -> Any:
    """GET ``url`` until the JSON answer satisfies ``done`` (the plugin loads in background)."""
    import urllib.request

    deadline = time.monotonic() + timeout_s
    answer: Any = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                answer = json.loads(response.read())
            if done(answer):
                return answer
        except (OSError, ValueError):
            pass
        time.sleep(1)
    raise AssertionError(f"{url}: {answer!r} after {timeout_s:.0f} s")


def test_allocator_snapshot_peak_matches_max_memory_allocated(tmp_path: Path) -> None:
    """The history recorded around a few training steps, read back by profkit's torch-free
    reader: its peak is the allocator's own peak of the same steps, its sites name this file."""
    from profiler_kit.analysis.memory.snapshot import history_peaks, live_sites
    from profiler_kit.measure import memory_snapshot
    from profiler_kit.sources.allocator_snapshot import load_snapshot

    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(),
                                torch.nn.Linear(2048, 512)).cuda()
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(256, 512, device="cuda")
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    with memory_snapshot.recording([torch.device("cuda", 0)], tmp_path, "w"):
        for _ in range(3):
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
        torch.cuda.synchronize()
        expected = torch.cuda.max_memory_allocated()
    snap = load_snapshot(memory_snapshot.path_for(tmp_path, "w"))
    (peak,) = history_peaks(snap)
    assert peak.peak_allocated_bytes == expected
    assert snap.has_frames
    assert any(s.frame is not None and s.frame.filename == __file__ for s in live_sites(snap))


def test_run_with_memory_snapshot_is_read_per_strategy(tmp_path: Path) -> None:
    record = _run(tmp_path, "multimodel", "--n-model", "4", "--d-in", "256", "--d-out", "512",
                  "--batch", "16", "--strategies", "linear,bmm", "--memory-snapshot")
    run_dir = Path(record["_dir"])
    assert sorted(p.name for p in run_dir.rglob("*.memory_snapshot.pickle"))
    report = api.memory([run_dir])
    by_label = {s.label: s for s in report.strategies}
    for name, strategy in _ok(record).items():
        label = f"{name} [{strategy['point']}]"  # multimodel's strategies run at a point
        snap = by_label[label].snapshot
        assert snap is not None and snap.has_stacks, by_label[label].notes
        (peak,) = snap.history_peaks
        timed = _cuda_peak(strategy)
        # the same steps as the timing pass, whose peak run.json keeps
        assert abs(peak.peak_allocated_bytes - timed) <= 0.05 * timed, (peak, timed)


def test_tune_sweep_checks_the_memory_fit_on_cuda(tmp_path: Path) -> None:
    """A CUDA sweep reports each size's peak: the line through the first two predicts the
    later peaks (an MLP's activations grow linearly with the batch)."""
    from profiler_kit.measure.passes import MeasureOptions
    from profiler_kit.scenarios import tune, tune_batch

    user = tune.load_user_model(str(Path(__file__).parents[1] / "data" / "tune" / "cancels.py"))
    points = tune_batch.sweep(user, tune.BASELINE, [1024, 2048, 4096, 8192], "cuda", None,
                              MeasureOptions(iterations=3, warmup=1, repeats=1), tmp_path)
    assert all(p.status == "ok" and p.peak_bytes for p in points), points
    check = tune_batch.check_fit(points, torch.cuda.get_device_properties(0).total_memory)
    assert check is not None and check.fitted_on == (1024, 2048)
    assert check.holds is True, check.why
