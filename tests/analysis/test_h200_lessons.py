"""What profkit's first run on a GPU (an H200, benchmarks/results/nvidia-h200) showed, held
on its own traces: the README's main job, DenseNet-121 and ResNet-101 inference at batch
200 on 3×32×32 images, float32 (``sequential``) and float16 autocast (``sequential+amp``),
three profiled steps each. Every figure is checked against a count made here from the raw
JSON."""

from __future__ import annotations

import gzip
import json
import statistics

import pytest
from real_traces import DATA, analysis, ns

from profiler_kit.analysis.whatif.changes import Precision
from profiler_kit.analysis.whatif.replay import what_if
from profiler_kit.render.wording.notes import say
from profiler_kit.trace.loader import load

FP32 = "h200_concurrent_sequential.pt.trace.json.gz"
FP16 = "h200_concurrent_sequential_amp.pt.trace.json.gz"


def raw(name: str) -> list[dict]:
    with gzip.open(DATA / name, "rt") as fh:
        return json.load(fh)["traceEvents"]


def kernel_ns(name: str, part: str = "", cats: tuple[str, ...] = ("kernel",)) -> int:
    return sum(ns(e["dur"]) for e in raw(name)
               if e.get("cat") in cats and part in e["name"])


def step_median_ns(name: str) -> int:
    return int(statistics.median(ns(e["dur"]) for e in raw(name)
                                 if str(e.get("name", "")).startswith("ProfilerStep#")))


def test_one_batchnorm_kernel_holds_most_of_the_gpu_time():
    """cuDNN's NCHW batchnorm for inference runs 52 µs a call on 2×2 and 1×1 maps, at 1 %
    of the memory bandwidth: 71 % of the GPU's busy time, the hotspot the run reports."""
    a = analysis(FP32)
    bn = kernel_ns(FP32, "cudnn::bn_fw_inf_1C11_kernel_NCHW")
    (batchnorm,) = [c for c in a.gpu.classes if c.klass == "batchnorm"]
    assert batchnorm.total_ns == bn
    gpu = kernel_ns(FP32, cats=("kernel", "gpu_memcpy", "gpu_memset"))
    assert batchnorm.share == pytest.approx(bn / gpu)
    assert 0.70 < batchnorm.share < 0.72 and a.gpu.classes[0].klass == "batchnorm"


def test_the_step_is_host_bound_and_says_so_first():
    """The GPU is busy under half the step; the rest it waits for the host's dispatch of
    ~1,100 small ops a step. host_bound leads, with CUDA graphs' prediction."""
    a = analysis(FP32)
    assert a.step_gpu_busy_share < 0.5
    first = a.recommendations[0]
    assert first.rule == "host_bound" and first.predicted_gain_pct > 30


def test_float16_made_the_step_slower_and_the_peak_ratio_cannot_say_so():
    """Measured: the float16 twin's profiled steps are longer than float32's (and its timed
    median 21 % longer, run.json). The precision change scales only the GEMM and
    convolution kernels by the H200's peak ratio: in a host-bound step it predicts no
    change, and it says that the casts autocast adds are not counted. A measured op
    replay has to reproduce the slowdown; this pair is the case to hold it to."""
    assert step_median_ns(FP16) > 1.05 * step_median_ns(FP32)
    w = what_if(load(DATA / FP32), changes=[Precision("fp16")])
    (gain,) = w.gains
    assert abs(gain.gain_pct) < 1
    assert "casts autocast adds are not counted" in say(gain.notes[0])


def test_float16_convolutions_in_nchw_add_layout_transposes():
    """cuDNN's tensor-core convolutions work in NHWC: fed NCHW, it transposes around them,
    in float32 (TF32) as in float16; float16 adds 114 more transposes. conv_channels_last
    fires on the float16 trace."""
    def transposes(name: str) -> int:
        return sum(1 for e in raw(name) if e.get("cat") == "kernel"
                   and ("nchwToNhwcKernel" in e["name"] or "nhwcToNchwKernel" in e["name"]))

    assert transposes(FP32) == 933 and transposes(FP16) == 1047
    assert "conv_channels_last" in {r.rule for r in analysis(FP16).recommendations}
