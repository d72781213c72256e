"""Which frames are the user's: libraries, the standard library and profkit's harness are
folded; profkit's built-in scenarios are the workload and are kept, installed or not."""

from __future__ import annotations

import numpy as np
import pytest

from profiler_kit.analysis.memory.code_sites import is_library_file, user_sites
from profiler_kit.trace.memory_records import Ranges


@pytest.mark.parametrize(("filename", "library"), [
    ("train.py", False),
    ("/home/me/project/model.py", False),
    ("torch/nn/modules/module.py", True),  # the profiler shortens sys.path prefixes
    ("/usr/lib/python3.11/contextlib.py", True),
    ("/venv/lib/python3.11/site-packages/transformers/models/bert.py", True),
    ("contextlib.py", True),
    ("profiler_kit/measure/passes.py", True),  # the harness
    ("/venv/lib/python3.11/site-packages/profiler_kit/measure/passes.py", True),
    # the built-in workloads, shortened, installed, or from a checkout
    ("profiler_kit/scenarios/multimodel_workload.py", False),
    ("/venv/lib/python3.11/site-packages/profiler_kit/scenarios/concurrent_workload.py", False),
    ("/src/profkit/scenarios/multimodel_workload.py", False),
])
def test_library_frames(filename: str, library: bool) -> None:
    assert is_library_file(filename) is library


def _frames(rows: list[tuple[str, int, int, str]]) -> Ranges:
    return Ranges(tuple(r[0] for r in rows), np.zeros(len(rows), dtype=np.int64),
                  np.array([r[1] for r in rows], dtype=np.int64),
                  np.array([r[2] for r in rows], dtype=np.int64), tuple(r[3] for r in rows))


def test_the_innermost_user_line_around_an_allocation() -> None:
    """train.py calls the scenario's forward, which calls into torch: an allocation inside
    torch is charged to the scenario's line; one in the standard library to train.py's
    line that called it; one outside every frame to none; an instant
    at a frame's end still belongs to it."""
    frames = _frames([
        ("train.py(1): <module>", 0, 100, ""),
        ("profiler_kit/scenarios/w.py(10): forward", 10, 50, "train.py:7"),
        ("torch/nn/modules/linear.py(120): forward", 20, 40,
         "profiler_kit/scenarios/w.py:12"),
        ("contextlib.py(5): helper", 55, 70, "train.py:9"),
    ])
    sites = user_sites(frames, np.zeros(4, dtype=np.int64),
                       np.array([30, 40, 60, 150], dtype=np.int64))
    assert sites == ["profiler_kit/scenarios/w.py:12 (forward)",
                     "profiler_kit/scenarios/w.py:12 (forward)", "train.py:9 (<module>)", None]
