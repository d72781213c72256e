"""Ranks' files brought to rank 0 through a real c10d store (torch's HashStore), rank 0
and its peers as threads: files that come are written into rank 0's folder; a peer whose
heartbeat stops before it sends is named with its host as dropped out once silent for
the timeout, without the whole wait for the others; one that beats but never sends is
named as late; either way the measurements stay, only the lost rank's files are gone."""

from __future__ import annotations

import pickle
import threading
import time
import zlib
from pathlib import Path

import pytest

dist = pytest.importorskip("torch.distributed")

from beating import beat_until, timed  # noqa: E402

from profiler_kit.measure import distributed  # noqa: E402
from profiler_kit.measure.distributed import gather, liveness  # noqa: E402
from profiler_kit.measure.passes import Measurement  # noqa: E402

PREFIX = "profkit/1/"
TIMEOUT_S = 1.0


@pytest.fixture(autouse=True)
def _hosts():
    before = distributed.hosts()
    distributed.set_hosts(["host-a", "host-b", "host-b"])
    yield
    distributed.set_hosts(list(before))


def _measurement(folder: Path, rank: int) -> Measurement:
    return Measurement(samples_ns=(1, 2, 3), phase_samples_ns={}, profiled_samples_ns=(),
                       peak_memory={}, trace_files=(str(folder / f"rank{rank}.x.pt.trace.json"),),
                       key_averages_files=(str(folder / f"key_averages.rank{rank}.json"),))


def _send_after(store, rank: int, m: Measurement, delay_s: float) -> None:
    """What rank ``rank`` on another host sends: its files' bytes (not on rank 0's disk)."""
    def send() -> None:
        time.sleep(delay_s)
        payload = [(f, zlib.compress(f"{Path(f).name} of rank {rank}".encode()))
                   for f in (*m.trace_files, *m.key_averages_files)]
        store.set(PREFIX + f"gather/{rank}", pickle.dumps(payload))

    threading.Thread(target=send, daemon=True).start()


def test_a_host_that_drops_out_while_sending_loses_its_traces_not_the_measurement(tmp_path):
    """Rank 1 beat once and went silent before sending; rank 2 beats and sends: rank 0
    writes rank 2's files, names host-b's rank 1 as dropped out after the timeout, and
    keeps every measurement (rank 1's without files)."""
    store = dist.HashStore()
    ranks = [_measurement(tmp_path, r) for r in range(3)]
    for f in ranks[0].trace_files + ranks[0].key_averages_files:
        Path(f).write_text("rank 0's own")
    store.add(liveness._PREFIX + "1", 1)  # its last beat
    stop = threading.Event()
    beat_until(store, 2, stop)
    _send_after(store, 2, ranks[2], 0.3)
    (out, gone), waited = timed(
        lambda: gather.gather_files(store, PREFIX, 0, ranks, TIMEOUT_S, poll_s=0.05), stop)
    assert gone == [1]
    assert TIMEOUT_S <= waited < TIMEOUT_S + 1.0  # silence is the timeout, not the deadline
    assert out[0] == ranks[0]
    assert (tmp_path / "rank2.x.pt.trace.json").read_text() == "rank2.x.pt.trace.json of rank 2"
    assert out[2].trace_files == ranks[2].trace_files and out[2].files_lost == ""
    assert out[1].trace_files == () and out[1].key_averages_files == ()
    assert out[1].samples_ns == ranks[1].samples_ns
    assert out[1].files_lost == (
        "rank 1's traces are not in the run folder: host-b (rank 1) dropped out while "
        f"sending them to rank 0 (no sign of life for {TIMEOUT_S:g} s, --rank-timeout); the "
        "measurement of every rank is kept")
    assert not list(tmp_path.glob("rank1.*")) and not list(tmp_path.glob(".*tmp"))


def test_a_rank_that_beats_but_does_not_send_is_late_not_gone(tmp_path):
    store = dist.HashStore()
    ranks = [_measurement(tmp_path, r) for r in range(2)]
    stop = threading.Event()
    beat_until(store, 1, stop)
    (out, gone), waited = timed(
        lambda: gather.gather_files(store, PREFIX, 0, ranks, TIMEOUT_S, poll_s=0.05), stop)
    assert gone == []
    assert TIMEOUT_S + 2 * liveness.BEAT_S <= waited < TIMEOUT_S + 2 * liveness.BEAT_S + 1
    assert "host-b (rank 1) did not send them to rank 0 within 1 s (--rank-timeout), " \
        "though it still beats" in out[1].files_lost
    assert out[1].trace_files == ()


def test_a_rank_sends_what_rank_0_names(tmp_path):
    """The sending side: rank 1 waits for rank 0's list, sends its own files' bytes."""
    store = dist.HashStore()
    folder_b = tmp_path / "b"  # rank 1's disk
    folder_b.mkdir()
    m1 = _measurement(folder_b, 1)
    for f in m1.trace_files + m1.key_averages_files:
        Path(f).write_text(f"{Path(f).name} on host-b")
    store.set(PREFIX + "gather/missing", "[1]")
    out, gone = gather.gather_files(store, PREFIX, 1, [_measurement(tmp_path, 0), m1],
                                    TIMEOUT_S)
    assert gone == [] and out[1] == m1
    sent = dict(pickle.loads(store.get(PREFIX + "gather/1")))
    assert {k: zlib.decompress(v).decode() for k, v in sent.items()} == {
        f: f"{Path(f).name} on host-b" for f in m1.trace_files + m1.key_averages_files}
