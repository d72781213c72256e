"""Under torchrun on several hosts: the ranks' files brought to rank 0's run folder.

Every rank writes its traces and key averages where rank 0's runner put the strategy
folder. When that folder is shared (one host, or a shared file system) rank 0 already
sees them all and nothing moves. Otherwise rank 0 names the ranks whose files it cannot
see, and those send them, compressed, through the process group's c10d store (as their
Measurements travel); rank 0 writes them under the same names. A rank whose traces
exceed ``limit_bytes`` (``--gather-limit-mb``) sends its rank summary instead
(``rank<N>.summary.json``, what ``profkit analyze --summary-only`` writes: the job view
reads it, the traces stay on their host).

The gather comes after every rank's timed results have reached rank 0, so a rank whose
files do not come loses its traces, not the measurement: the strategy stays measured
(its samples, every rank's, are what the run is for), rank 0's traces and those that
came are in the folder, and the rank's :attr:`Measurement.files_lost` says in one line
why its traces are not (the runner records it in ``report_errors`` and the run exits
1, as when a report cannot be written). Rank 0 watches each sender's heartbeat
(:mod:`.liveness`) while it waits: a rank silent for ``timeout_s`` (``--rank-timeout``)
has dropped out with its host, is named with it, and is returned among the gone ranks
(the caller runs nothing more with them: later strategies, and later rounds of this one,
are recorded as not run); a rank that still beats but has not sent after ``timeout_s``
is named as late, its host not taken for gone. Failing the strategy instead would throw
away a whole measurement for files that only explain it.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import time
import zlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from profiler_kit.measure import distributed
from profiler_kit.measure.distributed.liveness import BEAT_S, Pulse, name_lost
from profiler_kit.measure.passes import Measurement

# The one test hook (tests/measure/test_two_host_failures.py): the rank this names stops itself
# (SIGSTOP) right before it sends its files, silent from then on as a host that is gone.
STOP_BEFORE_SENDING_ENV = "PROFKIT_TEST_STOP_BEFORE_SENDING"


def _files(m: Measurement) -> list[str]:
    return [*m.trace_files, *m.key_averages_files]


def summary_path(trace: str, rank: int) -> str:
    """Where a rank's summary goes: beside its traces, ``rank<N>.summary.json``."""
    return str(Path(trace).with_name(f"rank{rank}.summary.json"))


def _summary(traces: Sequence[str]) -> bytes:
    """The rank summaries of ``traces`` as a summaries file (no torch on this path)."""
    from profiler_kit.sources import summary_files
    from profiler_kit.sources.trace_files import summarize_files

    files = [Path(t) for t in traces]
    found = summarize_files(files, [f.name for f in files], jobs=1)
    read = [s for s in found if not hasattr(s, "reason")]
    return summary_files.dumps(read, [u for u in found if hasattr(u, "reason")])  # type: ignore[arg-type]


def _payload(m: Measurement, rank: int, limit_bytes: float) -> list[tuple[str, bytes]]:
    """(path, compressed bytes) of what ``rank`` sends: its files, or its summary in
    place of its traces when they weigh more than ``limit_bytes``."""
    traces = [f for f in m.trace_files if Path(f).exists()]
    sent = [f for f in m.key_averages_files if Path(f).exists()]
    if traces and sum(Path(f).stat().st_size for f in traces) > limit_bytes:
        out = [(summary_path(traces[0], rank), zlib.compress(_summary(traces), 3))]
    else:
        out, sent = [], [*traces, *sent]
    return out + [(f, zlib.compress(Path(f).read_bytes(), 3)) for f in sent]


def _write(payload: bytes) -> None:
    for path, data in pickle.loads(payload):
        target = Path(path)
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.gather.tmp")
            tmp.write_bytes(zlib.decompress(data))
            tmp.replace(target)


def _kept(m: Measurement, why: str = "") -> Measurement:
    """``m`` as rank 0's folder holds it: only the files there, and why others are not."""
    return replace(m, trace_files=tuple(f for f in m.trace_files if Path(f).exists()),
                   key_averages_files=tuple(f for f in m.key_averages_files
                                            if Path(f).exists()),
                   files_lost=why)


def _lost_line(rank: int, what: str) -> str:
    return (f"rank {rank}'s traces are not in the run folder: "
            f"{name_lost([rank], distributed.hosts())} {what}; the measurement of every rank "
            "is kept")


def gather_files(store: Any, prefix: str, rank: int, measurements: Sequence[Measurement],
                 timeout_s: float, limit_bytes: float = float("inf"),
                 poll_s: float = 0.2) -> tuple[list[Measurement], list[int]]:
    """Bring every measuring rank's files to rank 0 (see the module docstring). The
    measurements, on rank 0 without the files that stayed on their host (a summary came
    instead, or the rank's host dropped out: ``files_lost`` says so), and the ranks that
    dropped out while sending (on rank 0; none elsewhere)."""
    missing_key = prefix + "gather/missing"
    out = list(measurements)
    if rank == 0:
        missing = [r for r, m in enumerate(measurements)
                   if r and any(not Path(f).exists() for f in _files(m))]
        store.set(missing_key, json.dumps(missing))
        pulse = Pulse(store)
        deadline = time.monotonic() + timeout_s + 2 * BEAT_S  # silence is judged by then
        waiting, gone = list(missing), []
        while waiting:
            for r in [r for r in waiting if store.check([prefix + f"gather/{r}"])]:
                _write(store.get(prefix + f"gather/{r}"))
                out[r] = _kept(measurements[r])
                waiting.remove(r)
            if not waiting:
                break
            for r in pulse.silent(waiting, timeout_s):
                out[r] = _kept(measurements[r], _lost_line(
                    r, f"dropped out while sending them to rank 0 (no sign of life for "
                       f"{timeout_s:g} s, --rank-timeout)"))
                waiting.remove(r)
                gone.append(r)
            if waiting and time.monotonic() > deadline:
                for r in waiting:
                    out[r] = _kept(measurements[r], _lost_line(
                        r, f"did not send them to rank 0 within {timeout_s:g} s "
                           "(--rank-timeout), though it still beats"))
                break
            time.sleep(poll_s)
        return out, gone
    if rank >= len(measurements):
        return out, []
    store.wait([missing_key], timedelta(seconds=timeout_s))
    if rank in json.loads(store.get(missing_key)):
        payload = _payload(measurements[rank], rank, limit_bytes)
        if os.environ.get(STOP_BEFORE_SENDING_ENV) == str(rank):
            os.kill(os.getpid(), signal.SIGSTOP)
        store.set(prefix + f"gather/{rank}", pickle.dumps(payload))
    return out, []
