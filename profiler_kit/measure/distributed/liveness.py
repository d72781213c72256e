"""Under torchrun: each rank's sign of life through the process group's c10d store.

A rank whose host drops out (its processes killed, its link down) and a rank that hangs
both stop making progress; only the first also stops beating. Every rank adds to a
counter of its own every :data:`BEAT_S` from a thread of its own, on a connection of its
own (the main thread may block in a store wait or a collective). Rank 0 reads the
counters while it waits for results: a rank whose counter has not moved for
``--rank-timeout`` seconds is gone, and is named with its host.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

BEAT_S = 1.0
_PREFIX = "profkit/alive/"


def start_beating(store: Any, rank: int) -> threading.Event:
    """Beat this rank's counter until the returned event is set (or the store is gone)."""
    own = store.clone()  # a connection of its own: a blocking wait elsewhere must not stall it
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(BEAT_S):
            try:
                own.add(_PREFIX + str(rank), 1)
            except Exception:  # the store's host is gone: nothing left to tell
                return

    own.add(_PREFIX + str(rank), 1)
    threading.Thread(target=beat, name="profkit-heartbeat", daemon=True).start()
    return stop


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
