"""Under torchrun: each rank's sign of life through the process group's c10d store.

A rank whose host drops out (its processes killed, its link down) and a rank that hangs
both stop making progress; only the first also stops beating. Every rank adds to a
counter of its own every :data:`BEAT_S` from a thread of its own, on a connection of its
own (the main thread may block in a store wait or a collective). Rank 0 reads the
counters while it waits for results: a rank whose counter has not moved for
``--rank-timeout`` seconds is gone, and is named with its host.

The same beats tell a rank that *it* has lost the store's host (rank 0's, under
torchrun): a store operation on a dead connection raises (the host's processes are gone
and its kernel reset the connection), or, when the link is down or the host powered
off, waits for an answer until the kernel gives the connection up (``tcp_retries2``,
about 15 minutes by default): c10d's store timeouts do not bound that wait, nor can the
thread in it be interrupted. So a thread of its own watches the beats: a beat that
raised, or that has waited ``--rank-timeout`` seconds for its answer, means the store's
host is lost (told, while :class:`Heartbeat` is armed, to ``on_lost``); a connection
that waits on the store all along sees a reset the moment it comes.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any

BEAT_S = 1.0
_PREFIX = "profkit/alive/"


WATCH_S = 0.2  # how often the watch looks at the beats


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


class Heartbeat:
    """This rank's counter, beaten every :data:`BEAT_S` from a thread of its own on a
    connection of its own (the main thread may block in a store wait or a collective),
    and a watch over the store's connection. While armed, ``on_lost(why)`` is called
    once a beat has waited ``timeout_s`` for the store's answer, or at once when a
    connection to the store raised (``why``: its error; one connection waits on the
    store all along, so a reset is seen the moment it comes). Time this process spent
    frozen (another thread holding the GIL) is not counted as waiting: the watch counts
    its own ticks, each at most two :data:`WATCH_S` long.

    With ``peers`` (rank 0), the beating thread also reads their counters after each
    beat (:attr:`peers`): how long each has been silent is known the moment rank 0 asks
    (after a collective of its own timed out, say), not only from then on.

    :meth:`close` ends the threads before the interpreter does: a thread that comes
    back from the store's C++ code while Python shuts down takes the process with it
    (``terminate called without an active exception``)."""

    def __init__(self, store: Any, rank: int, timeout_s: float,
                 on_lost: Callable[[str], object], peers: Sequence[int] = ()) -> None:
        self._own = store.clone()
        self._key = _PREFIX + str(rank)
        self._hold_key = f"{_PREFIX}hold/{rank}"  # set by close() alone
        self._timeout_s = timeout_s
        self._on_lost = on_lost
        self._stop = threading.Event()
        self._armed = threading.Event()
        self._started = 0  # beats started
        self._pending = False  # the last one started waits for its answer
        self.error: str | None = None  # why the store could not be reached
        self.peers: Pulse | None = Pulse(self._own) if peers else None
        self._peers = list(peers)
        self._own.add(self._key, 1)
        self._link = store.clone()
        self._threads = [threading.Thread(target=target, name=name, daemon=True)
                         for target, name in ((self._beat, "profkit-heartbeat"),
                                              (self._watch, "profkit-store-watch"),
                                              (self._hold, "profkit-store-link"))]
        for thread in self._threads:
            thread.start()

    def arm(self) -> None:
        self._armed.set()

    def disarm(self) -> None:
        self._armed.clear()

    def stop(self) -> None:
        self._stop.set()

    def close(self, timeout_s: float = 2.0) -> None:
        """Disarm, stop and join the threads (those that return within ``timeout_s``: one
        waiting on a store that went silent never returns, and stays harmless)."""
        self.disarm()
        self.stop()
        release = threading.Thread(target=self._release, name="profkit-store-release",
                                   daemon=True)  # on a dead link the set waits too: not here
        release.start()
        deadline = time.monotonic() + timeout_s
        for thread in (release, *self._threads):
            thread.join(max(deadline - time.monotonic(), 0.0))

    def _release(self) -> None:
        with contextlib.suppress(Exception):
            self._own.set(self._hold_key, "1")

    def _failed(self, exc: BaseException) -> None:
        """The store's connection raised: lost (told now when armed, else once armed)."""
        if self.error is None:
            self.error = _one_line(exc)
        if self._armed.is_set():
            self._on_lost(self.error)

    def _beat(self) -> None:
        while not self._stop.wait(BEAT_S):
            self._started += 1
            self._pending = True
            try:
                self._own.add(self._key, 1)
            except Exception as exc:  # the connection is gone: nothing left to tell
                self._pending = False
                self._failed(exc)
                return
            self._pending = False
            if self.peers is not None:
                self.peers.silent(self._peers, float("inf"))

    def _hold(self) -> None:
        """Wait, on a connection of its own, for a key only :meth:`close` sets: when the
        store's host goes away its kernel resets the connection and the wait ends at
        once, before the next beat (and before torchrun's agent, whose store calls fail
        too, ends this process). A wait that ends at its timeout is only waited again."""
        wait_s = 24 * 3600.0
        while not self._stop.is_set():
            start = time.monotonic()
            try:
                self._link.wait([self._hold_key], timedelta(seconds=wait_s))
            except Exception as exc:
                if time.monotonic() - start < wait_s - 1 and not self._stop.is_set():
                    self._failed(exc)
                    return

    def _watch(self) -> None:
        waited, beat, last = 0.0, -1, time.monotonic()
        while not self._stop.wait(WATCH_S):
            now = time.monotonic()
            tick, last = min(now - last, 2 * WATCH_S), now
            if not self._pending:
                waited = 0.0
            elif self._started != beat:
                waited, beat = 0.0, self._started
            else:
                waited += tick
            if not self._armed.is_set():
                continue
            if self.error is not None:
                self._on_lost(self.error)
            elif waited > self._timeout_s:
                self._on_lost(f"no answer for {self._timeout_s:g} s (--rank-timeout)")


def unreachable(store: Any) -> str | None:
    """Why ``store`` cannot be reached (its connection raised), None when it answers.
    On a connection to a host that went silent this waits: a :class:`Heartbeat` armed
    meanwhile ends that wait."""
    try:
        store.add(_PREFIX + "probe", 0)
    except Exception as exc:
        return _one_line(exc)
    return None


class Pulse:
    """Rank 0's watch over its peers' counters: which ranks went silent, for how long."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._seen: dict[int, tuple[int, float]] = {}  # rank -> (count, when it last moved)
        self._first: dict[int, int] = {}  # rank -> the count first read

    def moved(self, rank: int) -> bool:
        """Whether ``rank``'s counter moved since it was first read here."""
        return self._first.get(rank) is not None and self._seen[rank][0] != self._first[rank]

    def silent(self, ranks: Sequence[int], after_s: float) -> list[int]:
        """The ranks among ``ranks`` whose counter has not moved for ``after_s`` seconds."""
        now = time.monotonic()
        gone = []
        for r in ranks:
            count = -1
            with contextlib.suppress(Exception):
                count = int(self._store.add(_PREFIX + str(r), 0))
            last = self._seen.get(r)
            self._first.setdefault(r, count)
            if last is None or count != last[0]:
                self._seen[r] = (count, now)
            elif now - last[1] > after_s:
                gone.append(r)
        return gone


def name_lost(ranks: Sequence[int], hosts: Sequence[str]) -> str:
    """``host-b (rank 1)``; ``host-b (ranks 2, 3), host-c (rank 4)``; ranks alone when the
    hosts are not known."""
    by_host: dict[str, list[int]] = {}
    for r in ranks:
        by_host.setdefault(hosts[r] if r < len(hosts) else "", []).append(r)
    parts = []
    for host, rs in by_host.items():
        which = ("rank " if len(rs) == 1 else "ranks ") + ", ".join(map(str, rs))
        parts.append(f"{host} ({which})" if host else which)
    return ", ".join(parts)


def wait_for_silence(store: Any, ranks: Sequence[int], after_s: float,
                     poll_s: float = 0.2) -> list[int]:
    """After a collective failed: the ranks among ``ranks`` that stay silent for
    ``after_s`` seconds (a host that dropped out), or none once every one of them has
    beaten within that time (the failure was something else)."""
    pulse = Pulse(store)
    pulse.silent(ranks, after_s)  # the counts now
    deadline = time.monotonic() + after_s + 2 * BEAT_S
    alive: set[int] = set()
    while time.monotonic() < deadline:
        gone = pulse.silent(ranks, after_s)
        if gone:
            return gone
        alive |= {r for r in ranks if pulse.moved(r)}
        if alive >= set(ranks):
            return []
        time.sleep(poll_s)
    return []
