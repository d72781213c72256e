"""Ranks' signs of life through a real c10d store (torch's HashStore): a rank whose
counter stops is named once it has been silent for the timeout; a rank that beats is
never taken for gone, and a failure while every peer beats is not called a drop-out.
A rank's own heartbeat through a real TCPStore behind a proxy: a store that stops
answering (a link down: c10d's own timeouts do not end that wait) is lost after the
timeout, one whose connections are reset (its host's processes killed) at once, and
neither is told while the heartbeat is not armed."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from datetime import timedelta

import pytest

dist = pytest.importorskip("torch.distributed")

from beating import beat_until, timed  # noqa: E402

from profiler_kit.measure.distributed import liveness  # noqa: E402


def test_a_silent_rank_is_named_once_the_timeout_passed() -> None:
    store = dist.HashStore()
    store.add(liveness._PREFIX + "1", 1)  # rank 1 beat once, then its host went
    stop = threading.Event()
    beat_until(store, 2, stop)
    gone, waited = timed(
        lambda: liveness.wait_for_silence(store, [1, 2], after_s=0.5, poll_s=0.05), stop)
    assert gone == [1]
    assert 0.5 <= waited < 0.5 + 2 * liveness.BEAT_S + 1
    assert liveness.name_lost(gone, ("host-a", "host-b", "host-a")) == "host-b (rank 1)"


def test_peers_that_all_beat_are_no_drop_out() -> None:
    store = dist.HashStore()
    stop = threading.Event()
    for r in (1, 2):
        beat_until(store, r, stop)
    gone, waited = timed(
        lambda: liveness.wait_for_silence(store, [1, 2], after_s=5.0, poll_s=0.05), stop)
    assert gone == [] and waited < 2.0  # answered as soon as each had beaten


def test_rank_0_knows_how_long_a_peer_has_been_silent_when_it_asks() -> None:
    """Rank 0's heartbeat reads its peers' counters all along: a peer silent for longer
    than the timeout is named at the first question, without a further wait."""
    store = dist.HashStore()
    store.add(liveness._PREFIX + "1", 1)
    beat = liveness.Heartbeat(store, 0, 5.0, lambda why: None, peers=[1])
    try:
        time.sleep(1.5 + 2 * liveness.BEAT_S)
        assert beat.peers is not None
        assert beat.peers.silent([1], 1.5) == [1]
    finally:
        beat.close()


class _Proxy:
    """A TCP proxy in front of a store: it forwards, swallows (no answer ever comes, as
    over a link that went down) or resets every connection (its host gone)."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.answering = True
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, a: socket.socket, b: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := a.recv(65536):
                if self.answering:
                    b.sendall(data)

    def reset(self) -> None:
        """Every connection ended, as by the kernel of a host whose processes were killed
        (shut down first: a socket closed while another thread reads it stays open)."""
        self._listener.close()
        for s in self._sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()


@pytest.fixture
def proxied():
    """A TCPStore server, a proxy before it, and a client store through the proxy."""
    server = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=2))
    proxy = _Proxy(server.port)
    client = dist.TCPStore("127.0.0.1", proxy.port, is_master=False,
                           timeout=timedelta(seconds=2))
    yield proxy, client
    proxy.reset()  # frees the beats still waiting for an answer


def _heartbeat(client, timeout_s: float):
    told: list[tuple[float, str]] = []
    beat = liveness.Heartbeat(client, 1, timeout_s,
                              lambda why: told.append((time.monotonic(), why)))
    return beat, told


def test_a_store_that_stops_answering_is_lost_after_the_timeout(proxied) -> None:
    proxy, client = proxied
    beat, told = _heartbeat(client, 1.0)
    beat.arm()
    time.sleep(1.5)
    assert told == [] and liveness.unreachable(client) is None
    proxy.answering = False
    silent = time.monotonic()
    deadline = silent + 1.0 + liveness.BEAT_S + 2
    while not told and time.monotonic() < deadline:
        time.sleep(0.05)
    beat.stop()
    assert told, "never told"
    when, why = told[0]
    assert 1.0 <= when - silent < 1.0 + liveness.BEAT_S + 1
    assert why == "no answer for 1 s (--rank-timeout)"


def test_a_store_whose_connections_are_reset_is_lost_at_once(proxied) -> None:
    """Not at the next beat: torchrun's agent, whose store calls fail too, would end the
    rank without a word by then."""
    proxy, client = proxied
    beat, told = _heartbeat(client, 30.0)
    beat.arm()
    time.sleep(0.5)
    proxy.reset()
    gone = time.monotonic()
    while not told and time.monotonic() < gone + liveness.BEAT_S + 2:
        time.sleep(0.01)
    beat.stop()
    assert told and told[0][0] - gone < 0.3
    assert told[0][1] == beat.error and beat.error
    assert liveness.unreachable(client) is not None


def test_a_heartbeat_not_armed_tells_nothing_until_armed(proxied) -> None:
    proxy, client = proxied
    beat, told = _heartbeat(client, 0.5)
    proxy.answering = False
    time.sleep(0.5 + liveness.BEAT_S + 1)
    assert told == []  # between strategies: nothing is waiting on the store
    beat.arm()
    time.sleep(2 * liveness.WATCH_S + 0.2)
    beat.stop()
    assert told and told[0][1] == "no answer for 0.5 s (--rank-timeout)"


def test_close_ends_every_thread(proxied) -> None:
    """Before the interpreter shuts down: a thread coming back from the store's C++ code
    while Python finalizes aborts the process."""
    _proxy, client = proxied
    beat = liveness.Heartbeat(client, 0, 30.0, lambda why: None, peers=[1])
    beat.arm()
    time.sleep(liveness.BEAT_S + 0.2)
    start = time.monotonic()
    beat.close()
    assert time.monotonic() - start < 1.5
    assert not any(t.is_alive() for t in beat._threads)
