"""Inductor's provenance saved beside a trace (``<worker>.inductor_provenance.json``, written
where profkit ran a compiled model) read for the analysis of that trace.

A trace ``<worker>.<anything>.pt.trace.json`` takes the file of the longest worker name in
its folder that its own name starts with (``rank0.inductor_provenance.json`` for
``rank0.1732.pt.trace.json``); an unreadable file is no provenance.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from profiler_kit.analysis.code.provenance import PROVENANCE_SUFFIX, Provenance


def provenance_file(trace: str | Path) -> Path | None:
    trace = Path(trace)
    try:
        candidates = [p for p in trace.parent.iterdir() if p.name.endswith(PROVENANCE_SUFFIX)]
    except OSError:
        return None
    best = None
    for p in candidates:
        worker = p.name[:-len(PROVENANCE_SUFFIX)]
        if trace.name.startswith(worker + ".") and (best is None or len(p.name) > len(best.name)):
            best = p
    return best


def read_provenance(trace: str | Path) -> Provenance | None:
    path = provenance_file(trace)
    if path is None:
        return None
    try:
        return msgspec.json.decode(path.read_bytes(), type=Provenance)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None
