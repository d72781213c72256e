"""Property-based tests of the trace loader (hypothesis).

Events are generated in three kinds whose fate is known by construction: ``valid``
(become rows), ``bad`` (skipped and counted) and ``ignored`` (metadata, flows, plain
instants). Whatever the mix, the loader must not raise, must count every event, and
its fast, per-event and whole-file paths must give the same table.
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trace_loader import DATA, assert_same
from test_trace_parallel import load_in_parts_or_one_pass

from profiler_kit.errors import TraceError
from profiler_kit.trace.loader import load, load_simple

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])  # as conftest.py's

ids = st.integers(-(2**62), 2**62)
names = st.text(min_size=0, max_size=12)
categories = st.sampled_from(["kernel", "Kernel", "cpu_op", "Operator", "gpu_memcpy", "Memset",
                              "cuda_runtime", "user_annotation", "python_function", "Trace",
                              "mystery", "gpu_user_annotation"])


@st.composite
def microseconds(draw: st.DrawFn, top: int) -> tuple[int | float, int]:
    """A JSON µs value and its exact ns: integers, or floats with at most 3 decimals."""
    ns = draw(st.integers(0, top * 1000))
    if draw(st.booleans()) and ns % 1000 == 0:
        return ns // 1000, ns
    return float(Decimal(ns) / 1000), ns


@st.composite
def valid_event(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    ts, _ = draw(microseconds(10**12))
    dur, dur_ns = draw(microseconds(10**9))
    event: dict[str, Any] = {
        "ph": "X", "cat": draw(categories), "name": draw(names),
        "pid": draw(st.one_of(ids, names)), "tid": draw(st.one_of(ids, names)),
        "ts": ts, "dur": dur,
    }
    args = draw(st.one_of(
        st.none(),
        st.lists(st.integers(), max_size=2),  # not an object: kept, args ignored
        st.fixed_dictionaries({}, optional={
            "correlation": st.one_of(ids, st.text(max_size=3)),
            "External id": ids, "external id": ids,
            "device": st.one_of(ids, st.integers(0, 8)), "stream": st.one_of(ids, names),
            "grid": st.lists(st.integers(0, 9), max_size=3), "name": names,
        }),
    ))
    if args is not None:
        event["args"] = args
    if draw(st.booleans()):
        del event["cat"]
    return event, dur_ns


bad_event = st.one_of(
    st.builds(lambda: {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5}),  # no dur
    st.builds(lambda d: {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 5, "dur": d},
              st.integers(max_value=-1)),
    st.builds(lambda t: {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": t, "dur": 1},
              st.one_of(st.text(max_size=3), st.booleans(), st.none())),
    st.builds(lambda p: {"ph": "X", "name": "a", "pid": p, "tid": 1, "ts": 5, "dur": 1},
              st.one_of(st.integers(min_value=2**63), st.floats(allow_nan=False,
                                                               allow_infinity=False))),
    st.builds(lambda t: {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": t, "dur": 1},
              st.integers(min_value=2**63)),
    st.builds(lambda n: {"ph": "X", "name": n, "pid": 1, "tid": 1, "ts": 5, "dur": 1},
              st.one_of(st.none(), st.integers())),
    st.builds(lambda ph: {"ph": ph, "name": "a", "pid": 1, "tid": 1, "ts": 5},
              st.sampled_from(["B", "E", "C", "b", "e"])),
    st.builds(lambda: {"name": "no phase", "ts": 1}),
    st.one_of(st.integers(), st.text(max_size=4), st.lists(st.integers(), max_size=2)),
    st.builds(lambda: {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 3,
                       "args": {"Total Allocated": 5}}),
)

ignored_event = st.one_of(
    st.builds(lambda i: {"ph": "s", "id": i, "pid": 1, "tid": 1, "ts": 4, "cat": "ac2g",
                         "name": "ac2g"}, ids),
    st.builds(lambda i: {"ph": "f", "id": i, "pid": 1, "tid": 1, "ts": 4, "cat": "ac2g",
                         "name": "ac2g", "bp": "e"}, ids),
    st.builds(lambda n, p: {"ph": "M", "name": "process_name", "pid": p, "tid": 0,
                            "args": {"name": n}}, names, ids),
    st.builds(lambda n: {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2,
                         "args": {"name": n}}, names),
    st.builds(lambda: {"ph": "i", "s": "g", "name": "Iteration Start", "pid": "Traces",
                       "tid": "x", "ts": 1}),
)


@st.composite
def memory_event(draw: st.DrawFn) -> dict[str, Any]:
    ts, _ = draw(microseconds(10**12))
    return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1,
            "tid": draw(ids), "ts": ts,
            "args": {"Bytes": draw(ids), "Total Allocated": draw(st.integers(0, 2**40)),
                     "Total Reserved": draw(st.integers(0, 2**40)),
                     "Device Type": draw(st.sampled_from([0, 1])),
                     "Device Id": draw(st.integers(-1, 7))}}


@st.composite
def trace(draw: st.DrawFn) -> tuple[list[Any], int, int, int, int]:
    """Events in random order, with the numbers of valid, bad and memory events and
    the total duration of the valid ones."""
    valid = draw(st.lists(valid_event(), max_size=40))
    bad = draw(st.lists(bad_event, max_size=10))
    ignored = draw(st.lists(ignored_event, max_size=10))
    memory = draw(st.lists(memory_event(), max_size=5))
    events = [e for e, _ in valid] + bad + ignored + memory
    order = draw(st.permutations(range(len(events))))
    total = sum(d for _, d in valid)
    return [events[i] for i in order], len(valid), len(bad), len(memory), total


def write(path: Path, events: list[Any], indent: int | None) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=indent))
    return path


@SETTINGS
@given(trace(), st.integers(1, 4000), st.sampled_from([None, 1]))
def test_every_event_is_a_row_skipped_or_ignored(tmp_path: Path, generated, chunk_bytes: int,
                                                 indent: int | None) -> None:
    events, n_valid, n_bad, n_memory, total_dur_ns = generated
    path = write(tmp_path / "t.json", events, indent)
    table = load(path, chunk_bytes=chunk_bytes)
    assert len(table) == n_valid
    assert len(table.memory) == n_memory
    assert sum(table.skipped.values()) == n_bad
    assert int(table.dur_ns.sum()) == total_dur_ns
    assert_same(table, load(path, lenient=True))
    assert_same(table, load_simple(path))
    assert_same(table, load(path))  # decoded whole, or piecewise when anything is odd
    assert_same(table, load_in_parts_or_one_pass(path, 3, chunk_bytes))


@SETTINGS
@given(trace(), st.lists(st.integers(1, 3000), min_size=2, max_size=2))
def test_piece_size_never_changes_the_table(tmp_path: Path, generated,
                                            sizes: list[int]) -> None:
    path = write(tmp_path / "t.json", generated[0], None)
    a, b = (load(path, chunk_bytes=n) for n in sizes)
    assert_same(a, b)


def _small_trace_bytes() -> bytes:
    return gzip.decompress((DATA / "a100_triton_kernel.json.gz").read_bytes())


SMALL = _small_trace_bytes()
LAST = len(SMALL.rstrip())  # cutting only trailing whitespace leaves a valid file


@SETTINGS
@given(st.integers(0, LAST - 1), st.integers(64, 5000))
def test_truncated_trace_is_a_trace_error(tmp_path: Path, cut: int, chunk_bytes: int) -> None:
    path = tmp_path / "cut.json"
    path.write_bytes(SMALL[:cut])
    for pieces in (chunk_bytes, None):
        with pytest.raises(TraceError) as info:
            load(path, chunk_bytes=pieces)
        assert str(info.value).startswith(f"{path}: ")


@SETTINGS
@given(st.integers(0, 10**6))
def test_truncated_gzip_is_a_trace_error(tmp_path: Path, seed: int) -> None:
    packed = (DATA / "a100_triton_kernel.json.gz").read_bytes()
    cut = seed % (len(packed) - 1)
    path = tmp_path / "cut.json.gz"
    path.write_bytes(packed[:cut])
    with pytest.raises(TraceError):
        load(path)


@settings(SETTINGS, max_examples=25)
@given(st.integers(0, LAST - 1), st.binary(min_size=1, max_size=3), st.integers(64, 5000))
def test_corrupted_bytes_load_or_raise_trace_error(tmp_path: Path, at: int, junk: bytes,
                                                   chunk_bytes: int) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(SMALL[:at] + junk + SMALL[at + len(junk):])
    loaders = (partial(load, path, chunk_bytes=chunk_bytes), partial(load, path),
               partial(load_in_parts_or_one_pass, path, 2, chunk_bytes))
    for loader in loaders:
        try:
            table = loader()
        except TraceError as e:
            assert "\n" not in str(e)
            with pytest.raises(TraceError):
                load_simple(path)
        else:
            assert_same(table, load_simple(path))


def test_a_byte_that_is_not_utf8_in_a_name_loads_as_a_question_mark(tmp_path: Path) -> None:
    """A name with one byte that is not UTF-8, in the middle of the event list: every
    loader reads it as ``?`` (one byte for one, so the piece reader's offsets into the
    file still hold), whole, in pieces or in parts."""
    at = SMALL.index(b'"ProfilerStep#1"') + 1
    path = tmp_path / "bad.json"
    path.write_bytes(SMALL[:at] + b"\x80" + SMALL[at + 1:])
    table = load_simple(path)
    assert "?rofilerStep#1" in table.names
    for loader in (partial(load, path), partial(load, path, chunk_bytes=64),
                   partial(load_in_parts_or_one_pass, path, 2, 64)):
        assert_same(loader(), table)
