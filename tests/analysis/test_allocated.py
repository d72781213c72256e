"""What "allocated" counts: on the CPU the bytes allocated in the trace and not yet freed,
not PyTorch's ``Total Allocated`` (a counter of the profiling sessions of the process,
which a second session inherits from the first); on a GPU the allocator's own total.

The real check profiles the same steps twice in one process, the first session keeping
a tensor past its end: the second session's ``Total Allocated`` starts with that tensor in
it, profkit's peak does not, and both sessions' peaks equal a walk of their raw events by
address done here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from analysis_tables import Alloc, make_table
from raw_memory import in_trace_allocated
from torch.profiler import ProfilerActivity, profile

from profiler_kit import api
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.memory.allocated import allocated_after_each
from profiler_kit.analysis.memory.over_time import memory_timeline
from profiler_kit.analysis.memory.usage import analyze_memory

KEPT = 256 * 1024  # what the first session leaves allocated as it stops


def _session(path: Path, model: torch.nn.Module, x: torch.Tensor,
             keep: bool) -> torch.Tensor | None:
    """Two training steps under the profiler; with ``keep``, a tensor allocated in the last
    step outlives the session (freed by the caller after the profiler stopped)."""
    kept = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for _ in range(2):
            model.zero_grad(set_to_none=True)
            model(x).square().sum().backward()
        if keep:
            kept = torch.empty(KEPT // 4)
    prof.export_chrome_trace(str(path))
    return kept


def _walked_peak(trace: Path) -> tuple[int, int]:
    """(peak of the bytes allocated in the trace and not yet freed, Total Allocated before
    the first event), walking the raw events by address."""
    events = json.loads(trace.read_text())["traceEvents"]
    mem = [e["args"] for e in sorted((e for e in events if e.get("name") == "[memory]"),
                                     key=lambda e: e["ts"])]
    return max(in_trace_allocated(mem)), mem[0]["Total Allocated"] - mem[0]["Bytes"]


def test_a_second_session_does_not_inherit_the_firsts_bytes(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 8))
    x = torch.randn(32, 64)
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    kept = _session(first, model, x, keep=True)
    del kept  # freed while no profiler runs: PyTorch's counter keeps it
    _session(second, model, x, keep=False)

    peaks = {}
    for trace in (first, second):
        walked, _ = _walked_peak(trace)
        (cpu,) = api.analyze(trace)[0].memory.devices
        assert (cpu.device, cpu.counts_before_trace) == ("cpu", False)
        assert cpu.peak_allocated_bytes == walked
        (peak,) = api.memory([trace]).strategies[0].peaks
        assert peak.peak_allocated_bytes == walked and not peak.counts_before_trace
        peaks[trace.name] = walked
    # the first session's tensor is in the second's Total Allocated from its first event
    _, inherited = _walked_peak(second)
    assert inherited >= KEPT
    # the same steps, the same peak (the first also counts its kept tensor at its end)
    assert peaks["second.json"] <= peaks["first.json"]
    assert peaks["first.json"] - peaks["second.json"] <= KEPT


def test_cpu_frees_of_blocks_from_before_the_trace_are_left_out() -> None:
    # a 100-byte block allocated before the trace is freed in it (address 7)
    nbytes = np.array([50, -100, 30, -50, 20], dtype=np.int64)
    addr = np.array([1, 7, 2, 1, 1], dtype=np.int64)
    totals = np.array([5050, 4950, 4980, 4930, 4950], dtype=np.int64)
    assert allocated_after_each(True, nbytes, totals, addr).tolist() == [50, 50, 80, 30, 50]
    # without addresses every free counts, never below zero
    none = np.full(5, -1, dtype=np.int64)
    assert allocated_after_each(True, nbytes, totals, none).tolist() == [50, 0, 0, 0, 0]
    # a GPU's allocator reports its whole total: that is the figure
    assert allocated_after_each(False, nbytes, totals, addr).tolist() == totals.tolist()


def test_gpu_totals_and_cpu_sums_in_one_trace() -> None:
    allocs = [Alloc(10, 100, 1100, 2048, device_type=1, addr=1),
              Alloc(20, 64, 5064, 0, device_type=0, device_id=-1, addr=9),
              Alloc(30, -100, 1000, 2048, device_type=1, addr=1),
              Alloc(40, -64, 5000, 0, device_type=0, device_id=-1, addr=9)]
    table = make_table([], allocs)
    devices = {d.device: d for d in analyze_memory(table, build_op_tree(table)).devices}
    assert (devices["cuda:0"].peak_allocated_bytes, devices["cuda:0"].counts_before_trace) == (
        1100, True)
    assert (devices["cpu"].peak_allocated_bytes, devices["cpu"].counts_before_trace) == (
        64, False)
    series = {s.device: s for s in memory_timeline(table).devices}
    assert list(series["cpu"].allocated_bytes) == [64, 0]
    assert list(series["cuda:0"].allocated_bytes) == [1100, 1000]
