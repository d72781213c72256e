"""Turning on the GPU counters PyTorch's profiler can sample while it records.

PyTorch 2.14's ``cupti_monitor`` backend (``torch.profiler.profile(experimental_config=
_ExperimentalConfig(custom_profiler_config=...))``) records the GPU side through CUPTI
itself and can sample, while it does, the GPU's environment (power, temperature, SM and
memory clocks) and CUPTI's PM counters (SM active %, DRAM throughput %). Its traces are
read like any other (``trace/pftrace.py`` for its ``.pftrace``; the counters by
``analysis/perf/gpu_counters.py``). It needs CUDA, a torch that has the backend and the
``cupti-python`` package its exporter imports.
"""

from __future__ import annotations

import json
from typing import Any

# what the backend is asked for: the environment and PM sampling, its default metrics
MONITOR_CONFIG = {"backend": "cupti_monitor", "enable_environment_counters": True,
                  "enable_pm_sampling": True}


def why_not(cuda: bool) -> str | None:
    """None where the counters can be sampled here, else the reason in a few words."""
    if not cuda:
        return "the run is on the CPU (the counters are a CUDA GPU's)"
    try:
        from torch._C._profiler import _ExperimentalConfig
    except ImportError:
        return "this torch has no experimental profiler config"
    try:
        _ExperimentalConfig(custom_profiler_config=json.dumps(MONITOR_CONFIG))
        import torch.profiler._cupti  # noqa: F401
    except (TypeError, ImportError):
        return "this torch's profiler has no cupti_monitor backend (torch 2.14 or newer has)"
    try:
        import torch.profiler._cupti.monitor_trace  # noqa: F401
    except ImportError as e:
        return f"the cupti_monitor backend cannot export ({e}; pip install cupti-python)"
    return None


def experimental_config(counters: bool, all_threads: bool) -> dict[str, Any]:
    """``torch.profiler.profile`` keyword arguments: ``experimental_config`` with the
    counters sampled (``counters``, where ``why_not`` said yes) and every thread profiled
    (``all_threads``); empty when neither is asked for or this torch has neither."""
    if not counters and not all_threads:
        return {}
    try:
        from torch._C._profiler import _ExperimentalConfig
    except ImportError:
        return {}
    kwargs: dict[str, Any] = {}
    if all_threads:
        kwargs["profile_all_threads"] = True
    if counters:
        kwargs["custom_profiler_config"] = json.dumps(MONITOR_CONFIG)
    try:
        return {"experimental_config": _ExperimentalConfig(**kwargs)}
    except TypeError:  # an older torch without one of them
        return {}
