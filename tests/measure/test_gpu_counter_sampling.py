"""Asking PyTorch's profiler for the GPU counters (``--counters``): the config it gets,
and the one line where they cannot be sampled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from profiler_kit.measure import gpu_counters

SCRIPTS = Path(__file__).parents[1] / "record_scripts"


def test_on_the_cpu_the_counters_are_refused_with_the_reason() -> None:
    assert gpu_counters.why_not(cuda=False) == \
        "the run is on the CPU (the counters are a CUDA GPU's)"


def test_the_config_asks_the_cupti_monitor_backend_for_both_kinds_of_counters() -> None:
    kwargs = gpu_counters.experimental_config(counters=True, all_threads=True)
    config = kwargs["experimental_config"]
    assert json.loads(config.custom_profiler_config) == {
        "backend": "cupti_monitor", "enable_environment_counters": True,
        "enable_pm_sampling": True}
    assert gpu_counters.experimental_config(counters=False, all_threads=False) == {}


def test_record_counters_on_the_cpu_says_so_once_and_records(tmp_path: Path) -> None:
    folder = tmp_path / "sgd"
    r = subprocess.run([sys.executable, "-m", "profiler_kit", "record", "--counters",
                        "--wait", "1", "--warmup", "1", "--active", "2", "-o", str(folder),
                        str(SCRIPTS / "manual_sgd.py"), "--iterations", "6"],
                       capture_output=True, text=True, timeout=240,
                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    said = [line for line in r.stderr.splitlines() if "GPU counters" in line]
    assert said == ["profkit: GPU counters not sampled: the run is on the CPU (the counters "
                    "are a CUDA GPU's)"]
    assert json.loads((folder / "record.json").read_text())["steps"]["complete"]
