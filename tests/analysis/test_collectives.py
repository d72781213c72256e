"""One rank's collectives from real traces, checked against the raw JSON by hand, and
nccl-tests' bandwidth formulas against hand computations."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profiler_kit.analysis.core.collective_kinds import collective_kind
from profiler_kit.analysis.job_analysis import analyze_jobs
from profiler_kit.analysis.jobs import bandwidth as bw
from profiler_kit.analysis.jobs.rank_summary import summarize_rank
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"
NCCL = DATA / "a100_ddp_nccl_rank0.json.gz"


def _events(path: Path) -> list[dict]:
    with gzip.open(path) as fh:
        return json.load(fh)["traceEvents"]


def test_bus_bandwidth_formulas_by_hand() -> None:
    # 1 GB in 10 ms: algbw 100 GB/s
    size, t = 10**9, 10**7
    assert bw.algbw_bytes_per_s(size, t) == pytest.approx(100e9)
    assert bw.busbw_bytes_per_s("allreduce", size, t, 8) == pytest.approx(100e9 * 2 * 7 / 8)
    assert bw.busbw_bytes_per_s("allgather", size, t, 4) == pytest.approx(100e9 * 3 / 4)
    assert bw.busbw_bytes_per_s("reduce_scatter", size, t, 2) == pytest.approx(50e9)
    assert bw.busbw_bytes_per_s("alltoall", size, t, 16) == pytest.approx(100e9 * 15 / 16)
    assert bw.busbw_bytes_per_s("broadcast", size, t, 8) == pytest.approx(100e9)
    assert bw.busbw_bytes_per_s("reduce", size, t, 8) == pytest.approx(100e9)
    assert bw.busbw_bytes_per_s("send", size, t, 2) == pytest.approx(100e9)
    assert bw.busbw_bytes_per_s("barrier", size, t, 2) is None
    assert bw.algbw_bytes_per_s(None, t) is None and bw.algbw_bytes_per_s(size, 0) is None
    # the size is the larger buffer; gloo gives only the input, all-gather's output is n x
    assert bw.message_bytes("allgather", 100, 800, 8) == 800
    assert bw.message_bytes("allgather", 100, None, 8) == 800
    assert bw.message_bytes("reduce_scatter", 800, None, 8) == 800
    assert bw.message_bytes("allreduce", None, None, 8) is None


@pytest.mark.parametrize(("name", "kind"), [
    ("allreduce", "allreduce"), ("_allgather_base", "allgather"),
    ("reduce_scatter_tensor_coalesced", "reduce_scatter"), ("gloo:all_reduce", "allreduce"),
    ("nccl:_all_gather_base", "allgather"), ("nccl:all_to_all", "alltoall"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
     "allreduce"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "reduce_scatter"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
     "sendrecv"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "broadcast"), ("gloo:send", "send"),
    ("gloo:recv", "recv"), ("barrier", "barrier"), ("reduce", "reduce"),
    ("record_param_comms", "other"),
])
def test_collective_kind(name: str, kind: str) -> None:
    assert collective_kind(name) == kind


def test_nccl_rank_calls_match_the_raw_kernels() -> None:
    summary = summarize_rank(load(NCCL))
    raw = sorted((e for e in _events(NCCL) if e.get("ph") == "X" and e.get("cat") == "kernel"
                  and "Collective name" in e.get("args", {})), key=lambda e: e["ts"])
    assert summary.on_device and summary.rank == 0 and summary.world_size == 2
    assert len(summary.calls) == len(raw) == 21
    widths = {"Float": 4, "Long": 8}
    for call, e in zip(summary.calls, raw, strict=True):
        a = e["args"]
        assert call.kind == a["Collective name"]
        assert call.group == a["Process Group Name"] == "0"
        assert call.size_bytes == max(a["In msg nelems"], a["Out msg nelems"]) * widths[a["dtype"]]
        # the loader rounds µs floats to ns exactly; float products here may be 1 ns off
        assert call.start_ns == pytest.approx(e["ts"] * 1000, abs=1)
        assert call.end_ns - call.start_ns == pytest.approx(e["dur"] * 1000, abs=2)
    assert [c.seq for c in summary.calls] == list(range(21))  # no Seq: the order
    kinds = {k.kind: k for k in summary.kinds}
    assert kinds["allreduce"].count == 15 and kinds["broadcast"].count == 6
    # one call's bus bandwidth by hand: all-reduce on 2 ranks, factor 2 (n - 1) / n = 1
    first = next(c for c in summary.calls if c.kind == "allreduce")
    assert first.size_bytes == 2049000 * 4
    ar = sorted(c.size_bytes * 1e9 / (c.end_ns - c.start_ns) for c in summary.calls
                if c.kind == "allreduce")
    assert kinds["allreduce"].median_busbw_bytes_per_s == pytest.approx(ar[7])


def test_nccl_exposed_communication_agrees_with_the_timeline() -> None:
    a = analyze_table(load(NCCL))
    assert a.communication is not None
    assert a.communication.exposed_ns == a.timeline.devices[0].exposed_communication_ns
    # pieces lie inside their calls and add up to the union (calls do not overlap here)
    total = 0
    for c in a.communication.calls:
        ex = c.exposed
        for s, e in zip(ex[::2], ex[1::2], strict=True):
            assert c.start_ns <= s < e <= c.end_ns
            total += e - s
    assert total == a.communication.exposed_ns


def test_summary_alone_equals_the_one_in_the_full_analysis() -> None:
    table = load(NCCL)
    alone = summarize_rank(table)
    full = analyze_table(table)
    assert full.communication == alone
    # steps: device side as the analysis measures it (checked against the TensorBoard
    # plugin in its own tests)
    assert [s.device_dur_ns for s in alone.steps] == [s.device_dur_ns for s in full.steps.steps]
    assert all(s.device_dur_ns for s in alone.steps)


def test_two_ranks_of_128_missing_ranks_named_and_steps_by_hand() -> None:
    summaries = [summarize_rank(load(DATA / "two_ranks" / f"rank{r}.json.gz")) for r in (0, 1)]
    jobs = analyze_jobs(summaries)
    assert len(jobs) == 1
    job = jobs[0]
    assert job.world_size == 128 and job.ranks == (0, 1)
    assert job.missing_ranks == tuple(range(2, 128))
    assert any(w.code == "ranks_without_trace" and w.figures["missing"] == tuple(range(2, 128))
               for w in job.warnings)
    durations = {}
    for r in (0, 1):
        for e in _events(DATA / "two_ranks" / f"rank{r}.json.gz"):
            if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"):
                durations[(int(e["name"].split("#")[1]), r)] = round(e["dur"] * 1000)
    for s in job.steps:
        assert s.dur_ns == (durations[(s.number, 0)], durations[(s.number, 1)])
        assert s.skew_ns == abs(s.dur_ns[0] - s.dur_ns[1])
        assert s.slowest_rank == (0 if s.dur_ns[0] > s.dur_ns[1] else 1)


def test_gloo_cpu_trace_sizes_from_input_dims() -> None:
    summary = summarize_rank(load(DATA / "cpu_only_gloo.json.gz"))
    raw = sorted((e for e in _events(DATA / "cpu_only_gloo.json.gz")
                  if e.get("name") == "gloo:all_reduce"), key=lambda e: e["ts"])
    assert not summary.on_device and len(summary.calls) == len(raw) == 10
    for call, e in zip(summary.calls, raw, strict=True):
        assert call.kind == "allreduce"
        assert call.size_bytes == e["args"]["Input Dims"][0][0] * 4  # float
    assert summary.world_size == 300 and summary.rank == 34
