"""One place decides what a path is: each kind told apart, on real files where there are
some (a trace of tests/data, a merged trace, rank summaries written by profkit) and on
the smallest file of each other kind."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil
from pathlib import Path

import pytest

from profiler_kit import api
from profiler_kit.sources import summary_files
from profiler_kit.util.path_kinds import PathKind, kind_of

DATA = Path(__file__).parent / "data"
TRACE = DATA / "cpu_torch_profiler.pt.trace.json.gz"
RANKS = DATA / "gloo_straggler"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("kinds")
    files = {"trace": TRACE, "folder": RANKS}
    plain = root / "renamed.json"  # a trace by its content, not its name
    plain.write_bytes(gzip.decompress(TRACE.read_bytes()))
    files["plain trace"] = plain
    api.merge([RANKS], root / "job.json.gz")
    files["merged"] = root / "job.json.gz"
    summaries = api.summarize([RANKS], jobs=1)
    (root / "ranks.json").write_bytes(summary_files.dumps(list(summaries)))
    files["summaries"] = root / "ranks.json"
    run = root / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"schema": "profkit.run/1", "strategies": []}))
    files["run folder"], files["run record"] = run, run / "run.json"
    (root / "ddp_report.json").write_text(json.dumps({"metadata": {}, "benchmarks": []}))
    files["ddp report"] = root / "ddp_report.json"
    (root / "w.memory_categories.json").write_text(json.dumps({"format": 1, "devices": {}}))
    files["categories"] = root / "w.memory_categories.json"
    (root / "snap.bin").write_bytes(pickle.dumps({"segments": []}))
    files["snapshot"] = root / "snap.bin"  # a pickle by its first byte, whatever its name
    (root / "notes.txt").write_text("hello")
    files["other"] = root / "notes.txt"
    files["missing"] = root / "nothing.json"
    shutil.copy(TRACE, root / "copy.pt.trace.json.gz")
    return files


@pytest.mark.parametrize(("name", "kind"), [
    ("trace", PathKind.TRACE), ("plain trace", PathKind.TRACE),
    ("merged", PathKind.MERGED_TRACE), ("summaries", PathKind.RANK_SUMMARIES),
    ("run folder", PathKind.RUN_FOLDER), ("run record", PathKind.RUN_RECORD),
    ("ddp report", PathKind.DDP_REPORT), ("categories", PathKind.MEMORY_CATEGORIES),
    ("snapshot", PathKind.SNAPSHOT), ("folder", PathKind.FOLDER),
    ("other", PathKind.OTHER), ("missing", PathKind.MISSING)])
def test_each_kind_is_told_apart(made, name, kind):
    assert kind_of(made[name]) is kind


def test_the_inputs_of_a_command_are_sorted_once(made, tmp_path):
    """``sources.inputs.resolve``: each path with its kind, grouped as the commands read
    them; the traces at or below the paths found once each, labelled."""
    from profiler_kit.sources.inputs import resolve

    record = tmp_path / "rec"
    (record / ".record").mkdir(parents=True)  # a recording under way
    names = ["trace", "run folder", "run record", "ddp report", "categories", "folder"]
    inputs = resolve([*(made[n] for n in names), record])
    assert inputs.kinds[:len(names)] == tuple(kind_of(made[n]) for n in names)
    assert inputs.runs == (made["run folder"],)
    assert inputs.reports == (made["run record"], made["ddp report"])
    assert inputs.records == (record,)
    assert inputs.may_hold_memory and not inputs.only_summaries
    assert not inputs.one_run_or_record and resolve([made["run folder"]]).one_run_or_record
    assert not resolve([record]).one_run_or_record  # still recording: no report of its own
    (record / "record.json").write_text("{}")
    assert resolve([record]).one_run_or_record
    assert resolve([made["categories"]]).may_hold_memory
    only_traces = resolve([made["trace"], made["plain trace"]])
    assert not only_traces.may_hold_memory
    files, labels = resolve([made["trace"], made["folder"], made["trace"]]).labelled_traces()
    assert files[0] == made["trace"] and len(files) == len(set(files)) == 1 + len(
        list(made["folder"].rglob("*.json.gz")))
    assert len(set(labels)) == len(labels)
    assert resolve(made["summaries"]).only_summaries
    assert not resolve([made["summaries"], made["trace"]]).only_summaries
