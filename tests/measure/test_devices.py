"""Device resolution, requirements with their reasons, AMP dtype, environment."""

from __future__ import annotations

import pytest

from profiler_kit.errors import UsageError
from profiler_kit.measure import devices
from profiler_kit.scenario import CUDA, MULTI_GPU, Strategy

no_cuda = pytest.mark.skipif(devices.cuda_count() > 0, reason="checks a machine without CUDA")


@no_cuda
def test_cuda_strategies_are_skipped_with_the_reason_on_cpu() -> None:
    assert devices.unmet_requirement(Strategy("s", "", requires=(CUDA,)), "cpu") == (
        "needs CUDA; this machine has none")
    assert devices.unmet_requirement(Strategy("d", "", requires=(MULTI_GPU,)), "cpu") == (
        "needs ≥2 GPUs; found 0")
    assert devices.unmet_requirement(Strategy("plain", ""), "cpu") is None


@no_cuda
def test_cuda_device_without_cuda_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no CUDA device"):
        devices.resolve("cuda")
    assert devices.resolve("auto") == "cpu"


def test_bad_device_name_and_amp_dtype() -> None:
    with pytest.raises(UsageError, match="choose auto, cpu"):
        devices.resolve("tpu")
    assert devices.amp_dtype("cpu") == "bfloat16"
    assert devices.amp_dtype("cuda:0") == "float16"


def test_environment_names_versions_and_machine() -> None:
    env = devices.environment(["profkit", "run", "concurrent"])
    for key in ("torch", "torchvision", "cuda", "device_count", "devices", "cpu_threads",
                "hostname", "command_line", "python"):
        assert key in env
    assert env["command_line"] == "profkit run concurrent"
    assert env["cpu_threads"] >= 1
    import torchvision  # read from its files, not imported: the same string, build and all
    assert env["torchvision"] == torchvision.__version__
