"""Under torchrun on several hosts: the ranks' files brought to rank 0's run folder.

Every rank writes its traces and key averages where rank 0's runner put the strategy
folder. When that folder is shared (one host, or a shared file system) rank 0 already
sees them all and nothing moves. Otherwise rank 0 names the ranks whose files it cannot
see, and those send them, compressed, through the process group's c10d store (as their
Measurements travel); rank 0 writes them under the same names. A rank that does not send
within the timeout is named in a :class:`RankFailure`.
"""

from __future__ import annotations

import json
import pickle
import zlib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from profiler_kit.measure.distributed import RankFailure
from profiler_kit.measure.passes import Measurement


def _files(m: Measurement) -> list[str]:
    return [*m.trace_files, *m.key_averages_files]


def gather_files(store: Any, prefix: str, rank: int, measurements: Sequence[Measurement],
                 timeout_s: float) -> int:
    """Bring every measuring rank's files to rank 0 (see the module docstring); the
    number of files rank 0 received (0 on the other ranks)."""
    missing_key = prefix + "gather/missing"
    if rank == 0:
        missing = [r for r, m in enumerate(measurements)
                   if r and any(not Path(f).exists() for f in _files(m))]
        store.set(missing_key, json.dumps(missing))
        received = 0
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
                    received += 1
        return received
    if rank >= len(measurements):
        return 0
    store.wait([missing_key], timedelta(seconds=timeout_s))
    if rank in json.loads(store.get(missing_key)):
        payload = [(f, zlib.compress(Path(f).read_bytes(), 3)) for f in _files(measurements[rank])
                   if Path(f).exists()]
        store.set(prefix + f"gather/{rank}", pickle.dumps(payload))
    return 0
