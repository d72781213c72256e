"""The tests of the tests: every test that times real work (marked ``timing``) holds beside
a CPU hog on every core, as it must on the shared machines CI and users run on. The
timing tests run again, in a pytest of their own, while one busy process per core that
is not profkit's spins; the A/A run among them then also checks that the run said what
competed, naming the hog."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_run_noise import EXPECTED_COMPETITOR

HERE = Path(__file__).parents[1]
HOG = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"


def start_hogs(folder: Path, count: int, seconds: int) -> list[int]:
    """``count`` busy processes named ``cpu_hog``, started through a shell that exits so
    that none is a descendant of this process (not profkit's own work); their pids."""
    script = folder / "cpu_hog.py"
    script.write_text(HOG.format(seconds=seconds))
    pids = []
    for _ in range(count):
        out = subprocess.run(
            ["sh", "-c", f"{sys.executable} {script} >/dev/null 2>&1 & echo $!"],
            capture_output=True, text=True, check=True)
        pids.append(int(out.stdout.strip()))
    return pids


def stop(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def timing_files() -> list[Path]:
    """The test files that hold a test marked ``timing``."""
    return sorted(p for p in HERE.rglob("test_*.py")
                  if "@pytest.mark.timing" in p.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_the_timing_tests_hold_beside_a_cpu_hog_on_every_core(tmp_path) -> None:
    files = timing_files()
    assert {p.name for p in files} >= {"test_run_noise.py", "test_timing.py",
                                       "test_contention.py"}
    cores = len(os.sched_getaffinity(0))
    pids = start_hogs(tmp_path, cores, seconds=600)
    try:
        env = {**os.environ, EXPECTED_COMPETITOR: "cpu_hog"}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-m", "timing", "-p", "no:cacheprovider",
             "-p", "no:xdist", *map(str, files)],
            capture_output=True, text=True, timeout=540, env=env, cwd=HERE.parent)
    finally:
        stop(pids)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " deselected" in done.stdout
