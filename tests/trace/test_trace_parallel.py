"""One trace loaded in parts on several cores gives the same table as one pass."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from test_trace_loader import REAL, assert_same, ev

from profiler_kit.trace.loader import load, load_simple
from profiler_kit.trace.parallel import load_in_parts

SPLITTABLE = [p for p in REAL if len(gzip.decompress(p.read_bytes())) > 100_000]


def in_parts(path: Path, jobs: int, chunk_bytes: int = 4096):
    """The table loaded in ``jobs`` parts whatever its size; None if it fell back."""
    return load_in_parts(path, chunk_bytes, jobs, min_bytes=0)


def load_in_parts_or_one_pass(path: Path, jobs: int, chunk_bytes: int = 4096):
    """What ``load`` gives for a trace above the size limit: in parts, else in one pass."""
    table = in_parts(path, jobs, chunk_bytes)
    return table if table is not None else load(path, chunk_bytes=chunk_bytes, jobs=1)


# three parts on every trace (two joins each), two on the smallest: the join itself is the
# same code, and loading the large traces again in two parts only costs time. Pieces of
# 64 KiB (``load`` reads 4 MB ones): the pieces' own edges are held by the tiny pieces of
# test_trace_loader's small traces, and 4 KiB pieces cost four times the CPU here.
PIECE_BYTES = 64 * 1024
CASES = [(p, 3) for p in SPLITTABLE] + [(min(SPLITTABLE, key=lambda p: p.stat().st_size), 2)]


@pytest.mark.parametrize(("path", "jobs"), CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_parts_join_into_the_same_table(path: Path, jobs: int) -> None:
    table = in_parts(path, jobs, PIECE_BYTES)
    assert table is not None  # done in parts, not by the one-pass fallback
    whole = load(path)
    assert_same(table, whole)
    assert table.meta == whole.meta


def test_plain_json_in_parts(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(gzip.decompress(SPLITTABLE[0].read_bytes()))
    table = in_parts(path, 4, chunk_bytes=64 << 10)
    assert table is not None
    assert_same(table, load_simple(path))


def test_a_split_inside_a_string_falls_back_to_one_pass(tmp_path: Path) -> None:
    """Event names full of ``}, {``: wherever the cut falls, the first candidate after it
    is inside a string, the part before does not end there, and one pass takes over."""
    tricky = "x" + "}, {" * 4000
    events = [ev(name=f"{tricky}{i}", ts=10 * i, dur=3) for i in range(40)]
    path = tmp_path / "tricky.json"
    path.write_text(json.dumps({"traceEvents": events}))
    assert in_parts(path, 2) is None
    table = load_in_parts_or_one_pass(path, 2)
    assert_same(table, load_simple(path))
    assert len(table) == 40


def test_broken_json_in_a_later_part_is_the_one_pass_error(tmp_path: Path) -> None:
    events = [ev(ts=i, dur=1) for i in range(3000)]
    text = json.dumps({"traceEvents": events})
    cut = len(text) * 3 // 4
    path = tmp_path / "broken.json"
    path.write_text(text[:cut] + "@@" + text[cut + 2:])
    from profiler_kit.errors import TraceError

    with pytest.raises(TraceError) as parts_error:
        load_in_parts_or_one_pass(path, 3)
    with pytest.raises(TraceError) as one_pass_error:
        load(path, chunk_bytes=4096, jobs=1)
    assert str(parts_error.value) == str(one_pass_error.value)


def test_a_fork_that_fails_falls_back_to_one_pass_and_leaves_no_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The second worker cannot be forked (too many processes): the first is stopped, and
    the loader reads the file in one pass instead of failing."""
    import multiprocessing
    from multiprocessing.context import ForkProcess

    started = []
    fork = ForkProcess.start

    def start_once(self: ForkProcess) -> None:
        if started:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        started.append(self)
        fork(self)

    monkeypatch.setattr(ForkProcess, "start", start_once)
    path = min(SPLITTABLE, key=lambda p: p.stat().st_size)
    assert in_parts(path, 3) is None
    assert len(started) == 1 and not started[0].is_alive()
    assert multiprocessing.active_children() == []
    assert_same(load(path, jobs=3), load(path, jobs=1))


def test_no_fork_where_the_platform_is_not_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forking is unsafe on macOS: even with parts asked for, one pass reads the file."""
    monkeypatch.setattr("sys.platform", "darwin")
    assert in_parts(min(SPLITTABLE, key=lambda p: p.stat().st_size), 2) is None
