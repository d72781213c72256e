"""The trace loader on real traces, on odd events and on bad files.

Expected numbers are computed independently with the standard ``json`` module.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from profiler_kit.errors import TraceError
from profiler_kit.trace import source
from profiler_kit.trace.loader import find_traces, load, load_simple
from profiler_kit.trace.normalize import SHAPES_NOT_KEPT
from profiler_kit.trace.table import CATEGORY_NAMES, Cat, EventTable

DATA = Path(__file__).parents[1] / "data"
REAL = sorted(DATA.glob("*.json.gz"))


def raw_doc(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        return json.load(fh)


def exact_ns(us: int | float) -> int:
    """Independent µs -> ns: exact decimal arithmetic on the JSON number."""
    if isinstance(us, int):
        return us * 1000
    return int((Decimal(repr(us)) * 1000).to_integral_value())


def write_trace(path: Path, events: list[Any], **top: Any) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, **top, "traceEvents": events}))
    return path


def ev(**fields: Any) -> dict[str, Any]:
    base = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not ...}


def assert_same(a: EventTable, b: EventTable) -> None:
    for col in ("cat", "ts_ns", "dur_ns", "pid", "tid", "device", "stream", "correlation",
                "external_id"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col), err_msg=col)
    assert [a.names[i] for i in a.name] == [b.names[i] for i in b.name]
    for col in ("ts_ns", "bytes", "total_allocated_bytes", "total_reserved_bytes", "device_id",
                "device_type", "tid"):
        np.testing.assert_array_equal(getattr(a.memory, col), getattr(b.memory, col))
    assert a.skipped == b.skipped
    assert a.normalized == b.normalized
    assert a.process_names == b.process_names
    assert a.thread_names == b.thread_names
    assert a.inputs.keys() == b.inputs.keys()
    assert all(a.op_inputs(r) == b.op_inputs(r) for r in a.inputs)
    assert a.event_waits == b.event_waits


@pytest.fixture(scope="module", params=REAL, ids=lambda p: p.name)
def real(request: pytest.FixtureRequest) -> tuple[Path, dict[str, Any], EventTable]:
    path = request.param
    return path, raw_doc(path), load(path)


def test_every_complete_event_is_a_row(real) -> None:
    _path, doc, table = real
    complete = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    assert len(table) == len(complete)
    assert table.skipped == {}


def test_categories_and_durations_match_an_independent_count(real) -> None:
    _path, doc, table = real
    want_count: Counter[int] = Counter()
    want_dur: Counter[int] = Counter()
    for e in doc["traceEvents"]:
        if e.get("ph") == "X":
            cat = int(CATEGORY_NAMES.get(str(e.get("cat")).lower(), Cat.OTHER))
            want_count[cat] += 1
            want_dur[cat] += exact_ns(e["dur"])
    for cat in Cat:
        rows = table.rows(cat)
        assert len(rows) == want_count[int(cat)], cat
        assert int(table.dur_ns[rows].sum()) == want_dur[int(cat)], cat


def test_kernel_totals_per_name_match(real) -> None:
    _path, doc, table = real
    want: Counter[str] = Counter()
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and str(e.get("cat")).lower() == "kernel":
            want[e["name"]] += exact_ns(e["dur"])
    got: Counter[str] = Counter()
    for row in table.rows(Cat.KERNEL):
        got[table.name_of(int(row))] += int(table.dur_ns[row])
    assert got == want


def test_rows_sorted_and_gpu_columns_set(real) -> None:
    _path, doc, table = real
    assert np.all(np.diff(table.ts_ns) >= 0)
    assert np.all(table.dur_ns >= 0)
    gpu = np.isin(table.cat, [int(Cat.KERNEL), int(Cat.MEMCPY), int(Cat.MEMSET)])
    cpu = np.isin(table.cat, [int(Cat.CPU_OP), int(Cat.RUNTIME), int(Cat.USER_ANNOTATION)])
    assert np.all(table.device[cpu] == -1) and np.all(table.stream[cpu] == -1)
    assert np.all(table.device[gpu] >= 0)
    kernels = [e for e in doc["traceEvents"]  # "Kernel" in traces of PyTorch 1.9 and before
               if e.get("ph") == "X" and str(e.get("cat")).lower() == "kernel"]
    assert sorted(int(d) for d in table.device[table.cat == Cat.KERNEL]) == sorted(
        e["args"].get("device", e["pid"]) for e in kernels
    )
    assert sorted(int(s) for s in table.stream[table.cat == Cat.KERNEL]) == sorted(
        e["args"].get("stream", e["tid"]) for e in kernels
    )
    assert sorted(int(c) for c in table.correlation[table.cat == Cat.KERNEL]) == sorted(
        e["args"].get("correlation", -1) for e in kernels
    )


def test_metadata(real) -> None:
    path, doc, table = real
    meta = table.meta
    assert meta.path == str(path)
    assert meta.schema_version == doc.get("schemaVersion")
    assert meta.rank == doc.get("distributedInfo", {}).get("rank")
    assert meta.base_time_ns == doc.get("baseTimeNanoseconds")
    assert meta.device_properties == doc.get("deviceProperties", [])
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"
             and isinstance(e["pid"], int)}
    assert {k: v for k, v in table.process_names.items() if k >= 0} == names


def test_simple_and_fast_loaders_agree(real) -> None:
    path, _doc, table = real
    assert_same(table, load_simple(path))


def test_per_event_path_gives_the_same_table(real) -> None:
    path, _doc, table = real
    assert_same(table, load(path, lenient=True))


@pytest.mark.parametrize("chunk_bytes", [1, 997, 64 * 1024])
def test_piece_size_does_not_change_the_table(real, chunk_bytes: int) -> None:
    path, _doc, table = real
    if chunk_bytes < 64 * 1024 and path.stat().st_size > 100_000:
        pytest.skip("tiny pieces on a large trace: slow, and covered by the small traces")
    assert_same(table, load(path, chunk_bytes=chunk_bytes))


def test_decoded_events_held_elsewhere_do_not_stop_the_read(monkeypatch) -> None:
    """A sampling profiler (Dask's worker profiler) may hold the frames that held a
    piece's decoded events, whose raw values borrow the piece's bytes: the read goes on
    with a copy of its buffer and gives the same table."""
    from profiler_kit.trace.columns import ColumnBuilder

    path = DATA / "gloo_straggler" / sorted(p.name for p in (DATA / "gloo_straggler").iterdir())[0]
    reference = load(path, chunk_bytes=4096)
    held: list[Any] = []
    add_typed = ColumnBuilder.add_typed

    def holding(self, events):
        held.append(events)
        return add_typed(self, events)

    monkeypatch.setattr(ColumnBuilder, "add_typed", holding)
    assert_same(reference, load(path, chunk_bytes=4096))
    assert len(held) > 1


def test_memory_events_from_a_cpu_trace() -> None:
    path = DATA / "cpu_torch_profiler.pt.trace.json.gz"
    doc = raw_doc(path)
    mem = [e for e in doc["traceEvents"] if e.get("ph") == "i" and e.get("name") == "[memory]"]
    table = load(path)
    assert len(table.memory) == len(mem) > 0
    assert int(table.memory.bytes.sum()) == sum(e["args"]["Bytes"] for e in mem)
    assert int(table.memory.total_allocated_bytes.max()) == max(
        e["args"]["Total Allocated"] for e in mem
    )
    assert set(table.memory.device_type.tolist()) == {0}
    assert np.all(np.diff(table.memory.ts_ns) >= 0)
    phases = {table.names[i] for i in table.name[table.cat == Cat.USER_ANNOTATION]}
    assert {"forward", "backward", "optimizer"} <= phases


def test_plain_json_loads_like_gzip(tmp_path: Path) -> None:
    src = DATA / "a100_alexnet.json.gz"
    plain = tmp_path / "alexnet.json"
    plain.write_bytes(gzip.decompress(src.read_bytes()))
    assert_same(load(plain), load(src))


def test_legacy_categories_are_mapped(tmp_path: Path) -> None:
    events = [
        ev(cat="Kernel", name="k1", args={"device": 1, "stream": 3, "correlation": 9}),
        ev(cat="Operator", name="aten::mm", pid=5, tid=6, args={"external id": 4}),
        ev(cat="Runtime", name="cudaLaunchKernel", pid=5, tid=6, args={"correlation": 9}),
        ev(cat="Memcpy", name="Memcpy HtoD", args={}),
        ev(cat="Memset", name="Memset", args={"device": 2}),
    ]
    table = load(write_trace(tmp_path / "legacy.json", events))
    by_name = {table.names[int(table.name[i])]: i for i in range(len(table))}
    assert table.cat[by_name["k1"]] == Cat.KERNEL
    assert (table.device[by_name["k1"]], table.stream[by_name["k1"]]) == (1, 3)
    assert table.correlation[by_name["k1"]] == 9
    assert table.cat[by_name["aten::mm"]] == Cat.CPU_OP
    assert table.external_id[by_name["aten::mm"]] == 4
    assert table.device[by_name["aten::mm"]] == -1
    assert table.cat[by_name["cudaLaunchKernel"]] == Cat.RUNTIME
    assert table.cat[by_name["Memcpy HtoD"]] == Cat.MEMCPY
    assert (table.device[by_name["Memcpy HtoD"]], table.stream[by_name["Memcpy HtoD"]]) == (0, 7)
    assert table.cat[by_name["Memset"]] == Cat.MEMSET


@pytest.mark.parametrize("layout", ["events first", "events last", "compact", "spaced"])
def test_key_order_and_whitespace(tmp_path: Path, layout: str) -> None:
    events = [ev(name=f"k{i}", ts=i, args={"correlation": i}) for i in range(50)]
    events.append({"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "gpu 0"}})
    meta = {"schemaVersion": 1, "distributedInfo": {"rank": 3, "ranks": [{"a": 1}, {"b": 2}]},
            "deviceProperties": [{"id": 0, "name": "X"}, {"id": 1, "name": "Y"}]}
    if layout == "events first":
        text = json.dumps({"traceEvents": events, **meta}, indent=2)
    elif layout == "events last":
        text = json.dumps({**meta, "traceEvents": events})
    elif layout == "compact":
        text = json.dumps({**meta, "traceEvents": events, "baseTimeNanoseconds": 7},
                          separators=(",", ":"))
    else:
        text = json.dumps({**meta, "traceEvents": events}, separators=(" ,\n\t ", " :  "))
    path = tmp_path / "t.json"
    path.write_text(text)
    for chunk in (1, 100, None):
        table = load(path, chunk_bytes=chunk)
        assert len(table) == 50
        assert table.meta.rank == 3
        assert table.meta.device_properties == meta["deviceProperties"]
        assert table.process_names == {0: "gpu 0"}
        assert table.correlation.tolist() == list(range(50))
        assert_same(table, load_simple(path))


def test_time_units(tmp_path: Path) -> None:
    events = [ev(ts=1695835542514261, dur=3), ev(ts=4458676522690.655, dur=0.0005),
              ev(ts=1.5, dur=2.25)]
    table = load(write_trace(tmp_path / "t.json", events))
    assert table.ts_ns.tolist() == [1500, 4458676522690655, 1695835542514261000]
    assert table.dur_ns.tolist() == [2250, 0, 3000]


def test_odd_events_are_skipped_and_counted(tmp_path: Path) -> None:
    events = [
        ev(name="ok"),
        ev(dur=...),
        ev(dur=-1),
        ev(ts="soon"),
        ev(ts=...),
        ev(pid=2**70),
        ev(dur=2**80),
        ev(name=...),
        ev(pid=None),
        "not an event",
        ev(ph="B"),
        ev(pid="Spans", tid="PyTorch Profiler", cat="Trace", name="span"),
        ev(cat="mystery", name="m"),
        ev(args=[1, 2], name="listargs"),
        ev(args={"correlation": 2**65, "External id": "x"}, name="bigcorr"),
        {"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 3, "cat": "ac2g", "name": "ac2g"},
        {"ph": "i", "name": "Iteration Start", "pid": "Traces", "tid": "x", "ts": 1, "s": "g"},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 4, "args": {"Bytes": 512,
         "Total Allocated": 512, "Total Reserved": 2048, "Device Type": 1, "Device Id": 0}},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 4, "args": {}},
    ]
    table = load(write_trace(tmp_path / "odd.json", events))
    names = sorted(table.names[i] for i in table.name)
    assert names == ["bigcorr", "listargs", "m", "ok", "span"]
    assert table.skipped == {
        "event is not an object": 1,
        "memory event without Bytes": 1,
        "missing dur": 1,
        "missing name": 1,
        "missing pid": 1,
        "missing ts": 1,
        "negative dur": 1,
        "non-numeric ts": 1,
        "dur beyond 64 bits": 1,
        "pid beyond 64 bits": 1,
        "unsupported phase 'B'": 1,
    }
    assert table.normalized == {"args not an object": 1, "unknown category: mystery": 1}
    span = table.names.index("span")
    assert table.pid[table.name == span][0] < 0
    assert table.cat[table.name == span][0] == Cat.OTHER
    big = table.names.index("bigcorr")
    assert table.correlation[table.name == big][0] == -1
    assert table.external_id[table.name == big][0] == -1
    assert len(table.memory) == 1
    assert table.memory.total_reserved_bytes.tolist() == [2048]
    assert table.memory.device_type.tolist() == [1]
    assert table.memory.device_id.tolist() == [0]
    assert_same(table, load_simple(tmp_path / "odd.json"))


def test_phases_the_table_does_not_use_keep_the_fast_path(tmp_path: Path) -> None:
    """Begin/end and async spans are counted as skipped by the typed decode itself,
    without sending the trace to the per-event rules; counters are kept as samples."""
    from profiler_kit.trace.columns import document_table

    extra = [{"ph": "C", "name": "mem", "pid": 0, "ts": 5, "args": {"v": 1}},
             {"ph": "B", "name": "b", "pid": 0, "tid": 1, "ts": 3},
             {"ph": "E", "pid": 0, "tid": 1, "ts": 4},
             {"ph": "b", "name": "a", "id": 1, "pid": 0, "ts": 6, "cat": "x"}]
    path = write_trace(tmp_path / "phases.json", [ev(ts=i) for i in range(5)] + extra)
    table = document_table(path, path.read_bytes())
    assert table is not None
    assert table.skipped == {"unsupported phase 'B'": 1, "unsupported phase 'E'": 1,
                             "unsupported phase 'b'": 1}
    assert table.counters.names == ["mem"] and table.counters.value.tolist() == [1.0]
    assert table.counters.ts_ns.tolist() == [5000] and table.counters.device.tolist() == [-1]
    assert_same(table, load_simple(path))


@pytest.fixture
def inflater(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """gzip inflated by igzip where it is installed, or by the standard library's zlib (as
    where igzip has no wheel)."""
    if request.param == "zlib":
        monkeypatch.setattr(source, "inflating", zlib)
    return request.param


@pytest.mark.parametrize("inflater", ["installed", "zlib"], indirect=True)
def test_gzip_framings_load_like_plain_json(tmp_path: Path, inflater: str) -> None:
    """Several gzip members, and padding after the last, read as the whole content."""
    text = gzip.decompress((DATA / "a100_alexnet.json.gz").read_bytes())
    expected = load(write_bytes(tmp_path / "plain.json", text))
    half = len(text) // 2
    framings = {
        "members.json.gz": gzip.compress(text[:half]) + gzip.compress(text[half:]),
        "zero_padded.json.gz": gzip.compress(text) + b"\0" * 512,
        "trailing_junk.json.gz": gzip.compress(text) + b"junk",
    }
    for name, data in framings.items():
        assert_same(load(write_bytes(tmp_path / name, data)), expected)


def write_bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


BAD_FILES = {
    "empty.json": b"",
    "blank.json": b"  \n ",
    "truncated.json": b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}, {"ph": ',
    "notjson.json": b"this is not json",
    "list.json": b"[1, 2, 3]",
    "noevents.json": b'{"schemaVersion": 1}',
    "eventsnotlist.json": b'{"traceEvents": {"a": 1}}',
    "corrupt.json.gz": b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-not-deflate",
    "truncated.json.gz": gzip.compress(b'{"traceEvents": []}' * 50)[:30],
    "deep.json": b'{"traceEvents": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}",
    "unclosed.json": b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2}',
    "garbage_inside.json": b'{"traceEvents": [{"ph": "X"}, @@, {"ph": "X"}]}',
}


@pytest.mark.parametrize("inflater", ["installed", "zlib"], indirect=True)
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files_raise_one_clear_line(tmp_path: Path, name: str, inflater: str) -> None:
    path = tmp_path / name
    path.write_bytes(BAD_FILES[name])
    for loader in (load, load_simple):
        with pytest.raises(TraceError) as info:
            loader(path)
        message = str(info.value)
        assert message.startswith(str(path) + ": ")
        assert "\n" not in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such file"):
        load(tmp_path / "nope.json")


def test_empty_event_list_is_an_empty_table(tmp_path: Path) -> None:
    table = load(write_trace(tmp_path / "e.json", []))
    assert len(table) == 0 and len(table.memory) == 0 and table.names == []


def test_find_traces_in_a_logdir(tmp_path: Path) -> None:
    run = tmp_path / "run1"
    (run / "threads").mkdir(parents=True)
    (run / "streams").mkdir()
    write_trace(run / "threads" / "w0.123.pt.trace.json", [])
    (run / "streams" / "w0.9.pt.trace.json.gz").write_bytes(
        gzip.compress(json.dumps({"traceEvents": []}).encode()))
    write_trace(run / "other_trace.json", [ev()])
    (run / "run.json").write_text(json.dumps({"traceEvents": [], "schema": 1}))
    (run / "threads" / "key_averages.json").write_text("[]")
    (run / "settings.json").write_text(json.dumps({"a": 1}))
    (run / "notes.txt").write_text("x")
    (run / ".ipynb_checkpoints").mkdir()
    write_trace(run / ".ipynb_checkpoints" / "w0.1.pt.trace.json", [])
    found = find_traces(tmp_path)
    assert found == sorted([run / "other_trace.json", run / "streams" / "w0.9.pt.trace.json.gz",
                            run / "threads" / "w0.123.pt.trace.json"])
    assert find_traces(run / "other_trace.json") == [run / "other_trace.json"]


def test_find_traces_errors(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{}")
    with pytest.raises(TraceError, match="no trace files"):
        find_traces(tmp_path)
    with pytest.raises(TraceError, match="no such file"):
        find_traces(tmp_path / "missing")


def test_find_traces_on_the_test_data() -> None:
    # two_ranks/ included, and pftrace/'s Perfetto-native traces
    assert find_traces(DATA) == sorted([*DATA.rglob("*.json.gz"), *DATA.rglob("*.pftrace")])


def test_loading_never_imports_torch() -> None:
    code = (
        "import sys\n"
        "from profiler_kit.trace.loader import load\n"
        f"t = load({str(DATA / 'a100_alexnet.json.gz')!r})\n"
        "assert len(t) > 0\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


SHAPES = ["h100_bert_small.json.gz", "mi300_normalization_layers.json.gz"]


@pytest.mark.parametrize("name", SHAPES)
@pytest.mark.parametrize("chunk_bytes", [None, 1 << 14])
def test_recorded_shapes_are_kept_per_op(name: str, chunk_bytes: int | None) -> None:
    """Every cpu_op with "Input Dims" keeps its four shape args, as ``json`` reads them,
    but the ops that only make views or allocate (no data moves)."""
    path = DATA / name
    ops = [e for e in raw_doc(path)["traceEvents"]
           if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    expected = Counter()
    for e in ops:
        a = e.get("args", {})
        if "Input Dims" in a and e["name"] not in SHAPES_NOT_KEPT:
            expected[(e["name"], exact_ns(e["ts"]), json.dumps(
                [a.get(k, []) for k in ("Input Dims", "Input type", "Input Strides",
                                        "Concrete Inputs")]))] += 1
    for table in (load(path, chunk_bytes=chunk_bytes), load_simple(path)):
        got = Counter()
        for row in table.inputs:
            i = table.op_inputs(row)
            assert table.cat[row] == Cat.CPU_OP
            got[(table.name_of(row), int(table.ts_ns[row]),
                 json.dumps([i.dims, i.types, i.strides, i.concrete]))] += 1
        assert got == expected
        assert sum(expected.values()) > 100
        assert not any(name in SHAPES_NOT_KEPT for name, _ts, _i in got)


def test_stream_wait_events_keep_the_stream_and_the_record_they_wait_on() -> None:
    """Against the JSON: every cuda_sync event with both args, by start and correlation."""
    path = DATA / "a100_alexnet.json.gz"
    doc = raw_doc(path)
    expected = Counter(
        (int(Decimal(str(e["ts"])) * 1000), e["args"]["correlation"],
         (e["args"]["wait_on_stream"], e["args"]["wait_on_cuda_event_record_corr_id"]))
        for e in doc["traceEvents"]
        if e.get("cat") == "cuda_sync" and e["args"].get("wait_on_stream", -1) >= 0
        and e["args"].get("wait_on_cuda_event_record_corr_id", -1) >= 0)
    assert len(expected) == 20
    for table in (load(path), load_simple(path)):
        assert Counter((int(table.ts_ns[r]), int(table.correlation[r]), w)
                       for r, w in table.event_waits.items()) == expected
        assert {table.name_of(r) for r in table.event_waits} == {"Stream Wait Event"}


def test_traces_without_shapes_keep_no_inputs() -> None:
    table = load(DATA / "a100_alexnet.json.gz")
    assert table.inputs == {} and table.op_inputs(0) is None


def test_input_types_repeated_and_odd_intern_as_the_per_event_path(tmp_path: Path) -> None:
    """The fast path joins each distinct ``Input type`` list once; repeated lists, one
    with an unhashable item and one that is no list give the per-event path's column."""
    types = [["float", "float"], ["float", "float"], ["float", ["nested"]], "not a list",
             ["float", ["nested"]], [], ["int", None]]
    events = [ev(cat="cpu_op", name="aten::add", ts=10 * i, args={"Input type": t})
              for i, t in enumerate(types)]
    fast, simple = (load(write_trace(tmp_path / "t.json", events)),
                    load_simple(tmp_path / "t.json"))
    names = [[f.names[i] if i >= 0 else None for i in f.input_type.tolist()]
             for f in (fast, simple)]
    assert names[0] == names[1]
    assert names[0][0] == names[0][1] and names[0][2] == names[0][4]
    assert names[0][3] is None


def test_odd_shape_args_decode_to_empty_lists(tmp_path: Path) -> None:
    events = [ev(cat="cpu_op", name="aten::mm", args={"Input Dims": [[2, 3], [3, 4]],
                                                      "Input type": "not a list"}),
              ev(cat="cpu_op", name="aten::add", ts=20, args={"Input Dims": None}),
              ev(cat="kernel", name="k", ts=30, args={"Input Dims": [[1]]})]
    for table in (load(write_trace(tmp_path / "t.json", events)),
                  load_simple(tmp_path / "t.json")):
        assert len(table.inputs) == 2  # the kernel's args are not an op's
        first, second = sorted(table.inputs)
        assert table.op_inputs(first).dims == [[2, 3], [3, 4]]
        assert table.op_inputs(first).types == [] and table.op_inputs(first).concrete == []
        assert table.op_inputs(second).dims == []
