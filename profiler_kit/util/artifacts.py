"""What a run leaves on disk: a fresh run directory, run.json, atomic writes.

A run directory is a TensorBoard logdir (one sub-folder per strategy) and is never
reused: a new run gets a new timestamped folder. Files are written to a temporary
name and moved into place, so a reader (or an interrupted run) never sees half a file.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

RUN_SCHEMA = "profkit.run/1"
RUN_JSON = "run.json"
SUMMARY_MD = "summary.md"
REPORT_HTML = "report.html"
# a ``profkit record`` folder: its record, and the hidden folder where the recorded
# processes report while the recording runs (trace finders never look inside)
RECORD_JSON = "record.json"
RECORD_STATUS_DIR = ".record"


def new_run_dir(out: str | Path, scenario_name: str) -> Path:
    """Create ``<out>/<scenario>/<run-id>``; the run id is a UTC timestamp and a random
    suffix, and an existing folder is never reused."""
    parent = Path(out) / _safe(scenario_name)
    parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    for _ in range(100):
        path = parent / f"{stamp}-{os.urandom(2).hex()}"
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"could not create a new run folder under {parent}")


def _safe(name: str) -> str:
    """A folder name for a scenario (user files are named by their stem)."""
    stem = Path(name).stem if name.endswith(".py") else name
    return "".join(c if c.isalnum() or c in "-_.+=," else "_" for c in stem) or "scenario"


def point_dir_name(point: Mapping[str, Any]) -> str:
    """``{"n_model": 8}`` -> ``"n_model=8"`` (the folder of one sweep point)."""
    return ",".join(f"{k}={v}" for k, v in point.items())


def write_text_atomic(path: Path, text: str) -> None:
    """Write through a temporary file and a rename: a reader never sees half a file."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` through a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json_atomic(path: Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(jsonable(data), indent=2, allow_nan=False) + "\n")


def jsonable(value: Any) -> Any:
    """Plain JSON values: NaN/inf become null, tuples lists, paths strings."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)

