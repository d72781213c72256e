"""Ranks' signs of life through a real c10d store (torch's HashStore): a rank whose
counter stops is named once it has been silent for the timeout; a rank that beats is
never taken for gone, and a failure while every peer beats is not called a drop-out."""

from __future__ import annotations

import threading
import time

import pytest

dist = pytest.importorskip("torch.distributed")

from profiler_kit.measure.distributed import liveness  # noqa: E402


def _beat_until(store, rank: int, stop: threading.Event) -> threading.Thread:
    def beat() -> None:
        while not stop.wait(0.05):
            store.add(liveness._PREFIX + str(rank), 1)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    return thread


def test_a_silent_rank_is_named_once_the_timeout_passed() -> None:
    store = dist.HashStore()
    store.add(liveness._PREFIX + "1", 1)  # rank 1 beat once, then its host went
    stop = threading.Event()
    _beat_until(store, 2, stop)
    try:
        start = time.monotonic()
        gone = liveness.wait_for_silence(store, [1, 2], after_s=0.5, poll_s=0.05)
        waited = time.monotonic() - start
    finally:
        stop.set()
    assert gone == [1]
    assert 0.5 <= waited < 0.5 + 2 * liveness.BEAT_S + 1
    assert liveness.name_lost(gone, ("host-a", "host-b", "host-a")) == "host-b (rank 1)"


def test_peers_that_all_beat_are_no_drop_out() -> None:
    store = dist.HashStore()
    stop = threading.Event()
    for r in (1, 2):
        _beat_until(store, r, stop)
    try:
        start = time.monotonic()
        gone = liveness.wait_for_silence(store, [1, 2], after_s=5.0, poll_s=0.05)
        waited = time.monotonic() - start
    finally:
        stop.set()
    assert gone == [] and waited < 2.0  # answered as soon as each had beaten
