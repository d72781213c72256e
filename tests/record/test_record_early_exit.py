"""A script that fails before its first step (on an import, or raising before it steps) is
reported as such: its exit status, that it ended before its first step, and the last line
of its error; profkit exits with the script's status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from profiler_kit.record.hooks import Recorder, error_line
from profiler_kit.record.launch import _lines

SCRIPTS = Path(__file__).parents[1] / "record_scripts"
PY = sys.executable
MISSING = "ModuleNotFoundError: No module named 'nonexistent_module'"


def _record(folder: Path, *command: str) -> subprocess.CompletedProcess:
    """``profkit record`` of a script that fails before its first step; the fallback time
    window waits longer than any of them runs, so a loaded machine that takes more than
    the default 5 s from importing torch to failing records no window either."""
    return subprocess.run([PY, "-m", "profiler_kit", "record", "-o", str(folder),
                           "--window-after", "600", *command],
                          capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _said(r: subprocess.CompletedProcess) -> list[str]:
    return [line[len("profkit: "):] for line in r.stderr.splitlines()
            if line.startswith("profkit: ")]


def _record_json(folder: Path) -> dict:
    return json.loads((folder / "record.json").read_text())


def test_a_script_that_fails_on_an_import_after_torch(tmp_path):
    script = str(SCRIPTS / "fails_on_import.py")
    r = _record(tmp_path / "run", script)
    assert r.returncode == 1, r.stderr
    plain = subprocess.run([PY, script], capture_output=True, text=True, timeout=240)
    assert plain.stderr.splitlines()[-1] == MISSING
    assert r.stderr.startswith(plain.stderr)  # python's own traceback, then profkit's lines
    said = _said(r)
    assert said[:2] == [f"the script exited with status 1 before its first step: {MISSING}",
                        "nothing recorded"]
    assert not any("never stepped" in line for line in said)
    rec = _record_json(tmp_path / "run")
    assert rec["exit_status"] == 1 and rec["summary"] == said[:2]
    (process,) = rec["processes"]
    assert process["exit"]["status"] == 1 and process["exit"]["how"] == "exception"
    assert process["exit"]["error"] == MISSING
    summary = (tmp_path / "run" / "summary.md").read_text()
    assert "- exit status: 1\n" in summary
    assert f"- the script exited with status 1 before its first step: {MISSING}\n" in summary


def test_a_script_that_raises_before_its_first_step(tmp_path):
    """raises.py, failing at iteration 0: torch imported, the model built, no step."""
    r = _record(tmp_path / "run", str(SCRIPTS / "raises.py"), "--fail-at", "0")
    assert r.returncode == 1, r.stderr
    assert "ValueError: bad batch at iteration 0" in r.stderr.splitlines()
    assert _said(r)[:2] == ["the script exited with status 1 before its first step: "
                            "ValueError: bad batch at iteration 0", "nothing recorded"]
    assert _record_json(tmp_path / "run")["exit_status"] == 1


@pytest.mark.parametrize("code, status, error", [
    ("import nonexistent_module\n", 1, MISSING),
    ("import sys\nsys.exit('bad config: no data folder')\n", 1, "bad config: no data folder"),
    ("import sys\nsys.exit(2)\n", 2, None),
])
def test_a_script_that_fails_before_importing_torch(tmp_path, code, status, error):
    script = tmp_path / "train.py"
    script.write_text(f"{code}import torch\n")
    r = _record(tmp_path / "run", str(script))
    assert r.returncode == status, r.stderr
    first = f"the script exited with status {status} before its first step"
    assert _said(r)[:2] == [first + (f": {error}" if error else ""),
                            "it never imported torch: nothing recorded"]
    assert _record_json(tmp_path / "run")["processes"][0]["exit"].get("error") == error


# ---- the parts -----------------------------------------------------------------------------
def _error(code: str) -> str | None:
    try:
        exec(compile(code, "train.py", "exec"), {})
    except BaseException as exc:  # noqa: BLE001
        return error_line(exc)
    raise AssertionError("no error")


@pytest.mark.parametrize("code, line", [
    ("raise ValueError('bad batch')", "ValueError: bad batch"),
    ("e = ValueError('bad batch')\ne.add_note('a note')\nraise e", "ValueError: bad batch"),
    ("compile('x = (', 'model.py', 'exec')", "SyntaxError: '(' was never closed"),
    ("raise RuntimeError('Error(s) in loading state_dict:\\n\\tMissing key(s): w')",
     "RuntimeError: Error(s) in loading state_dict:"),
    ("raise SystemExit('no data\\nin data/')", "in data/"),
    ("raise SystemExit(3)", None),
    ("raise SystemExit", None),
    ("raise KeyboardInterrupt", "KeyboardInterrupt"),
    ("raise OSError('x' * 1000)", "OSError: " + "x" * 288 + "..."),
])
def test_the_last_line_of_the_error(code, line):
    assert _error(code) == line


def _status(**kw) -> dict:
    base = {"pid": 1, "rank": None, "torch": "2", "source": None, "completed_steps": 0,
            "found_by": "none", "captures": [], "torch_imported_s": 1.0,
            "exit": {"status": 1, "how": "exception", "after_s": 2.0,
                     "error": "OSError: no data"}}
    return {**base, **kw}


def test_the_lines_of_a_script_that_failed_in_or_after_its_first_step():
    config = {"wait": 5, "warmup": 2, "window_after": 5.0}
    began = _status(source="dataloader", found_by="DataLoader batches")
    assert _lines([began], [], 1, config, 3.0) == [
        "the script exited with status 1 in its first step: OSError: no data",
        "steps found: DataLoader batches", "nothing recorded"]
    after = _status(source="optimizer", completed_steps=3, found_by="optimizer steps (SGD)")
    assert _lines([after], [], 1, config, 3.0)[-1].startswith(
        "the script ended after 3 steps, before the capture began")
    ended_well = _status(exit={"status": 0, "how": "exit", "after_s": 2.0})
    assert _lines([ended_well], [], 0, config, 3.0)[0].startswith("the script never stepped")


def test_no_time_window_begins_once_the_script_has_ended(tmp_path):
    """The window's timer may fall due while python shuts down: a profiler started then was
    never stopped, and the script ended with 139 instead of its own status."""
    rec = Recorder({"window_after": 0.0}, str(tmp_path), "train.py")
    rec.torch = torch
    rec.finish(1, "exception", "ValueError: bad batch")
    rec.pending = "window"
    rec._run_pending()
    assert rec.kp is None and rec.phase == "wait"
    status = json.loads(next((tmp_path / ".record").glob("*.json")).read_text())
    assert status["exit"] == {"status": 1, "how": "exception", "after_s": status["exit"]
                              ["after_s"], "error": "ValueError: bad batch"}
