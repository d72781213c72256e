"""Starting and stopping the child processes that are not ranks (TensorBoard, ...).

One set of rules for every such child, so none outlives profkit:

* it leads its own process group (session): a Ctrl-C in the terminal reaches profkit
  only, which then stops the child in order, and stopping it ends everything it started;
* on Linux it gets SIGKILL when profkit dies without cleaning up (``PR_SET_PDEATHSIG``);
* children still running when profkit exits are killed (``atexit``).

Ranks are started by ``torch.distributed.elastic`` (:mod:`profiler_kit.measure.distributed`),
which gives each its own process group too; :func:`kill_group` and :func:`exit_with_parent`
serve them as well. The forked analysis workers (:mod:`profiler_kit.trace.forking`) are
a ``multiprocessing`` pool: the pool owns their lifetime (daemonic workers, terminated
with the pool) and they share profkit's process group on purpose, ignoring Ctrl-C.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_live: set[subprocess.Popen[bytes]] = set()


def start(
    argv: Sequence[str], log: IO[bytes] | int | None, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own process group, output (stdout and stderr) to ``log``.

    Raises OSError when the program cannot be started."""
    process = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        env=None if env is None else dict(env), start_new_session=True,
        preexec_fn=_die_with_parent(),
    )
    if not _live:
        atexit.register(_stop_all)
    _live.add(process)
    return process


def stop(process: subprocess.Popen[bytes], timeout_s: float = 5.0) -> int:
    """End ``process`` and its process group; its return code.

    SIGTERM first, so it can shut down in order; after ``timeout_s`` (or at a Ctrl-C
    meanwhile) SIGKILL to the whole group, which also ends what outlived the leader."""
    if process.poll() is None:
        signal_group(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired, KeyboardInterrupt):
            process.wait(timeout=timeout_s)
    kill_group(process.pid)
    process.wait()
    _live.discard(process)
    return process.returncode


def signal_group(pid: int, signum: int) -> None:
    """Send ``signum`` to the process group led by ``pid``; nothing if it is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (the child and whatever it started)."""
    signal_group(pid, signal.SIGKILL)


def exit_with_parent(poll_s: float = 0.5) -> None:
    """In a Python child: exit as soon as the process that started it is gone.

    For children started by a library that offers no parent-death signal (the ranks)."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name="profkit-parent-watch", daemon=True).start()


def _die_with_parent() -> Callable[[], None] | None:
    """A pre-exec hook that asks Linux to SIGKILL the child when profkit dies; None
    elsewhere. Resolved before the fork: the hook itself only makes two system calls."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def hook() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # profkit died before the request took effect
            os.kill(os.getpid(), signal.SIGKILL)

    return hook


def _stop_all() -> None:
    for process in list(_live):
        kill_group(process.pid)
        with contextlib.suppress(Exception):
            process.wait(timeout=5)
    _live.clear()
