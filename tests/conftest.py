"""The tests mirror the packages (trace/, analysis/, render/, measure/, commands/,
scenarios/; the project-wide checks stay here). pytest puts this folder on ``sys.path``
because this file is in it, so the helper modules beside it (``real_traces``,
``tb_reference``, ``two_hosts``, ``multihost_runs``...) import by name from every folder,
and the real traces they read stay in ``data/``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The property tests check what the code computes, not how fast a shared machine draws
# examples: Hypothesis' deadline and its "input generation is slow" check failed a test
# on a loaded CI run (2 inputs in 1.17 s) and are off for the whole suite.
settings.register_profile("suite", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

# a test module that reuses another folder's test module (render's HTML tests read
# analysis/test_job's job summaries) imports it by name when its own file runs alone too
sys.path += [str(Path(__file__).parent / folder)
             for folder in ("trace", "analysis", "render", "measure", "commands", "scenarios")]

# set by tests/scenarios/test_under_load.py: a file that exists while a timing test runs,
# so that its CPU hogs spin then and sleep while pytest starts, collects and ends
HOG_GATE = "PROFKIT_TEST_HOG_GATE"


def pytest_configure(config) -> None:
    """pytest-xdist hands out files by their number of tests, most first, unless told
    not to: that put the slow files (few tests each) last, one running alone after the
    others were done. Keep the order below instead."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session, config, items) -> None:
    """Files that hold a ``slow`` test run first, the rest after them, each file's tests
    in their own order: ``-n 3 --dist loadfile`` hands files to the workers in this
    order, so the long files start early and the short ones fill in at the end, instead
    of one long file running alone after the others are done."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    first_seen = {}
    for i, item in enumerate(items):
        first_seen.setdefault(item.path, i)
    items.sort(key=lambda item: (item.path not in slow_files, first_seen[item.path]))


@pytest.fixture(autouse=True)
def _hogs_spin_while_timing(request):
    """Under test_under_load, open the hogs' gate for the length of each timing test."""
    gate = os.environ.get(HOG_GATE)
    if not gate or request.node.get_closest_marker("timing") is None:
        yield
        return
    Path(gate).touch()
    try:
        yield
    finally:
        Path(gate).unlink(missing_ok=True)
