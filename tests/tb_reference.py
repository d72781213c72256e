"""The TensorBoard plugin's own parser (``torch_tb_profiler``) run on a trace, as a reference.

The installed plugin predates two things current Kineto writes, so the trace is adapted
before it reads it (the numbers it then gives are its own definitions):

* runtime calls are ``cuda_runtime``/``cuda_driver`` events (the plugin knows ``Runtime``);
* ``gpu_user_annotation`` spans (GPU-side ``record_function`` ranges, ``ProfilerStep#N``
  included) would be taken for CPU ops and for extra steps; they are left out.
"""

from __future__ import annotations

import functools
import gzip
import json
import logging
import tempfile
from pathlib import Path
from typing import Any

import pytest

RUNTIME_CATS = {"cuda_runtime", "cuda_driver"}


def adapted(path: Path) -> dict[str, Any]:
    """The trace as the plugin can read it (see the module docstring)."""
    doc = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz"
                     else path.read_bytes())
    events = []
    for e in doc["traceEvents"]:
        cat = e.get("cat")
        if cat == "gpu_user_annotation":
            continue
        if cat in RUNTIME_CATS:
            e = {**e, "cat": "Runtime"}
        events.append(e)
    doc["traceEvents"] = events
    return doc


@functools.cache
def run_profile(path: Path) -> Any:
    """The plugin's ``RunProfileData`` for ``path`` (parsed and analyzed once per test
    session: several test modules compare with the same traces)."""
    data = pytest.importorskip("torch_tb_profiler.profiler.data")
    logging.disable(logging.WARNING)  # the plugin logs a line per odd event
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / path.name.replace(".gz", "")
        out.write_text(json.dumps(adapted(path)))
        return data.RunProfileData.parse("worker", "span", str(out), tmp)
