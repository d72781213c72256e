"""``profkit run``: its output folder and the scenario's output files are checked before
anything runs; a report that cannot be written after the run leaves the run, its
summary and its console tables in place, and the run exits 1."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from profiler_kit import cli
from profiler_kit.measure import runner
from profiler_kit.measure.passes import MeasureOptions
from profiler_kit.measure.runner import RunRequest
from profiler_kit.scenario import from_file
from profiler_kit.util import artifacts, outputs

HERE = Path(__file__).parents[1]
SCENARIO = HERE / "user_scenarios" / "reporting.py"
TRACE = HERE / "data" / "a100_triton_kernel.json.gz"
TINY = ["--iterations", "2", "--warmup", "0", "--profile-warmup", "0", "--profile-active", "1"]
NOBODY = 65534


def run(*args: str, user: int | None = None) -> subprocess.CompletedProcess:
    env = {"COLUMNS": "120", "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    command = [sys.executable, "-m", "profiler_kit", "run", str(SCENARIO), *TINY, *args]
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def run_here(capsys, *args: str) -> subprocess.CompletedProcess:
    """The same command in this process (torch already imported: a refusal costs no
    interpreter start), with what it printed."""
    capsys.readouterr()
    status = cli.main(["run", str(SCENARIO), *TINY, *args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, status, out, err)


def error_line(r: subprocess.CompletedProcess) -> str:
    lines = [x for x in r.stderr.strip().splitlines() if x.startswith("profkit: error: ")]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_out_that_is_a_file_or_a_report_over_a_trace_is_refused(tmp_path: Path, capsys) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("mine")
    r = run("--out", str(a_file / "runs"))  # the whole command, as a user runs it
    assert r.returncode == 2 and "is not a directory" in error_line(r)
    trace = tmp_path / "t.json.gz"
    shutil.copy(TRACE, trace)
    r = run_here(capsys, "--out", str(tmp_path / "runs"), "--report", str(trace))
    assert r.returncode == 2 and "existing trace" in error_line(r)
    assert trace.read_bytes() == TRACE.read_bytes()
    assert not (tmp_path / "runs").exists(), "refused before the run started"


def test_report_over_a_file_profkit_wrote_needs_force(tmp_path: Path, capsys) -> None:
    report = tmp_path / "r.json"
    report.write_text('{"schema": "profkit.reporting/1", "old": true}\n')
    r = run_here(capsys, "--out", str(tmp_path / "runs"), "--report", str(report))
    assert r.returncode == 2 and "add --force" in error_line(r)
    r = run_here(capsys, "--out", str(tmp_path / "runs"), "--report", str(report), "--force")
    assert r.returncode == 0, r.stderr
    assert json.loads(report.read_text()) == {"schema": "profkit.reporting/1"}


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to switch to an unprivileged user")
def test_read_only_out_is_refused_as_a_user(tmp_path: Path) -> None:
    locked = Path(tempfile.mkdtemp(prefix="profkit-locked-"))
    try:
        locked.chmod(0o555)
        r = run("--out", str(locked), user=NOBODY)
        line = error_line(r)
        assert r.returncode == 2 and str(locked) in line and "permission denied" in line
        r = run("--out", str(tmp_path), "--report", str(locked / "r.json"), user=NOBODY)
        assert r.returncode == 2 and "permission denied" in error_line(r)
        assert not any(locked.iterdir())
    finally:
        shutil.rmtree(locked)


def test_a_report_that_cannot_be_written_after_the_run_keeps_the_run(
        tmp_path: Path, monkeypatch, capsys) -> None:
    """Disk full while writing the scenario's report (simulated: root cannot be refused
    a write, and no test should fill a disk)."""
    target = tmp_path / "reports" / "r.json"
    real = outputs.write_text_atomic

    def full_for_the_report(path: Path, text: str) -> None:
        if path == target:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, text)

    monkeypatch.setattr(outputs, "write_text_atomic", full_for_the_report)
    status = cli.main(["run", str(SCENARIO), *TINY, "--out", str(tmp_path / "runs"),
                       "--report", str(target)])
    out, err = capsys.readouterr()
    assert status == 1
    assert f"profkit: error: {target}: cannot write: disk full (no space left)" in err
    assert "base" in out, "the console table is still printed"
    (run_dir,) = (tmp_path / "runs" / "reporting").iterdir()
    assert (run_dir / artifacts.SUMMARY_MD).is_file()
    recorded = json.loads((run_dir / artifacts.RUN_JSON).read_text())
    assert recorded["report_errors"] == [f"{target}: cannot write: disk full (no space left)"]
    assert recorded["strategies"][0]["status"] == "ok"


def test_a_run_where_nothing_could_run_exits_2_with_the_reasons(tmp_path: Path, capsys) -> None:
    options = MeasureOptions(repeats=1, iterations=2, warmup=0, profile_warmup=0, profile_active=1)
    result = runner.run(RunRequest(from_file(SCENARIO), {}, device="cpu", options=options,
                                   out=tmp_path, strategies=["gpu_only"]))
    assert result.nothing_ran and result.exit_status == 2
    r = run_here(capsys, "--out", str(tmp_path), "--strategies", "gpu_only", "--device", "cpu")
    assert r.returncode == 2
    assert "nothing could run (gpu_only: " in error_line(r)
