import subprocess
import sys

import pytest

from profiler_kit import __version__, cli


def test_no_command_prints_help_and_exits_2(capsys):
    assert cli.main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


def test_version(capsys):
    try:
        cli.main(["--version"])
    except SystemExit as exc:
        assert exc.code == 0
    assert __version__ in capsys.readouterr().out


def test_python_dash_m_runs_the_same_cli():
    proc = subprocess.run(
        [sys.executable, "-m", "profiler_kit", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0
    assert "profkit" in proc.stdout


BAD_INPUTS = {"missing": None, "empty": "", "not_json": "{nope", "not_trace": '{"hello": 1}',
              "empty_dir": None}
READERS = [["analyze"], ["compare"], ["memory"], ["report", "-o", "r.html"], ["whatif"],
           ["merge", "-o", "m.json"]]


@pytest.mark.parametrize("command", READERS, ids=lambda c: c[0])
@pytest.mark.parametrize("make", sorted(BAD_INPUTS))
def test_bad_input_is_exit_2_and_one_line_naming_it_in_every_command(
        tmp_path, monkeypatch, capsys, command, make):
    """The same fault is the same answer whichever command reads the path: exit 2, one
    error line that names the input, nothing written."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / ("folder" if make == "empty_dir" else "t.json")
    if make == "empty_dir":
        path.mkdir()
    elif BAD_INPUTS[make] is not None:
        path.write_text(BAD_INPUTS[make])
    assert cli.main([*command, str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    assert line.startswith(f"profkit: error: {path}: "), line
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "m.json").exists()
