"""The run's hotspot summary comes from the same trace analysis as ``profkit analyze``."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiler_kit.analysis.hotspot_summary import CLASSES, from_traces, shares
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"


def test_gpu_trace_summarizes_gpu_time_by_class() -> None:
    trace = DATA / "a100_ddp_nccl_rank0.json.gz"
    got, basis = from_traces([str(trace)])
    assert basis == "GPU time"
    assert set(got) == set(CLASSES)
    assert sum(got.values()) == pytest.approx(1.0)
    full = analyze_table(load(trace)).gpu
    assert got["convolution"] == pytest.approx(full.ns("convolution") / full.total_ns)
    assert got["batchnorm"] == pytest.approx(full.ns("batchnorm") / full.total_ns)
    # communication, elementwise, ... are folded into "other"
    assert got["other"] > full.ns("communication") / full.total_ns


def test_cpu_trace_summarizes_self_cpu_time() -> None:
    trace = DATA / "cpu_torch_profiler.pt.trace.json.gz"
    got, basis = from_traces([str(trace)])
    assert basis == "self CPU time"
    cpu = analyze_table(load(trace)).cpu
    assert got == pytest.approx(shares(cpu))
    assert got["convolution"] > 0


def test_no_traces_no_summary() -> None:
    assert from_traces([]) == ({}, "")
