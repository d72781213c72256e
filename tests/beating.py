"""Peers' heartbeats in a real c10d store, from threads, for the liveness and gather tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from profiler_kit.measure.distributed import liveness

T = TypeVar("T")


def beat_until(store: Any, rank: int, stop: threading.Event) -> threading.Thread:
    """Beat ``rank``'s counter every 50 ms until ``stop`` is set."""
    def beat() -> None:
        while not stop.wait(0.05):
            store.add(liveness._PREFIX + str(rank), 1)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    return thread


def timed(call: Callable[[], T], stop: threading.Event) -> tuple[T, float]:
    """``call()`` and the seconds it took; the beating threads stopped after, whatever
    happens."""
    try:
        start = time.monotonic()
        return call(), time.monotonic() - start
    finally:
        stop.set()
