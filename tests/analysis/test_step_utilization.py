"""GPU utilization of the steps against their device-side time, not the GPU window.

``a100_triton_kernel`` is one 13.3 s step whose only GPU work is one 1.76 µs kernel: over
the GPU window (first to last GPU activity) it reads "idle 0 %"; over the step it is
almost entirely idle, and the low-utilization rule must say so. Checked by hand from the
trace's own events.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profiler_kit import api

TRACE = Path(__file__).parents[1] / "data" / "a100_triton_kernel.json.gz"


def test_a_long_step_with_little_gpu_work_is_idle() -> None:
    events = json.loads(gzip.decompress(TRACE.read_bytes()))["traceEvents"]
    kernels = [e for e in events if e.get("cat") == "kernel"]
    (step,) = [e for e in events if e.get("cat") == "user_annotation"
               and e["name"].startswith("ProfilerStep#")]
    busy_us = sum(k["dur"] for k in kernels)
    # the device-side step (TensorBoard plugin): from the step's start to the end of the
    # last GPU work launched in it, or the step's own end if later
    end_us = max(step["ts"] + step["dur"], max(k["ts"] + k["dur"] for k in kernels))
    device_step_us = end_us - step["ts"]

    (a,) = api.analyze(TRACE)
    assert a.step_device_ns == pytest.approx(device_step_us * 1000, abs=1000)
    assert a.step_gpu_busy_share == pytest.approx(busy_us / device_step_us, rel=1e-3)
    assert a.step_gpu_busy_share < 1e-6
    (rule,) = [r for r in a.recommendations if r.rule == "low_gpu_utilization"]
    assert rule.measured == pytest.approx(busy_us / device_step_us, rel=1e-3)
    assert {e.label for e in rule.evidence} >= {"GPU busy", "device-side step time"}
