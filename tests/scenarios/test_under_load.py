"""The tests of the tests: every test that times real work (marked ``timing``) holds beside
a CPU hog on every core, as it must on the shared machines CI and users run on. The
timing tests run again, in a pytest of their own, while one busy process per core that
is not profkit's spins; the A/A run among them then also checks that the run said what
competed, naming the hog. The hogs spin while a timing test runs (a gate file that
``conftest.py`` opens around each one) and sleep while that pytest starts and collects,
which would only slow the rest of the suite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import HOG_GATE
from test_run_noise import EXPECTED_COMPETITOR

HERE = Path(__file__).parents[1]
HOG = """import os, time
end = time.time() + {seconds}
while time.time() < end:
    if not os.path.exists({gate!r}):
        time.sleep(0.02)
        continue
    spin = time.time() + 0.05
    while time.time() < spin:
        pass
"""


def start_hogs(folder: Path, count: int, seconds: int, gate: Path) -> list[int]:
    """``count`` busy processes named ``cpu_hog``, started through a shell that exits so
    that none is a descendant of this process (not profkit's own work), spinning while
    ``gate`` exists; their pids."""
    script = folder / "cpu_hog.py"
    script.write_text(HOG.format(seconds=seconds, gate=str(gate)))
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


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a running process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    gate = tmp_path / "timing_test_running"
    pids = start_hogs(tmp_path, cores, seconds=600, gate=gate)
    try:
        env = {**os.environ, EXPECTED_COMPETITOR: "cpu_hog", HOG_GATE: str(gate)}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-m", "timing", "-p", "no:cacheprovider",
             "-p", "no:xdist", *map(str, files)],
            capture_output=True, text=True, timeout=540, env=env, cwd=HERE.parent)
        spun = [cpu_seconds(pid) for pid in pids]
    finally:
        stop(pids)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and " deselected" in done.stdout
    assert not gate.exists()
    assert min(spun) >= 2.0, f"the hogs spun {spun} s: the gate never opened"
