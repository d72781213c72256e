"""A trace loaded ahead (its later part in a forked child while the command imports)
gives the same table as one pass, and anything that goes wrong falls back to one pass."""

from __future__ import annotations

import gzip
import json
import os
import signal
from pathlib import Path

import pytest
from test_trace_loader import DATA, assert_same, ev

from profiler_kit.errors import TraceError
from profiler_kit.trace import load_ahead
from profiler_kit.trace.loader import load, load_simple

DDP = DATA / "a100_ddp_nccl_rank0.json.gz"  # 9.8 MB of JSON: over MIN_BYTES


@pytest.fixture(autouse=True)
def may_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fork as the console does on a quiet machine: a test worker runs a thread of its
    own, which the console command has not (the child only decodes JSON, it takes no
    lock), and the other test workers keep the cores busy."""
    monkeypatch.setattr(load_ahead, "may_fork", lambda: True)
    monkeypatch.setattr(load_ahead, "idle_cores", lambda: 1)


def started(path: Path) -> load_ahead.Pending:
    pending = load_ahead.prefetch([str(path)], None)
    assert pending is not None and pending.child is not None
    return pending


def assert_reaped(pending: load_ahead.Pending, child: load_ahead._Child) -> None:
    assert pending.child is None  # taken or closed: nothing left to take
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, os.WNOHANG)


def test_a_real_trace_loaded_ahead_is_the_one_pass_table() -> None:
    pending = started(DDP)
    child = pending.child
    size = load_ahead.content_size(DDP)
    assert size / 10 <= child.stop < size / 2  # the parent's part is the smaller
    assert pending.take(DATA / "a100_alexnet.json.gz") is None  # another file: not this
    table = pending.take(DDP)  # what ``load`` returns when it is not None
    assert table is not None  # joined from the two parts, not loaded in one pass
    assert_reaped(pending, child)
    assert pending.take(DDP) is None  # taken once
    whole = load(DDP, jobs=1)
    assert_same(table, whole)
    assert table.meta == whole.meta
    assert table.skipped == whole.skipped and table.normalized == whole.normalized


def tricky_trace(tmp_path: Path) -> Path:
    """Event names full of ``}, {``: the cut falls inside a name (37 events of 16 kB: no
    event ends near a tenth, a third or a half), so the first candidate boundary after it
    lies inside a string and the parts cannot join."""
    tricky = "x" + "}, {" * 4000
    path = tmp_path / "tricky.json"
    path.write_text(json.dumps({"traceEvents": [ev(name=f"{tricky}{i}", ts=10 * i, dur=3)
                                                for i in range(37)]}))
    return path


def test_a_cut_inside_a_string_falls_back_to_one_pass(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load_ahead, "MIN_BYTES", 0)
    path = tricky_trace(tmp_path)
    pending = started(path)
    child = pending.child
    assert pending.take(path) is None  # the parts did not join: one pass decides
    assert_reaped(pending, child)
    table = load(path)
    assert_same(table, load_simple(path))
    assert len(table) == 37


def test_a_child_killed_costs_only_the_time() -> None:
    pending = started(DDP)
    child = pending.child
    os.kill(child.pid, signal.SIGKILL)
    table = load(DDP, ahead=pending)
    assert_reaped(pending, child)
    assert_same(table, load(DDP, jobs=1))


def test_broken_json_gives_the_one_pass_error(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load_ahead, "MIN_BYTES", 0)
    text = json.dumps({"traceEvents": [ev(ts=i, dur=1) for i in range(3000)]})
    for where in (len(text) // 10, len(text) * 3 // 4):  # in the parent's part, the child's
        cut = text.index("}, {", where)  # between two events: never inside a string
        path = tmp_path / f"broken{where}.json"
        path.write_text(text[:cut] + "@@" + text[cut + 2:])
        assert_the_one_pass_error(path)


def assert_the_one_pass_error(path: Path) -> None:
    """Loaded ahead, ``path`` fails with the error that one pass gives."""
    with pytest.raises(TraceError) as one_pass:
        load(path, jobs=1)
    pending = started(path)
    child = pending.child
    with pytest.raises(TraceError) as ahead:
        load(path, ahead=pending)
    assert_reaped(pending, child)
    assert str(ahead.value) == str(one_pass.value)


def test_a_truncated_gzip_gives_the_one_pass_error(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load_ahead, "MIN_BYTES", 0)
    monkeypatch.setattr(load_ahead, "content_size", lambda p: 9_000_000)
    path = tmp_path / "cut.json.gz"
    data = DDP.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    assert_the_one_pass_error(path)


@pytest.mark.parametrize("change", ["other events", "same size and time"])
def test_a_file_changed_since_the_start_is_read_again(change: str, tmp_path: Path) -> None:
    """Replaced or rewritten after the child began, the file is loaded again, here; even
    rewritten to the same size with its modification time put back (``cp -p``)."""
    path = tmp_path / "t.json.gz"
    original = DDP.read_bytes()
    path.write_bytes(original)
    pending = started(path)
    child = pending.child
    if change == "other events":
        events = [ev(ts=i, dur=1) for i in range(5)]
        path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    else:
        st = path.stat()
        path.write_bytes(original)  # a write of the same size (here the same bytes)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert pending.take(path) is None
    assert_reaped(pending, child)


def test_leaving_stops_a_child_whose_part_was_not_taken() -> None:
    with pytest.raises(KeyError), load_ahead.loading_ahead([str(DDP)], None) as pending:
        child = pending.child
        raise KeyError("the command stopped before it loaded the trace")
    assert_reaped(pending, child)


@pytest.mark.parametrize("case", ["two paths", "one process", "folder", "small", "not a trace",
                                  "no idle core"])
def test_not_started_where_it_does_not_pay(case: str, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    small = DATA / "a100_alexnet.json.gz"
    other = tmp_path / "notes.json"
    other.write_text("{}")
    if case == "no idle core":
        monkeypatch.setattr(load_ahead, "idle_cores", lambda: 0)
    paths, jobs = {"two paths": ([DDP, DDP], None), "one process": ([DDP], 1),
                   "folder": ([DATA / "two_ranks"], None), "small": ([small], None),
                   "not a trace": ([other], None), "no idle core": ([DDP], None)}[case]
    assert load_ahead.prefetch([str(p) for p in paths], jobs) is None


@pytest.mark.parametrize(("loadavg", "idle"), [("0.90 0.80 1.20 1/77 12365", 1),
                                               ("1.90 1.80 1.20 2/77 12365", 0),
                                               ("3.90 2.80 1.20 4/80 12418", 0),
                                               ("not a load average", 0)])
def test_idle_cores_counts_the_tasks_running_now(loadavg: str, idle: int, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Two cores: this process alone running leaves one idle; any other task, none."""
    from profiler_kit.trace import forking

    monkeypatch.setattr(forking, "cores", lambda: 2)
    source = tmp_path / "loadavg"
    source.write_text(loadavg + "\n")
    assert forking.idle_cores(str(source)) == idle
    assert forking.idle_cores(str(tmp_path / "missing")) == 0


def test_a_fork_refused_loads_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """No process left to fork (EAGAIN): not begun, the pipe closed, loaded here."""
    def refuse() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    fds = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(load_ahead.os, "fork", refuse)
    assert load_ahead.prefetch([str(DDP)], None) is None
    assert len(os.listdir("/proc/self/fd")) == fds
    assert len(load(DDP)) > 0
