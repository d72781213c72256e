"""``profkit report`` and ``analyze --html`` from the command line: what is written, what
is refused, and the one line that says how to install plotly when it is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).parents[1] / "data"
TRACE = DATA / "cpu_torch_profiler.pt.trace.json.gz"
SCRIPTS = Path(__file__).parents[1] / "record_scripts"


def profkit(*args: str, env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "profiler_kit", *args], capture_output=True,
                          text=True, timeout=300, env=env, cwd=cwd)


def charts_of(html: Path) -> list[dict]:
    text = html.read_text(encoding="utf-8")
    payload = text.split('<script type="application/json" id="profkit-charts">')[1]
    return json.loads(payload.split("</script>")[0])


def test_report_writes_one_file_and_says_where(tmp_path: Path) -> None:
    out = tmp_path / "sub" / "r.html"
    done = profkit("report", str(TRACE), str(DATA / "a100_alexnet.json.gz"), "-o", str(out),
                   "--title", "two traces")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"report: {out}"
    assert "<title>two traces</title>" in out.read_text(encoding="utf-8")
    ids = {c["id"] for c in charts_of(out)}
    assert {"profiled-steps", "cpu-classes", "gpu-classes"} <= ids


def test_report_default_is_report_html_here(tmp_path: Path) -> None:
    done = profkit("report", str(TRACE), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report.html").stat().st_size > 1_000_000  # plotly.js is inside


def test_report_never_overwrites_an_input(tmp_path: Path) -> None:
    trace = tmp_path / "t.json.gz"
    trace.write_bytes(TRACE.read_bytes())
    done = profkit("report", str(trace), "-o", str(trace))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "refusing to overwrite" in done.stderr
    assert trace.read_bytes() == TRACE.read_bytes()


def test_a_report_written_earlier_is_replaced_only_with_force(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    assert profkit("report", str(TRACE), "-o", str(out)).returncode == 0
    again = profkit("report", str(TRACE), "-o", str(out))
    assert again.returncode == 2 and "add --force to replace it" in again.stderr
    assert profkit("report", str(TRACE), "-o", str(out), "--force").returncode == 0
    mine = tmp_path / "notes.html"
    mine.write_text("<p>mine</p>")
    refused = profkit("report", str(TRACE), "-o", str(mine), "--force")
    assert refused.returncode == 2 and "profkit did not write" in refused.stderr
    assert mine.read_text() == "<p>mine</p>"


def test_report_of_a_run_folder_rewrites_its_own_report_only(tmp_path: Path) -> None:
    """`profkit report RUN` as the README shows it, on a folder `profkit run` wrote (its
    report.html there): profkit's own file is replaced, and the output says so; a file
    there that profkit did not write is refused and left as it was."""
    from concurrent_run import concurrent_run

    run = concurrent_run(tmp_path / "run")
    html = run / "report.html"
    first = profkit("report", str(run))
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == f"report: {html}"
    html.write_text(html.read_text(encoding="utf-8").replace("<title>", "<title>old "),
                    encoding="utf-8")  # still profkit's file, as profkit run left it
    again = profkit("report", str(run))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == \
        f"report: {html} (replaced the run's report.html, which profkit wrote)"
    assert "<title>old " not in html.read_text(encoding="utf-8")
    assert {"step-time", "overhead", "cpu-classes"} <= {c["id"] for c in charts_of(html)}
    html.write_text("<p>my notes</p>")
    refused = profkit("report", str(run))
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert line == (f"profkit: error: report {html}: an existing file profkit did not write; "
                    "refusing to overwrite it (give another name with -o FILE)")
    assert html.read_text() == "<p>my notes</p>"


def test_report_of_a_record_folder_rewrites_its_own_report_as_a_run_folder(
        tmp_path: Path) -> None:
    """`profkit report` on a folder `profkit record` made of a real script: its report.html
    is rewritten in place as a run folder's is, nothing lands in the working folder, and a
    file there that profkit did not write is refused. Then a bad input, with a report
    profkit wrote here earlier, is refused for what it is, not for that report."""
    folder = tmp_path / "rec"
    recorded = subprocess.run(
        [sys.executable, "-m", "profiler_kit", "record", "--wait", "2", "--warmup", "1",
         "--active", "2", "-o", str(folder), str(SCRIPTS / "manual_sgd.py"),
         "--iterations", "8"], capture_output=True, text=True, timeout=300)
    assert recorded.returncode == 0, recorded.stderr
    html = folder / "report.html"
    html.write_text(html.read_text(encoding="utf-8").replace("<title>", "<title>old "),
                    encoding="utf-8")  # still profkit's file, as profkit record left it
    here = tmp_path / "here"
    here.mkdir()
    done = profkit("report", str(folder), cwd=here)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == \
        f"report: {html} (replaced the run's report.html, which profkit wrote)"
    assert "<title>old " not in html.read_text(encoding="utf-8")
    assert {"profiled-steps", "cpu-classes"} <= {c["id"] for c in charts_of(html)}
    assert list(here.iterdir()) == []
    html.write_text("<p>my notes</p>")
    refused = profkit("report", str(folder), cwd=here)
    assert refused.returncode == 2 and refused.stdout == ""
    (line,) = refused.stderr.splitlines()
    assert line == (f"profkit: error: report {html}: an existing file profkit did not write; "
                    "refusing to overwrite it (give another name with -o FILE)")
    assert html.read_text() == "<p>my notes</p>"
    assert profkit("report", str(TRACE), cwd=here).returncode == 0  # ./report.html, profkit's
    (here / "empty.json").write_text("")
    (here / "notrace.json").write_text(json.dumps({"schema": "mine", "rows": [1, 2]}))
    for name, why in (("empty.json", "an empty file"),
                      ("notrace.json", "JSON with neither traceEvents nor benchmark_results")):
        bad = profkit("report", name, cwd=here)
        assert bad.returncode == 2 and bad.stdout == ""
        assert bad.stderr.splitlines() == [
            f"profkit: error: {name}: not a trace, a run or record folder, or a DDP "
            f"benchmark report ({why})"]


def test_analyze_html_beside_the_console_report(tmp_path: Path) -> None:
    out = tmp_path / "a.html"
    done = profkit("analyze", str(TRACE), "--html", str(out))
    assert done.returncode == 0, done.stderr
    assert "Recommendations" in done.stdout  # the console report still prints
    assert {c["kind"] for c in charts_of(out)} == {"plotly", "timeline"}


def test_missing_plotly_is_one_line_saying_how_to_install(tmp_path: Path) -> None:
    fake = tmp_path / "shadow" / "plotly"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")  # a plotly without its JavaScript
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "shadow")}
    done = profkit("report", str(TRACE), "-o", str(tmp_path / "r.html"), env=env)
    assert done.returncode == 2
    assert done.stderr.strip() == ("profkit: error: the HTML report needs plotly (its "
                                   "JavaScript is embedded): pip install 'profkit[report]'")
    assert not (tmp_path / "r.html").exists()
