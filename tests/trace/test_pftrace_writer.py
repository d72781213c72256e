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
