"""Perfetto-native ``.pftrace`` traces read as their JSON twins.

The twins are written by PyTorch's own ``cupti_monitor`` exporter from one recording
(``tests/monitor_window.py``): live from real traces of ``tests/data`` where the exporter
can run here, and from the pairs kept in ``tests/data/pftrace`` everywhere.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from monitor_window import export, need_exporter

from profiler_kit.errors import TraceError
from profiler_kit.trace.loader import find_traces, load, load_simple
from profiler_kit.trace.pftrace import read_pftrace

DATA = Path(__file__).parents[1] / "data"
PAIRS = DATA / "pftrace"
# real traces whose recording the two formats carry alike: timestamps in ns (with whole µs
# many slices of one thread begin as others end, which a .pftrace cannot order) and no
# slice straddling another's end on one thread (a Python frame that ends inside the
# ProfilerStep it opened: Perfetto's begin/end pairs cannot hold it)
LIVE = ["cpu_torch_profiler.pt.trace.json.gz", "a100_ddp_nccl_rank0.json.gz",
        "h200_concurrent_sequential.pt.trace.json.gz"]


def analyze_json(*paths: Path) -> dict:
    r = subprocess.run([sys.executable, "-m", "profiler_kit", "analyze", *map(str, paths),
                        "--json", "-"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def as_compared(trace: dict) -> dict:
    """One trace's analysis less what names the file, with the step timeline's names
    spelled out (their numbering follows the order events come in the file), and less
    what the two formats carry differently on purpose:

    - ``events``: the JSON export keeps Kineto's "PyTorch Profiler (0)" span, which the
      ``.pftrace`` exporter leaves out (it takes complete events of the CPU's threads);
    - a kernel's shared memory: the encoder writes its dynamic part only, so the
      ``.pftrace`` says nothing of static shared memory, and profkit shows it as unknown.
    """
    t = {k: v for k, v in trace.items() if k not in ("label", "path", "events")}
    timeline = t.get("step_timeline")
    if timeline:
        names = timeline["names"]
        t["step_timeline"] = {**{k: v for k, v in timeline.items() if k != "names"},
                              "name": [names[i] for i in timeline["name"]]}
    occupancy = t.get("sm_occupancy")
    if occupancy:
        t["sm_occupancy"] = {**occupancy, "kernels": [
            {k: v for k, v in kernel.items() if k != "shared_memory_bytes"}
            for kernel in occupancy["kernels"]]}
    return t


def assert_twins(json_trace: Path, pftrace: Path) -> None:
    doc = analyze_json(json_trace, pftrace)
    from_json, from_pftrace = doc["traces"]
    assert from_pftrace["events"] == from_json["events"] - 1
    assert as_compared(from_pftrace) == as_compared(from_json)


@pytest.mark.parametrize("name", LIVE)
def test_a_real_trace_exported_both_ways_analyzes_alike(name: str, tmp_path: Path) -> None:
    need_exporter()
    json_trace, pftrace = export(DATA / name, tmp_path / name.split(".")[0])
    assert_twins(json_trace, pftrace)


@pytest.mark.parametrize("stem", ["cpu_torch_profiler", "a100_triton_kernel_counters"])
def test_the_kept_pairs_analyze_alike(stem: str) -> None:
    assert_twins(PAIRS / f"{stem}.json.gz", PAIRS / f"{stem}.pftrace")


def test_every_loader_reads_a_pftrace_into_the_same_table() -> None:
    path = PAIRS / "a100_triton_kernel_counters.pftrace"
    fast, simple = load(path), load_simple(path)
    twin = load(PAIRS / "a100_triton_kernel_counters.json.gz")
    for column in ("ts_ns", "dur_ns", "cat", "device", "stream", "correlation"):
        assert (getattr(fast, column) == getattr(simple, column)).all(), column
    # the JSON twin holds one more event: Kineto's profiler span
    assert len(fast.ts_ns) == len(twin.ts_ns) - 1
    def kernels(t):
        on = t.cat == 2
        return sorted(zip(t.ts_ns[on].tolist(), t.dur_ns[on].tolist(), strict=True))

    assert kernels(fast) == kernels(twin)
    assert fast.meta.trace_name == "a100_triton_kernel_counters"


def test_a_gzipped_pftrace_reads_as_the_plain_one(tmp_path: Path) -> None:
    plain = PAIRS / "cpu_torch_profiler.pftrace"
    raw = plain.read_bytes()
    assert raw[:2] == b"\x1f\x8b"  # PyTorch writes it gzip-compressed already
    inflated = tmp_path / "inflated.pftrace"
    inflated.write_bytes(gzip.decompress(raw))
    again = tmp_path / "again.pftrace.gz"
    again.write_bytes(raw)
    tables = [load(p) for p in (plain, inflated, again)]
    assert all((t.ts_ns == tables[0].ts_ns).all() and (t.name == tables[0].name).all()
               for t in tables)


def test_a_folder_of_pftraces_is_found(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    copy = tmp_path / "run" / "rank0.pftrace"
    copy.write_bytes((PAIRS / "cpu_torch_profiler.pftrace").read_bytes())
    (tmp_path / "run" / "notes.txt").write_text("not a trace")
    assert find_traces(tmp_path) == [copy]


@pytest.mark.parametrize("content, problem", [
    (b"", "empty file"),
    (b"\x1f\x8b\x08\x00garbage", "corrupt gzip"),
    (b"\xff" * 64, "not a Perfetto trace"),
])
def test_a_broken_pftrace_is_one_line_naming_the_problem(tmp_path: Path, content: bytes,
                                                         problem: str) -> None:
    bad = tmp_path / "bad.pftrace"
    bad.write_bytes(content)
    with pytest.raises(TraceError, match=problem) as e:
        load(bad)
    assert "\n" not in str(e.value) and str(bad) in str(e.value)


def test_a_pftrace_with_nothing_to_analyze_says_so(tmp_path: Path) -> None:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    trace.packet.add().clock_snapshot.clocks.add(clock_id=6, timestamp=1)
    empty = tmp_path / "empty.pftrace"
    empty.write_bytes(trace.SerializeToString())
    with pytest.raises(TraceError, match="no slices or GPU events"):
        load(empty)


def test_the_kernels_architecture_gives_the_compute_capability(tmp_path: Path,
                                                               monkeypatch) -> None:
    """On a GPU, PyTorch's encoder names the architecture (``sm_90``) on every kernel:
    the compute capability the rules and the occupancy limits need."""
    need_exporter()
    import torch

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    _, pftrace = export(DATA / "a100_triton_kernel.json.gz", tmp_path / "triton")
    table = load(pftrace)
    assert table.meta.device_properties == [
        {"id": 0, "computeMajor": 9, "computeMinor": 0, "warpSize": 32}]
    doc = analyze_json(pftrace)["traces"][0]
    assert doc["devices"] == [{"id": 0, "name": None, "total_memory_bytes": None,
                               "compute_capability": "9.0"}]


def _trace_of(packets: list) -> bytes:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    for p in packets:
        trace.packet.add().CopyFrom(p)
    return trace.SerializeToString()


def _packet(**fields):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    p = pb.TracePacket(trusted_packet_sequence_id=1, **fields)
    return p


def test_other_producers_conventions_are_read_or_refused(tmp_path: Path) -> None:
    """A default track for a sequence, a GPU counter descriptor sent once, annotations
    nested the older way or interned, a clock snapshot last: read as meant; timestamps on
    an incremental clock: one line naming it."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    defaults = _packet(trace_packet_defaults=pb.TracePacketDefaults(
        track_event_defaults=pb.TrackEventDefaults(track_uuid=5)))
    thread = _packet(track_descriptor=pb.TrackDescriptor(
        uuid=5, thread=pb.ThreadDescriptor(pid=1, tid=2, thread_name="main")))
    dims = pb.DebugAnnotation(name="Input Dims", nested_value=pb.DebugAnnotation.NestedValue(
        nested_type=2, array_values=[pb.DebugAnnotation.NestedValue(int_value=3)]))
    begin = _packet(timestamp=1_001_000, track_event=pb.TrackEvent(
        type=1, name="aten::mm", categories=["cpu_op"], debug_annotations=[dims]))
    end = _packet(timestamp=1_003_000, track_event=pb.TrackEvent(type=2))
    descriptor = pb.GpuCounterDescriptor(specs=[
        pb.GpuCounterDescriptor.GpuCounterSpec(counter_id=0, name="Power (W)")])
    samples = [_packet(timestamp=1_000_000 + k * 1000, gpu_counter_event=pb.GpuCounterEvent(
        gpu_id=1, counters=[pb.GpuCounterEvent.GpuCounter(counter_id=0, double_value=100.0 + k)],
        **({"counter_descriptor": descriptor} if k == 0 else {}))) for k in range(3)]
    snapshot = _packet(clock_snapshot=pb.ClockSnapshot(clocks=[
        pb.ClockSnapshot.Clock(clock_id=6, timestamp=1_000_000)]))
    path = tmp_path / "sdk.pftrace"
    path.write_bytes(_trace_of([defaults, thread, begin, end, *samples, snapshot]))
    _, events = read_pftrace(path)
    (mm,) = [e for e in events if e["ph"] == "X"]
    assert (mm["tid"], mm["ts"], mm["dur"], mm["args"]) == (2, 1, 2, {"Input Dims": [3]})
    power = [(e["pid"], e["ts"], e["args"][""]) for e in events if e["ph"] == "C"]
    assert power == [("GPU 1 Counters", 0, 100.0), ("GPU 1 Counters", 1, 101.0),
                     ("GPU 1 Counters", 2, 102.0)]
    incremental = tmp_path / "incremental.pftrace"
    incremental.write_bytes(_trace_of([thread, _packet(timestamp=5, timestamp_clock_id=64,
                                                       track_event=pb.TrackEvent(type=1))]))
    with pytest.raises(TraceError, match="timestamps on clock 64"):
        load(incremental)


def test_a_counter_beyond_a_float_is_skipped_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
        {"ph": "C", "name": "big", "pid": 1, "ts": 1, "args": {"": 10**400}},
        {"ph": "C", "name": "ok", "pid": 1, "ts": 1, "args": {"": 2}}]}))
    for loader in (load, load_simple):
        table = loader(path)
        assert table.counters.names == ["ok"]
        assert table.skipped == {"counter value not a number": 1}


def test_memory_reads_the_json_beside_a_pftrace_and_names_a_pftrace_alone(tmp_path: Path,
                                                                         capsys) -> None:
    import shutil

    from profiler_kit.cli import main

    shutil.copy(DATA / "cpu_torch_profiler.pt.trace.json.gz", tmp_path)
    shutil.copy(PAIRS / "cpu_torch_profiler.pftrace", tmp_path)
    assert main(["memory", str(tmp_path)]) == 0
    assert main(["memory", str(tmp_path / "cpu_torch_profiler.pftrace")]) == 2
    assert "a .pftrace holds no memory records" in capsys.readouterr().err


def test_every_way_of_reading_json_keeps_the_same_counters() -> None:
    """Whole, in small pieces, in parts on two cores, event by event: the same samples."""
    path = PAIRS / "a100_triton_kernel_counters.json.gz"
    reference = load_simple(path).counters
    for kwargs in ({}, {"chunk_bytes": 512}, {"chunk_bytes": 512, "jobs": 2}):
        c = load(path, **kwargs).counters
        assert c.names == reference.names, kwargs
        for column in ("ts_ns", "device", "series", "value"):
            assert getattr(c, column).tolist() == getattr(reference, column).tolist(), kwargs
