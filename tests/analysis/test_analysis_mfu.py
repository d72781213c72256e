"""MFU as the field defines it, the FLOP/s while kernels run, and traces whose GPU work went
unrecorded: figures held to what the raw JSON says, computed here by hand."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from real_traces import DATA, analysis, ns
from rich.console import Console

from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.console import analysis as analysis_console
from profiler_kit.render.markdown import analysis as analysis_markdown
from profiler_kit.render.sections.recommendations import notes
from profiler_kit.render.wording.notes import said
from profiler_kit.render.wording.trace_words import missing_gpu_line
from profiler_kit.trace.loader import load

V100_FP32 = 15.7e12
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "Runtime"}
# the ops of the ResNet-50 step that have no model (their kernels are listed as such)
UNMODELLED = {"aten::max_pool2d_with_indices", "aten::max_pool2d_with_indices_backward",
              "aten::nll_loss_forward", "aten::nll_loss_backward"}


def raw(name: str) -> dict:
    with gzip.open(DATA / name, "rt") as f:
        return json.load(f)


def _v100_by_hand() -> dict[str, int]:
    """From the raw JSON of the TensorBoard plugin's ResNet-50 step: the step's device-side
    time (ProfilerStep#6 from its CPU start to the end of the last GPU activity launched
    inside its CPU span, or its CPU end if later), every GPU activity's time, and the time
    of the activities whose innermost launching op has a model (all but max pooling and
    NLL loss), in ns."""
    events = [e for e in raw("v100_resnet50_tb_sample_step.json.gz")["traceEvents"]
              if e.get("ph") == "X"]
    (step,) = [e for e in events if e["name"].startswith("ProfilerStep#")]
    runtime = {e["args"]["correlation"]: e for e in events
               if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {})}
    ops = [e for e in events if e.get("cat") == "Operator"]
    acts = [e for e in events if e.get("cat") in GPU_CATS]
    step_start, step_end = ns(step["ts"]), ns(step["ts"]) + ns(step["dur"])
    last_end, modelled = step_end, 0
    for a in acts:
        call = runtime[a["args"]["correlation"]]
        assert step_start <= ns(call["ts"]) and ns(call["ts"]) + ns(call["dur"]) <= step_end
        last_end = max(last_end, ns(a["ts"]) + ns(a["dur"]))
        around = [o for o in ops if o["tid"] == call["tid"]
                  and o["ts"] <= call["ts"] < o["ts"] + o["dur"]]
        innermost = max(around, key=lambda o: (o["ts"], -o["dur"]))
        if innermost["name"] not in UNMODELLED:
            modelled += ns(a["dur"])
    return {"wall_ns": last_end - step_start, "gpu_ns": sum(ns(a["dur"]) for a in acts),
            "modelled_ns": modelled}


def test_mfu_and_flops_while_kernels_run_on_the_v100_resnet50_step() -> None:
    """The GPU is busy 54 % of the step (a single-process DataLoader takes a third of it):
    MFU divides the model's FLOPs by the step's wall time, 187 ms, and reads 26.7 %; the
    FLOP/s while the kernels run divides every modelled FLOP by the modelled ops' kernel
    time, 99.7 ms, and reads 50.5 % (what profkit printed as MFU before)."""
    a = analysis("v100_resnet50_tb_sample_step.json.gz")
    perf = a.perf
    hand = _v100_by_hand()
    assert hand["wall_ns"] == 186_955_000 and hand["modelled_ns"] == 99_725_000
    assert {u.op for u in perf.unmodelled} == UNMODELLED
    assert perf.time_source == "device" and perf.mfu_dtype == "fp32"
    assert perf.mfu_peak_flops_per_s == V100_FP32
    # the wall time is the step's device-side time, the FLOPs the matrix ones in the step
    assert perf.mfu_window == "steps" and perf.mfu_devices == 1
    assert perf.mfu_time_ns == hand["wall_ns"] == a.step_device_ns
    matrix = sum(g.flops * g.count for g in perf.groups
                 if g.family in ("gemm", "convolution", "attention"))
    assert perf.mfu_flops == matrix == 785_123_377_152
    assert perf.model_flops_utilization == pytest.approx(
        matrix / (hand["wall_ns"] * 1e-9) / V100_FP32, rel=1e-12)
    assert perf.model_flops_utilization == pytest.approx(0.2675, abs=5e-5)
    # FLOP/s while kernels run: every modelled FLOP over the modelled ops' kernel time
    assert perf.time_ns == hand["modelled_ns"]
    assert perf.flops_per_s_peak_share == pytest.approx(
        perf.flops / (hand["modelled_ns"] * 1e-9) / V100_FP32, rel=1e-12)
    assert perf.flops_per_s_peak_share == pytest.approx(0.5053, abs=5e-5)


def test_mfu_flops_are_the_flop_counters() -> None:
    """MFU's FLOPs equal FlopCounterMode's count of torchvision's ResNet-50 forward and
    backward at batch 32, but for one term: without an ``output_mask`` recorded, the first
    convolution's input gradient (which autograd skips) is counted too."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    from torch.utils.flop_counter import FlopCounterMode
    from torchvision.models import resnet50

    model = resnet50(weights=None).to("meta")
    x = torch.randn(32, 3, 224, 224, device="meta")
    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    first_input_grad = 2 * 32 * 64 * 3 * 7 * 7 * 112 * 112
    perf = analysis("v100_resnet50_tb_sample_step.json.gz").perf
    assert perf.mfu_flops == counter.get_total_flops() + first_input_grad


def _gemm_trace(path: Path) -> Path:
    """Two ``aten::mm`` on an H100, one inside ``ProfilerStep#1`` (kernel 100-400 µs, the
    step's CPU span 0-1000 µs), one after it (kernel 2100-2300 µs)."""
    def mm(ts: int, corr: int, kts: int, kdur: int) -> list[dict]:
        return [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": ts,
                 "dur": 50, "args": {"Input Dims": [[4096, 4096], [4096, 4096]],
                                     "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                 "tid": 1, "ts": ts + 10, "dur": 5, "args": {"correlation": corr}},
                {"ph": "X", "cat": "kernel", "name": "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NNN",
                 "pid": 0, "tid": 7, "ts": kts, "dur": kdur,
                 "args": {"correlation": corr, "device": 0, "stream": 7}}]

    events = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1,
               "tid": 1, "ts": 0, "dur": 1000, "args": {}},
              *mm(20, 1, 100, 300), *mm(2000, 2, 2100, 200)]
    path.write_text(json.dumps({"deviceProperties": [
        {"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 80 * 2**30,
         "computeMajor": 9, "computeMinor": 0}], "traceEvents": events}))
    return path


def test_mfu_counts_the_steps_flops_over_their_device_side_time(tmp_path) -> None:
    """Only the GEMM launched in the step counts, over the step's device-side time (its CPU
    span, 1 ms: the kernel ends before it); the FLOP/s while kernels run takes both GEMMs
    over their 500 µs of kernels."""
    perf = analyze_table(load(_gemm_trace(tmp_path / "gemm.pt.trace.json"))).perf
    flops = 2 * 4096 ** 3
    peak = perf.mfu_peak_flops_per_s
    assert perf.mfu_dtype == "bf16" and peak is not None
    assert perf.mfu_window == "steps" and perf.mfu_time_ns == 1_000_000
    assert perf.mfu_flops == flops and perf.flops == 2 * flops
    assert perf.model_flops_utilization == pytest.approx(flops / 1e-3 / peak)
    assert perf.flops_per_s_peak_share == pytest.approx(2 * flops / 500e-6 / peak)


def _cut(tmp_path: Path, name: str, drop: set[str], out: str) -> Path:
    """``name`` without the events of the categories in ``drop`` (and their flows)."""
    doc = raw(name)
    doc["traceEvents"] = [e for e in doc["traceEvents"]
                          if e.get("cat") not in drop and e.get("cat") != "ac2g"]
    path = tmp_path / out
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return path


VIT = "h100_vit_image_classification.json.gz"


@pytest.fixture(scope="module")
def dropped(tmp_path_factory) -> Path:
    """The H100 ViT trace as CUPTI leaves it when it drops its activity buffer: the launch
    calls are there, the kernels, memcpy and memset are not."""
    return _cut(tmp_path_factory.mktemp("dropped"), VIT, GPU_CATS, "vit_dropped.json.gz")


def test_a_trace_without_its_gpu_activity_is_named_and_nothing_uses_host_time(dropped):
    whole = analysis(VIT)
    a = analyze_table(load(dropped))
    doc = raw(VIT)
    launches = [e for e in doc["traceEvents"] if e.get("cat") in RUNTIME_CATS
                and any(w in e["name"] for w in ("Launch", "Memcpy", "Memset"))]
    m = a.gpu_activity_missing
    assert not a.has_gpu and m is not None
    assert m.launch_calls == len(launches) == 205
    assert m.launch_names[:3] == ("cudaLaunchKernel", "cudaMemsetAsync", "cuLaunchKernel")
    assert m.devices == ("NVIDIA H100 80GB HBM3",)
    line = missing_gpu_line(m)  # the analysis gives figures; the words are the renderers'
    assert notes(a)[0] == line and line not in said(a.notes)
    assert line.startswith("GPU activity missing: 205 launch calls (cudaLaunchKernel, "
                             "cudaMemsetAsync, cuLaunchKernel, …) but no kernel, memcpy or "
                             "memset (likely cause: CUPTI dropped its activity buffer, or "
                             "CUDA activity was not enabled: "
                             "activities=[ProfilerActivity.CUDA] missing)")
    assert "cpu_only_trace" not in [n.code for n in a.notes]
    # the FLOPs and bytes stay (they come from the shapes); nothing is rated on host time
    perf = a.perf
    assert perf.time_source == "host" and perf.device_time_missing
    assert perf.flops == whole.perf.flops and perf.bytes == whole.perf.bytes
    assert perf.model_flops_utilization is None and perf.flops_per_s_peak_share is None
    assert perf.flops_per_s is None and perf.bytes_per_s is None
    assert all(g.flops_per_s is None and g.compute_peak_share is None
               and g.memory_peak_share is None and g.bound is None for g in perf.groups)
    assert all(f.flops_per_s is None and f.compute_peak_share is None
               and f.memory_peak_share is None for f in perf.families)
    # GPU shares, the step split that assumes the GPU did nothing, the GPU rules, the path
    assert a.step_gpu_busy_share is None and a.gpu.total_ns == 0
    assert a.steps.breakdown is None and all(s.breakdown is None for s in a.steps.steps)
    assert a.critical_path is None
    assert len(whole.recommendations) >= 3  # GPU rules fire on the whole trace, none here
    assert a.recommendations == ()


def test_the_console_and_markdown_name_it_and_print_no_mfu(dropped):
    a = analyze_table(load(dropped))
    console = Console(width=100, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(analysis_console.trace_view(a, top=5, width=100))
    text = " ".join(console.export_text().replace("│", " ").split())
    line = missing_gpu_line(a.gpu_activity_missing)
    assert line in text
    assert text.count("GPU activity missing") == 1  # at the top, not again among the notes
    assert "Model FLOP utilization" not in text and "% of peak:" not in text
    assert "no GPU time recorded" in text and "Step time:" not in text
    md = analysis_markdown.render([a])
    assert f"**{line}.**" in md and md.count("GPU activity missing") == 1


def test_analyze_json_of_a_trace_without_its_gpu_activity(dropped):
    r = subprocess.run([sys.executable, "-m", "profiler_kit", "analyze", "--json", "-",
                        str(dropped)], capture_output=True, text=True, timeout=120,
                       env={"PATH": "/usr/bin:/bin", "COLUMNS": "100"})
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    (t,) = doc["traces"]
    assert doc["schema"] == "profkit.analysis/3"
    missing = t["gpu_activity_missing"]
    assert missing["launch_calls"] == 205 and t["notes"][0] == missing["line"]
    perf = t["perf"]
    assert perf["time_source"] == "host" and perf["device_time_missing"] is True
    for key in ("model_flops_utilization", "flops_per_s_peak_share", "flops_per_s",
                "mfu_time_ns"):
        assert perf[key] is None
    assert all(g["compute_peak_share"] is None and g["flops_per_s"] is None
               for g in perf["groups"])
    assert t["steps"]["breakdown"] is None and t["critical_path"] is None
    assert t["step_gpu_busy_share"] is None and t["recommendations"] == []


def test_cuda_activity_not_enabled(tmp_path):
    """With ``activities=[ProfilerActivity.CPU]`` alone the trace has no runtime calls
    either: ``deviceProperties`` with the GPU's memory events and GPU-only ops (flash
    attention, cuDNN) show the work ran on the GPU."""
    path = _cut(tmp_path, VIT, GPU_CATS | RUNTIME_CATS | {"gpu_user_annotation"},
                "vit_cpu_activity.json.gz")
    a = analyze_table(load(path))
    m = a.gpu_activity_missing
    assert m is not None and m.launch_calls == 0 and m.runtime_calls == 0
    doc = raw(VIT)
    on_gpu = [e for e in doc["traceEvents"] if e.get("name") == "[memory]"
              and e["args"].get("Device Type") == 1]
    assert m.device_memory_events == len(on_gpu) > 0 and m.gpu_only_ops > 0
    line = missing_gpu_line(m)
    assert line.startswith("GPU activity missing: deviceProperties (NVIDIA H100 80GB "
                           "HBM3), GPU memory events")
    assert "likely cause: CUDA activity was not recorded: activities=[ProfilerActivity.CUDA] " \
           "missing, or CUPTI dropped its buffer" in line
    assert a.perf.model_flops_utilization is None and a.perf.device_time_missing


def test_a_cpu_workload_on_a_gpu_machine_is_not_flagged(tmp_path):
    """Kineto writes ``deviceProperties`` on any GPU machine, CPU-only profiles included:
    alone it is no sign of GPU work. The CPU ops' own durations still never meet a GPU
    peak."""
    doc = raw("cpu_torch_profiler.pt.trace.json.gz")
    doc["deviceProperties"] = raw(VIT)["deviceProperties"]
    path = tmp_path / "cpu_on_h100.pt.trace.json"
    path.write_text(json.dumps(doc))
    a = analyze_table(load(path))
    assert a.gpu_activity_missing is None
    assert "cpu_only_trace" in [n.code for n in a.notes]
    perf = a.perf
    assert perf.time_source == "host" and not perf.device_time_missing
    assert perf.flops_per_s is not None  # the CPU's own rate, over its own time
    assert perf.model_flops_utilization is None and perf.flops_per_s_peak_share is None
    assert all(g.compute_peak_share is None and g.memory_peak_share is None
               and g.bound is None for g in perf.groups)
