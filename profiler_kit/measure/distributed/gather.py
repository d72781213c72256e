"""Under torchrun on several hosts: the ranks' files brought to rank 0's run folder.

Every rank writes its traces and key averages where rank 0's runner put the strategy
folder. When that folder is shared (one host, or a shared file system) rank 0 already
sees them all and nothing moves. Otherwise rank 0 names the ranks whose files it cannot
see, and those send them, compressed, through the process group's c10d store (as their
Measurements travel); rank 0 writes them under the same names. A rank whose traces
exceed ``limit_bytes`` (``--gather-limit-mb``) sends its rank summary instead
(``rank<N>.summary.json``, what ``profkit analyze --summary-only`` writes: the job view
reads it, the traces stay on their host). A rank that does not send within the timeout
is named in a :class:`RankFailure`.
"""

from __future__ import annotations

import json
import pickle
import zlib
from collections.abc import Sequence
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from profiler_kit.measure.distributed import RankFailure
from profiler_kit.measure.passes import Measurement


def _files(m: Measurement) -> list[str]:
    return [*m.trace_files, *m.key_averages_files]


def summary_path(trace: str, rank: int) -> str:
    """Where a rank's summary goes: beside its traces, ``rank<N>.summary.json``."""
    return str(Path(trace).with_name(f"rank{rank}.summary.json"))


def _summary(traces: Sequence[str]) -> bytes:
    """The rank summaries of ``traces`` as a summaries file (no torch on this path)."""
    from profiler_kit.analysis import summaries
    from profiler_kit.analysis.files import summarize_files

    files = [Path(t) for t in traces]
    found = summarize_files(files, [f.name for f in files], jobs=1)
    read = [s for s in found if not hasattr(s, "reason")]
    return summaries.dumps(read, [u for u in found if hasattr(u, "reason")])  # type: ignore[arg-type]


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


def gather_files(store: Any, prefix: str, rank: int, measurements: Sequence[Measurement],
                 timeout_s: float, limit_bytes: float = float("inf")) -> list[Measurement]:
    """Bring every measuring rank's files to rank 0 (see the module docstring). The
    measurements, on rank 0 without the traces that stayed on their host (a summary came
    instead)."""
    missing_key = prefix + "gather/missing"
    out = list(measurements)
    if rank == 0:
        missing = [r for r, m in enumerate(measurements)
                   if r and any(not Path(f).exists() for f in _files(m))]
        store.set(missing_key, json.dumps(missing))
        for r in missing:
            key = prefix + f"gather/{r}"
            try:
                store.wait([key], timedelta(seconds=timeout_s))
            except Exception:  # the store's timeout: name the rank, not the key
                raise RankFailure(f"rank {r} did not send its traces to rank 0 within "
                                  f"{timeout_s:g} s (its host does not share the run "
                                  "folder)") from None
            for path, data in pickle.loads(store.get(key)):
                target = Path(path)
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tmp = target.with_name(f".{target.name}.gather.tmp")
                    tmp.write_bytes(zlib.decompress(data))
                    tmp.replace(target)
            m = measurements[r]
            out[r] = replace(m, trace_files=tuple(f for f in m.trace_files if Path(f).exists()))
        return out
    if rank >= len(measurements):
        return out
    store.wait([missing_key], timedelta(seconds=timeout_s))
    if rank in json.loads(store.get(missing_key)):
        payload = _payload(measurements[rank], rank, limit_bytes)
        store.set(prefix + f"gather/{rank}", pickle.dumps(payload))
    return out
