"""Summaries and the job reduction as Dask tasks (``--scheduler``): the same bytes as the
local process pool, an unreadable trace named as there, and a worker that dies in the
middle of a task costs a retry, not a different result."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import msgspec
import pytest

from profiler_kit import api
from profiler_kit.cli import main
from profiler_kit.errors import UsageError
from profiler_kit.sources import dask_tasks, summary_files
from profiler_kit.sources.trace_files import summarize_one

distributed = pytest.importorskip("distributed")

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("ranks")
    for src in (DATA / "gloo_straggler").iterdir():
        (folder / src.name).write_bytes(src.read_bytes())
    (folder / "rank9.pt.trace.json.gz").write_bytes(gzip.compress(b'{"traceEvents": [{'))
    return [folder, DATA / "two_ranks"]


def _encoded(found) -> bytes:
    return summary_files.dumps(list(found), found.unreadable)


def test_the_same_bytes_as_the_local_pool(client, inputs):
    here = api.summarize(inputs)
    there = api.summarize(inputs, scheduler=client)
    assert _encoded(there) == _encoded(here)
    assert [u.path for u in there.unreadable] == [str(inputs[0] / "rank9.pt.trace.json.gz")]
    assert (msgspec.json.encode(api.job_view(there, scheduler=client))
            == msgspec.json.encode(api.job_view(here)))


def test_a_worker_killed_mid_task_is_retried(client, inputs, tmp_path):
    marker = tmp_path / "killed-once"

    def dies_once(task):  # pickled by value: the workers need not import this file
        if not marker.exists():
            marker.touch()
            os._exit(1)
        return summarize_one(task)

    files = api.trace_files(inputs)
    labels = [f.name for f in files]
    there = dask_tasks.summarize_files(client, files, labels, fn=dies_once)
    assert marker.exists()
    local = [summarize_one((f, label, 1)) for f, label in zip(files, labels, strict=True)]
    assert msgspec.json.encode(there) == msgspec.json.encode(local)


def test_cli_local_cluster_writes_the_same_file(inputs, tmp_path):
    plain, dask = tmp_path / "plain.json", tmp_path / "dask.json"
    assert main(["analyze", "--summary-only", *map(str, inputs), "--json", str(plain)]) == 1
    assert main(["analyze", "--summary-only", *map(str, inputs), "--scheduler", "local",
                 "--json", str(dask)]) == 1  # 1: an unreadable trace, named in both
    assert dask.read_bytes() == plain.read_bytes()


def test_bad_addresses_and_the_full_analysis_are_refused(capsys):
    with pytest.raises(UsageError, match="scheduler address"):
        dask_tasks.check_scheduler("localhost:8786")
    assert main(["analyze", str(DATA / "gloo_straggler"), "--scheduler", "local"]) == 2
    assert "only with --summary-only" in capsys.readouterr().err
