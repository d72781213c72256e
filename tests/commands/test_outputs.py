"""Output paths: every command that writes a file checks it before any work.

Refused (exit 2, one line, nothing touched): one of the inputs, an existing trace, a
folder, an existing file profkit did not write, an empty name, a folder it may not
write in. A file profkit wrote earlier is replaced only with ``--force``; ``-`` is
stdout. Permissions are checked as an unprivileged user (``setpriv``), since root
ignores them; disk full is simulated (no test can fill a disk).
"""

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

from profiler_kit.errors import OutputError, UsageError
from profiler_kit.util import outputs

DATA = Path(__file__).parents[1] / "data"
A = DATA / "a100_simple_add.json.gz"
B = DATA / "a100_triton_kernel.json.gz"
NOBODY = 65534


def profkit(*args: str, cwd: Path | None = None, user: int | None = None
            ) -> subprocess.CompletedProcess:
    env = {"COLUMNS": "100", "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    command = [sys.executable, "-m", "profiler_kit", *args]
    if user is not None:
        command = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120,
                          cwd=cwd)


def one_line_error(r: subprocess.CompletedProcess, code: int = 2) -> str:
    assert r.returncode == code, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("profkit: error: "), r.stderr
    return lines[0]


@pytest.fixture
def traces(tmp_path: Path) -> Path:
    for f in (A, B):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path


def unchanged(folder: Path) -> None:
    for f in (A, B):
        assert (folder / f.name).read_bytes() == f.read_bytes()


@pytest.mark.parametrize("argv", [
    ["analyze", "--markdown", A.name, B.name],
    ["analyze", A.name, "--json", A.name],  # one of the inputs
    ["analyze", f"--json={B.name}", A.name],  # an existing trace, named as the output
    # B would stand apart from the other paths (argparse takes them in one run): kept as
    # the output, refused with the hint to write --json -
    ["analyze", A.name, "--summary-only", "--json", B.name],
    ["memory", A.name, "--json", A.name],
])
def test_traces_are_never_overwritten(traces: Path, argv: list[str]) -> None:
    line = one_line_error(profkit(*argv, cwd=traces))
    assert "refusing to overwrite" in line
    unchanged(traces)


@pytest.mark.parametrize("argv", [
    ["analyze", "--json", A.name],  # argparse gave --json the trace, and no path was left
    ["analyze", "--json", A.name, B.name],
    ["analyze", A.name, "--json", B.name, "--top", "3"],
    ["analyze", "--json", "."],  # a folder of traces
    ["memory", "--json", A.name],
    ["compare", "--json", A.name, B.name],
])
def test_json_before_an_input_reads_it_and_writes_to_stdout(traces: Path,
                                                            argv: list[str]) -> None:
    """`--json` alone is stdout: a trace or folder after it is an input, never the file."""
    r = profkit(*argv, cwd=traces)
    assert r.returncode in (0, 1), r.stderr  # memory: a trace without memory events is 1
    doc = json.loads(r.stdout)
    if argv[0] in ("analyze", "compare"):
        assert doc["schema"] == "profkit.analysis/3"
        named = [a for a in argv[1:] if not a.startswith("-") and a != "3"]
        want = {A.name, B.name} if "." in named else set(named)
        assert {Path(t["path"]).name for t in doc["traces"]} == want
    else:
        assert doc["schema"] == "profkit.memory/1" and doc["strategies"][0]["label"] == A.name
    unchanged(traces)
    assert sorted(p.name for p in traces.iterdir()) == sorted([A.name, B.name])


def test_empty_folder_and_foreign_files_are_refused(traces: Path) -> None:
    notes = traces / "notes.txt"
    notes.write_text("mine")
    for argv, words in (
        (["analyze", A.name, "--json="], "--json: empty file name"),
        (["analyze", A.name, "--markdown", ""], "--markdown: empty file name"),
        (["analyze", A.name, "--json=."], "is a folder"),
        (["analyze", A.name, "--json", "notes.txt"], "profkit did not write"),
        (["analyze", A.name, "--markdown", "notes.txt/r.md"], "notes.txt is not a directory"),
        (["analyze", A.name, "--json", "o.json", "--markdown", "o.json"], "same file"),
        (["analyze", A.name, "--json", "-", "--markdown", "-"], "only one output"),
        (["analyze", A.name, "--top", "-1"], "--top must be at least 1"),
    ):
        assert words in one_line_error(profkit(*argv, cwd=traces)), argv
    assert notes.read_text() == "mine"
    assert sorted(p.name for p in traces.iterdir()) == sorted([A.name, B.name, "notes.txt"])


def test_a_report_profkit_wrote_is_replaced_only_with_force(traces: Path) -> None:
    for argv in (["--json", "o.json"], ["--markdown", "o.md"]):
        assert profkit("analyze", A.name, *argv, cwd=traces).returncode == 0
        first = (traces / argv[1]).read_text()
        line = one_line_error(profkit("analyze", B.name, *argv, cwd=traces))
        assert "add --force" in line and (traces / argv[1]).read_text() == first
        r = profkit("analyze", B.name, *argv, "--force", cwd=traces)
        assert r.returncode == 0, r.stderr
        assert (traces / argv[1]).read_text() != first
    # even with --force, only profkit's own files: never a trace or a run's record
    line = one_line_error(profkit("compare", "--force", f"--json={A.name}", B.name, B.name,
                                  cwd=traces))
    assert "existing trace" in line
    (traces / "run.json").write_text(json.dumps({"schema": "profkit.run/1"}, indent=2))
    assert "run's record" in one_line_error(
        profkit("analyze", A.name, "--json", "run.json", "--force", cwd=traces))
    unchanged(traces)


def test_dash_is_stdout(traces: Path) -> None:
    r = profkit("analyze", A.name, "--markdown", "-", cwd=traces)
    assert r.returncode == 0 and r.stdout.startswith("# profkit analysis")
    r = profkit("compare", A.name, B.name, "--json", cwd=traces)
    assert r.returncode == 0 and json.loads(r.stdout)["schema"] == "profkit.analysis/3"


def test_diff_output_is_checked(tmp_path: Path) -> None:
    report = {"schema": "profkit.ddp_report/1", "metadata": {}, "benchmark_results": []}
    base, test = tmp_path / "a.json", tmp_path / "b.json"
    base.write_text(json.dumps(report))
    test.write_text(json.dumps(report))
    line = one_line_error(profkit("diff", str(base), str(test), "--json", str(base)))
    assert "one of the inputs" in line
    line = one_line_error(profkit("diff", str(base), str(test), "--json", str(base), "--force"))
    assert "one of the inputs" in line and json.loads(base.read_text()) == report


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to switch to an unprivileged user")
def test_unwritable_folder_is_refused_before_the_work(traces: Path, tmp_path: Path) -> None:
    for folder in (tmp_path, *tmp_path.parents):  # pytest's folders are root's alone
        if folder.stat().st_uid == 0 and str(folder).startswith(tempfile.gettempdir() + "/"):
            folder.chmod(0o755)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    r = profkit("analyze", A.name, "--json", str(locked / "a.json"), cwd=traces, user=NOBODY)
    line = one_line_error(r)
    assert str(locked / "a.json") in line and "permission denied" in line
    assert r.stdout == "", "refused before the analysis"


def test_checks_in_the_module(tmp_path: Path) -> None:
    assert outputs.check(None, "--json") is None and outputs.check("-", "--json") is None
    new = tmp_path / "deep" / "er" / "out.json"
    assert outputs.check(str(new), "--json") == new  # folders are made when written
    with pytest.raises(UsageError, match="one of the inputs"):
        outputs.check(str(tmp_path / "x" / ".." / "in.json"), "-o",
                      inputs=[tmp_path / "in.json"])
    outputs.write(new, '{"schema": "profkit.x/1"}\n')
    assert outputs.written_by_profkit(new)
    with pytest.raises(UsageError, match="add --force"):
        outputs.check(str(new), "--json")
    assert outputs.check(str(new), "--json", force=True) == new


def test_write_errors_are_one_line_naming_path_and_problem(tmp_path: Path, monkeypatch) -> None:
    target = tmp_path / "r.json"

    def disk_full(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(outputs, "write_text_atomic", disk_full)
    with pytest.raises(OutputError) as caught:
        outputs.write(target, "{}")
    assert str(caught.value) == f"{target}: cannot write: disk full (no space left)"
    assert caught.value.exit_code == 1  # after the work: what finished is kept
    with pytest.raises(OutputError) as caught:
        outputs.write(tmp_path / "f" / "x", "{}", after_work=False)
    assert caught.value.exit_code == 2
    blocker = tmp_path / "file"
    blocker.write_text("")
    error = outputs.write_error(blocker / "x", NotADirectoryError(errno.ENOTDIR, "Not a dir"))
    assert "not a directory" in str(error)
    assert "permission denied" in str(outputs.write_error("p", PermissionError(errno.EACCES, "")))


def test_html_report_output_is_checked_before_any_work(traces: Path) -> None:
    from profiler_kit import api

    pytest.importorskip("plotly")
    with pytest.raises(UsageError, match="existing trace"):
        api.report([traces / A.name], traces / B.name)
    with pytest.raises(UsageError, match="one of the inputs"):
        api.report([traces / A.name], traces / A.name)
    html = api.report([traces / A.name], traces / "r.html")
    assert outputs.written_by_profkit(html)
    with pytest.raises(UsageError, match="add --force"):
        api.report([traces / A.name], html)
    assert api.report([traces / A.name], html, force=True) == html
    unchanged(traces)
