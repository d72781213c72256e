"""Every input accounted for: a trace that cannot be read is named (warning line and the
JSON's ``unreadable``), the others are analyzed, and the exit status is 1; alone, it gets
its own clear error. The same for ``.json`` and ``.json.gz``."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from profiler_kit import api

DATA = Path(__file__).parents[1] / "data"
RANKS = DATA / "two_ranks"


def profkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {"COLUMNS": "100", "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
    return subprocess.run([sys.executable, "-m", "profiler_kit", *args], capture_output=True,
                          text=True, env=env, timeout=120, cwd=cwd)


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


@pytest.fixture(params=["gz", "plain"])
def job(request, tmp_path: Path) -> Path:
    """A folder of two rank traces, rank0's cut in half (as a crashed job leaves it)."""
    folder = tmp_path / "job"
    folder.mkdir()
    for rank in (0, 1):
        source = RANKS / f"rank{rank}.json.gz"
        if request.param == "gz":
            shutil.copy(source, folder / source.name)
        else:
            (folder / f"rank{rank}.json").write_bytes(gzip.decompress(source.read_bytes()))
    truncate(next(folder.glob("rank0.*")))
    return folder


def test_a_truncated_rank_is_named_and_the_other_analyzed(job: Path) -> None:
    bad = next(job.glob("rank0.*")).relative_to(job.parent)
    r = profkit("analyze", "job", "--json", "-", cwd=job.parent)
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith(f"profkit: warning: {bad}: unreadable, left out (truncated")
    assert len(r.stderr.strip().splitlines()) == 1
    doc = json.loads(r.stdout)
    assert [t["label"] for t in doc["traces"]] == ["rank1"]
    (entry,) = doc["unreadable"]
    assert entry["path"] == str(bad) and entry["reason"].startswith("truncated")

    analyses = api.analyze([job])
    assert len(analyses) == 1 and [u.path for u in analyses.unreadable] == [
        str(next(job.glob("rank0.*")))]
    summaries = api.summarize([job])
    assert len(summaries) == 1 and len(summaries.unreadable) == 1

    r = profkit("compare", "job", cwd=job.parent)
    assert r.returncode == 1 and "unreadable, left out" in r.stderr
    r = profkit("analyze", "--summary-only", "job", cwd=job.parent)
    assert r.returncode == 1 and "unreadable, left out" in r.stderr
    written = json.loads(r.stdout)
    assert written["schema"] == "profkit.rank-summaries/1"
    assert [u["path"] for u in written["unreadable"]] == [str(bad)]
    # reduced elsewhere, the summaries still say which rank is missing
    (job.parent / "summaries.json").write_text(r.stdout)
    r = profkit("analyze", "summaries.json", "--json", "-", cwd=job.parent)
    assert r.returncode == 1 and r.stderr.startswith(f"profkit: warning: {bad}: unreadable")
    assert [u["path"] for u in json.loads(r.stdout)["unreadable"]] == [str(bad)]


def test_a_truncated_rank_is_listed_in_the_html_report(job: Path) -> None:
    bad = next(job.glob("rank0.*")).relative_to(job.parent)
    r = profkit("report", "job", "-o", "r.html", cwd=job.parent)
    assert r.returncode == 1
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith(f"profkit: warning: {bad}: unreadable, left out (truncated")
    html = (job.parent / "r.html").read_text(encoding="utf-8")
    assert "Left out, unreadable" in html and f"<code>{bad}</code>" in html
    r = profkit("analyze", "job", "--html", "a.html", cwd=job.parent)
    assert r.returncode == 1
    assert f"<code>{bad}</code>" in (job.parent / "a.html").read_text(encoding="utf-8")


def test_a_truncated_trace_alone_gets_its_own_error(job: Path) -> None:
    (next(job.glob("rank1.*"))).unlink()
    for target in ("job", str(next(job.glob("rank0.*")).relative_to(job.parent))):
        r = profkit("analyze", target, cwd=job.parent)
        assert r.returncode == 2
        (line,) = r.stderr.strip().splitlines()
        assert line.startswith("profkit: error: job/rank0.") and "truncated" in line, line
        assert "no trace files" not in line


def test_clean_runs_list_nothing_unreadable(tmp_path: Path) -> None:
    r = profkit("analyze", str(RANKS), "--json", "-", cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["unreadable"] == []
