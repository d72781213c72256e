"""``benchmarks/gpu_check.sh``, the unattended GPU run: it parses, and on a machine without
CUDA it stops at once with one line naming the rehearsal (``--device cpu``), which runs
every step on the CPU (rehearsed by hand: it takes minutes, too long for the suite)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "gpu_check.sh"


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def test_without_cuda_it_names_the_rehearsal_and_writes_nothing(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is visible: the script would run")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", str(SCRIPT), str(tmp_path / "out")], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        f"gpu_check: no CUDA device visible to torch (bash {SCRIPT} --device cpu rehearses)"]
    assert not (tmp_path / "out").exists()
