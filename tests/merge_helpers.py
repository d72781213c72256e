"""Traces of two ranks (the gloo run in tests/data/gloo_straggler, or the NCCL sample in
tests/data/two_ranks), with one rank's clock moved as if it ran on a host whose clock
differs by a known offset."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

HERE = Path(__file__).parent
GLOO = HERE / "data" / "gloo_straggler"
NCCL_SAMPLE = HERE / "data" / "two_ranks"  # two of 128 ranks of a real NCCL job


def shifted_copy(dest: Path, rank: int, offset_us: int, source: Path = GLOO) -> Path:
    """A folder with both ranks' traces, ``rank``'s timestamps moved by ``offset_us`` and
    its host renamed (a clock of its own is another host's: one host's ranks share one)."""
    dest.mkdir(parents=True, exist_ok=True)
    for src in sorted(source.glob("rank*.json.gz")):
        doc = json.loads(gzip.decompress(src.read_bytes()))
        if src.name.startswith(f"rank{rank}."):
            for e in doc["traceEvents"]:
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] += offset_us
            if doc.get("host_name"):
                doc["host_name"] = f"{doc['host_name']}-other"
        (dest / src.name).write_bytes(gzip.compress(json.dumps(doc).encode()))
    return dest
