"""``profkit run ddp`` under ``torchrun --nnodes 2`` on two hosts made on this machine
(network namespaces joined by a veth pair, gloo over it, the run folder not shared): rank
0's host writes the run folder with both ranks' traces (rank 1's sent over), each rank's
host is recorded, the job view and the merged trace name both hosts, and the report is the
one-host run's; a slower link moves the collectives' transfer time and not the ranks'
waits. A host that never joins ends within elastic's join timeout with its error.
``profkit run pipeline`` on two hosts gives the one-host report too, and traces over the
gather limit send their summary instead. (Hosts that fail mid-run: test_two_host_failures.)"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import pytest
from multihost_runs import (
    PIPELINE,
    RATE_MBIT,
    count_named,
    job,
    rows,
    run_on_one_host,
    run_on_two_hosts,
    torchrun,
    wait,
)
from two_hosts import start_on, two_hosts, why_not

from profiler_kit import api

REASON = why_not()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return run_on_two_hosts(tmp_path_factory.mktemp("two_hosts"))


@pytest.fixture(scope="module")
def slow_run_dir(tmp_path_factory) -> Path:
    """The same run over a link held to 1 Gbit/s, with a gather limit far below a trace's
    size: host B's rank sends its summary instead of its trace (one run for two tests)."""
    return run_on_two_hosts(tmp_path_factory.mktemp("slow_link"), RATE_MBIT, "--iterations",
                            "3", "--gather-limit-mb", "0.001")


def test_two_hosts_one_run_folder(run_dir, tmp_path):
    record = json.loads((run_dir / "run.json").read_text())
    dist = record["environment"]["distributed"]
    assert dist["launcher"] == "torchrun" and dist["world_size"] == 2
    assert dist["rank_hosts"] == ["host-a", "host-b"] and dist["hosts"] == 2
    (w2,) = record["strategies"]
    assert w2["status"] == "ok" and len(w2["per_rank_samples_ns"]) == 2
    folder = run_dir / w2["dir"]
    traces = sorted(folder.glob("rank*.pt.trace.json"))  # rank 1's came through the store
    assert sorted(p.name for p in folder.glob("key_averages.rank1.*")) == [
        "key_averages.rank1.json", "key_averages.rank1.txt"]
    assert [t.name.split(".")[0] for t in traces] == ["rank0", "rank1"]
    assert [json.loads(t.read_text())["host_name"] for t in traces] == ["host-a", "host-b"]
    (job,) = api.job_view([folder])
    assert job.ranks == (0, 1) and job.instances
    # each rank's host from its own trace, as the launcher recorded it
    assert [r.host for r in job.per_rank] == dist["rank_hosts"]
    assert job.straggler is None or job.straggler.host == dist["rank_hosts"][job.straggler.rank]
    report = api.merge([folder], tmp_path / "job.json.gz")
    assert [r.host for r in report.ranks] == ["host-a", "host-b"]


def test_two_hosts_give_the_report_of_one_host(run_dir, tmp_path):
    """The same configuration on one host: the same strategies, samples per rank, traces,
    collectives matched across ranks and summary rows; only the times and hosts differ."""
    here = run_on_one_host(tmp_path)
    one, two = (json.loads((d / "run.json").read_text()) for d in (here, run_dir))
    assert one["environment"]["distributed"]["hosts"] == 1
    shape = [(s["name"], s["status"], [len(r) for r in s["per_rank_samples_ns"]])
             for s in one["strategies"]]
    assert shape == [(s["name"], s["status"], [len(r) for r in s["per_rank_samples_ns"]])
                     for s in two["strategies"]]

    def traces(d: Path, record: dict) -> list[str]:
        (w2,) = record["strategies"]
        return [p.name.split(".")[0] for p in sorted((d / w2["dir"]).glob("rank*.pt.trace.json"))]

    assert traces(here, one) == traces(run_dir, two) == ["rank0", "rank1"]
    assert len(job(here).instances) == len(job(run_dir).instances)

    assert len(rows(here)) > 3 and rows(here) == rows(run_dir)


def test_a_slower_link_moves_transfer_not_wait(run_dir, slow_run_dir):
    """The link held to 1 Gbit/s (a token bucket on each end): each all-reduce's transfer
    grows, the ranks' waits for each other grow less (rank 1's side read from the summary
    it sent). A split that put the link's time in the waits would show the waits growing
    as much as the transfers or more; on a loaded machine the ranks' skew from being
    descheduled adds to the waits of either run (half as much as the transfers on one CI
    run), so the bound is the transfer's growth, not a fixed share of it."""
    fast = job(run_dir)
    slow = job(slow_run_dir)
    assert len(slow.instances) == len(fast.instances)
    more_transfer = (statistics.median(i.transfer_ns for i in slow.instances)
                     - statistics.median(i.transfer_ns for i in fast.instances))
    more_wait = (statistics.median(i.max_wait_ns for i in slow.instances)
                 - statistics.median(i.max_wait_ns for i in fast.instances))
    assert more_transfer >= 50e6
    assert more_wait < more_transfer


def test_a_host_that_never_joins_ends_at_the_join_timeout(tmp_path):
    with two_hosts(tmp_path) as (first, _second):
        start = time.monotonic()
        (proc,) = [start_on(first, tmp_path / "hosts", torchrun(0, tmp_path / "out", 5),
                            tmp_path / "0.log")]
        (code,) = wait([proc], 60)
        took = time.monotonic() - start
    log = (tmp_path / "0.log").read_text(errors="replace")
    assert code != 0 and took < 60
    assert "RendezvousTimeoutError" in log, log[-3000:]
    assert not (tmp_path / "out").exists()


def test_pipeline_on_two_hosts_gives_the_report_of_one_host(tmp_path):
    """``profkit run pipeline`` (DDP against a two-stage GPipe of a small transformer)
    on two hosts, host B's disk its own: rank 0's folder holds both ranks' traces of
    each strategy, each rank's host is recorded, and the report is the one-host run's:
    strategies, samples per rank, traces, each rank's bubble, the schedule and stages,
    send/recv pairs matched across the hosts, summary rows."""
    for side in ("one", "two"):
        (tmp_path / side).mkdir()
    two = run_on_two_hosts(tmp_path / "two", run=PIPELINE)
    one = run_on_one_host(tmp_path / "one", run=PIPELINE)
    records = [json.loads((d / "run.json").read_text()) for d in (one, two)]
    dist = records[1]["environment"]["distributed"]
    assert dist["rank_hosts"] == ["host-a", "host-b"] and dist["hosts"] == 2
    assert records[0]["environment"]["distributed"]["hosts"] == 1

    def shape(record: dict) -> list:
        return [(s["name"], s["status"], [len(r) for r in s["per_rank_samples_ns"]],
                 s["items_per_step"], len(s["info"]["idle_share_by_rank"]),
                 {k: s["info"]["job"].get(k) for k in ("ranks", "steps", "p2p_transfers")})
                for s in record["strategies"]]

    assert shape(records[0]) == shape(records[1])
    assert [s["name"] for s in records[1]["strategies"]] == ["ddp", "gpipe"]
    assert all(s["status"] == "ok" for s in records[1]["strategies"])
    for s in records[1]["strategies"]:
        folder = two / s["dir"]
        traces = sorted(folder.glob("rank*.pt.trace.json"))  # rank 1's came through the store
        assert [t.name.split(".")[0] for t in traces] == ["rank0", "rank1"]
        assert [json.loads(t.read_text())["host_name"] for t in traces] == ["host-a", "host-b"]
        assert (folder / "key_averages.rank1.json").exists()
        assert sorted(two / t for t in s["trace_files"]) == traces
    gpipe = {d: next(s for s in r["strategies"] if s["name"] == "gpipe")
             for d, r in zip((one, two), records, strict=True)}
    assert gpipe[two]["info"]["job"]["p2p_transfers"] > 0
    (job,) = api.job_view([two / gpipe[two]["dir"]])
    assert [r.host for r in job.per_rank] == ["host-a", "host-b"]
    (job_one,) = api.job_view([one / gpipe[one]["dir"]])
    assert job.pipeline is not None and job_one.pipeline is not None
    assert len(job.pipeline.transfers) == len(job_one.pipeline.transfers) > 0
    assert job.unmatched_calls == job_one.unmatched_calls == 0

    def report(d: Path) -> list:
        doc = json.loads((d / "pipeline_report.json").read_text())
        return [(name, s["schedule"], s["stage_layers"], s["stage_ranks"],
                 [b["rank"] for b in s["bubble"]])
                for point in doc["points"] for name, s in point["strategies"].items()]

    assert report(one) == report(two)
    assert len(rows(one)) > 3 and rows(one) == rows(two)


def test_traces_over_the_gather_limit_send_their_summary(slow_run_dir):
    """With a limit far below a trace's size, host B's rank sends its summary: the run
    folder holds rank 0's trace and rank 1's summary, and the job view reads both."""
    run_dir = slow_run_dir
    record = json.loads((run_dir / "run.json").read_text())
    (w2,) = record["strategies"]
    folder = run_dir / w2["dir"]
    (trace0,) = folder.glob("rank0.*.pt.trace.json")
    assert not list(folder.glob("rank1.*.pt.trace.json"))  # it stayed on host B
    assert (folder / "key_averages.rank1.json").exists()
    assert w2["trace_files"] == [str(trace0.relative_to(run_dir))]
    sent = json.loads((folder / "rank1.summary.json").read_text())
    assert sent["schema"] == "profkit.rank-summaries/1" and sent["unreadable"] == []
    (summary,) = sent["summaries"]
    assert (summary["rank"], summary["host"]) == (1, "host-b")
    (job,) = api.job_view([folder])
    assert job.ranks == (0, 1)
    assert [r.host for r in job.per_rank] == ["host-a", "host-b"]
    # every all-reduce rank 0 recorded is matched with one of rank 1's, by its summary
    assert len(job.instances) == count_named(trace0, "gloo:all_reduce") > 0
    assert len(summary["calls"]) == len(job.instances)
    assert record["strategies"][0]["info"]["job"]["ranks"] == [0, 1]

