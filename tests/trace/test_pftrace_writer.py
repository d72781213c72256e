"""Chrome events written as a ``.pftrace`` and read back: each complete event once, with
its times, names, args; slices that overlap without nesting kept on a second lane."""

from __future__ import annotations

from pathlib import Path

from profiler_kit.trace.loader import load
from profiler_kit.trace.pftrace import read_pftrace
from profiler_kit.trace.pftrace_writer import _lanes, to_pftrace


def _x(name, ts, dur, tid=1, cat="cpu_op", **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


EVENTS = [
    {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "python"}},
    {"ph": "M", "name": "thread_name", "pid": 7, "tid": 1, "args": {"name": "main"}},
    _x("step", 0, 100, cat="user_annotation"),
    _x("aten::mm", 10, 20, **{"External id": 3, "Input Dims": [[2, 3], [3, 4]]}),
    _x("aten::add", 25, 30),  # overlaps aten::mm's end without nesting in it
    _x("kernel", 40.5, 10.25, tid=9, cat="kernel", device=0, stream=9, correlation=5),
    {"ph": "C", "name": "Power (W)", "pid": "GPU 0 Counters", "ts": 40, "args": {"": 300.0}},
]


def test_events_come_back_as_they_went(tmp_path: Path) -> None:
    path = tmp_path / "t.pftrace"
    path.write_bytes(to_pftrace(EVENTS))
    _, back = read_pftrace(path)
    slices = sorted((e["name"], e["ts"], e["dur"], e["cat"], e["tid"]) for e in back
                    if e["ph"] == "X")
    assert slices == sorted((e["name"], e["ts"], e["dur"], e["cat"], e["tid"])
                            for e in EVENTS if e["ph"] == "X")
    mm = next(e for e in back if e.get("name") == "aten::mm")
    assert mm["args"] == {"External id": 3, "Input Dims": [[2, 3], [3, 4]]}
    (power,) = [e for e in back if e["ph"] == "C"]
    assert (power["name"], power["pid"], power["ts"], power["args"]) == \
        ("Power (W)", "GPU 0 Counters", 40, {"": 300.0})
    table = load(path)
    assert sorted(table.names[i] for i in table.name) == ["aten::add", "aten::mm", "kernel",
                                                         "step"]
    assert table.thread_names[(7, 1)] == "main"


def test_a_slice_overlapping_without_nesting_gets_a_second_lane() -> None:
    rows = [(0, 100, "step", "", {}), (10, 30, "mm", "", {}), (25, 55, "add", "", {}),
            (30, 40, "inner", "", {})]
    lanes = _lanes(rows)
    assert [[r[2] for r in lane] for lane in lanes] == [["step", "mm", "inner"], ["add"]]


def test_the_file_is_the_same_each_time() -> None:
    assert to_pftrace(EVENTS) == to_pftrace(EVENTS)


def test_times_below_zero_and_negative_ids_come_back(tmp_path: Path) -> None:
    """A rank whose clock was shifted back has times below 0, which Perfetto's unsigned
    timestamps cannot hold: they are written shifted up, the clock snapshot saying by how
    much; Kineto's negative thread ids fit Perfetto's int32 as they are."""
    events = [_x("early", -125.5, 10, tid=-549452224), _x("late", 3, 2)]
    path = tmp_path / "shifted.pftrace"
    path.write_bytes(to_pftrace(events))
    _, back = read_pftrace(path)
    assert sorted((e["name"], e["ts"], e["dur"], e["tid"]) for e in back if e["ph"] == "X") \
        == [("early", -125.5, 10, -549452224), ("late", 3, 2, 1)]


def test_a_flow_binds_to_the_slice_it_falls_in(tmp_path: Path) -> None:
    """A flow's end 1 ns before its call ends (as profkit merge writes the collectives'
    arrows) binds to that call, as a viewer binds a JSON flow."""
    from profiler_kit.trace.pftrace import schema

    events = [_x("send", 0, 10), _x("recv", 0, 20, tid=2),
              {"ph": "s", "id": 7, "pid": 7, "tid": 1, "ts": 9.999, "cat": "c", "name": "c"},
              {"ph": "f", "id": 7, "pid": 7, "tid": 2, "ts": 19.999, "bp": "e", "cat": "c",
               "name": "c"}]
    trace = schema().Trace()
    import gzip

    trace.ParseFromString(gzip.decompress(to_pftrace(events)))
    begins = {p.track_event.name: p.track_event for p in trace.packet
              if p.HasField("track_event") and p.track_event.type == 1}
    assert list(begins["send"].flow_ids) == list(begins["recv"].terminating_flow_ids) == [1]
