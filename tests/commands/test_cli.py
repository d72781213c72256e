import subprocess
import sys

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
