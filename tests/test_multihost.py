"""``profkit run ddp`` and ``profkit run pipeline`` under ``torchrun --nnodes 2`` on two
hosts made on this machine (network namespaces joined by a veth pair, gloo over it, the
run folder not shared): rank 0's host writes the run folder with both ranks' traces
(rank 1's sent over), each rank's host is recorded, the job view and the merged trace
name both hosts, and the report is the one-host run's; a slower link moves the
collectives' transfer time and not the ranks' waits. A host that never joins ends
within elastic's join timeout with its error; one killed mid-run, or while it sends its
traces, or whose link goes down, is named by rank 0 after the rank timeout; losing rank
0's host, or the link to it, ends the other host's rank with one line."""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

import pytest
from two_hosts import kill_host, link_down, start_on, stop, stopped_in, two_hosts, why_not

from profiler_kit import api
from profiler_kit.measure.distributed.gather import STOP_BEFORE_SENDING_ENV

REASON = why_not()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(REASON is not None, reason=REASON or "")]
PORT = 29511
BOUND_S = 90
RATE_MBIT = 1000  # the slower link: resnet18's 47 MB of gradients take 0.4 s a way


# what the hosts run: ``profkit run`` and its options (without --out and --iterations)
DDP = ("ddp", "--model", "resnet18", "--batch-size", "2", "--image-size", "32",
       "--strategies", "ddp-w2", "--warmup", "1", "--profile-wait", "0", "--profile-warmup",
       "0", "--profile-active", "2")
# a one-layer transformer cut in two stages, against DDP; one round
PIPELINE = ("pipeline", "--model", "transformer", "--layers", "1", "--hidden", "32",
            "--heads", "2", "--seq-len", "8", "--vocab", "50", "--global-batch", "8",
            "--micro-batches", "2", "--strategies", "ddp,gpipe", "--warmup", "1",
            "--profile-wait", "0", "--profile-warmup", "1", "--profile-active", "1",
            "--repeats", "1")


def _torchrun(node_rank: int, out: Path, join_timeout_s: int, *more: str,
              run: tuple[str, ...] = DDP) -> list[str]:
    """The torchrun line of one host; ``more``: further options of ``profkit run``."""
    return [sys.executable, "-m", "torch.distributed.run", "--nnodes", "2",
            "--nproc-per-node", "1", "--node-rank", str(node_rank), "--rdzv-backend", "c10d",
            "--rdzv-endpoint", f"10.231.0.1:{PORT}", "--rdzv-conf",
            f"join_timeout={join_timeout_s}",
            "-m", "profiler_kit", "run", *run, "--out", str(out),
            *(more or ("--iterations", "3"))]


def _wait(procs, bound_s: float) -> list[int]:
    deadline = time.monotonic() + bound_s
    try:
        for p in procs:
            p.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        for p in procs:
            stop(p)
    return [p.returncode for p in procs]


def _run_on_two_hosts(tmp: Path, rate_mbit: int | None = None, *more: str,
                      run: tuple[str, ...] = DDP) -> Path:
    """A run on two hosts (the second with a disk of its own); its run folder."""
    out = tmp / "out"
    with two_hosts(tmp, rate_mbit=rate_mbit) as hosts:
        # the second host writes to a disk of its own: its traces must travel to rank 0
        procs = [start_on(h, tmp / "hosts", _torchrun(i, out, 30, *more, run=run),
                          tmp / f"{i}.log", private=out if i else None)
                 for i, h in enumerate(hosts)]
        codes = _wait(procs, BOUND_S)
    logs = [(tmp / f"{i}.log").read_text(errors="replace") for i in range(2)]
    assert codes == [0, 0], "\n".join(log[-3000:] for log in logs)
    assert "profkit tensorboard" in logs[0] and "profkit tensorboard" not in logs[1]
    (run_dir,) = (out / run[0]).iterdir()
    return run_dir


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return _run_on_two_hosts(tmp_path_factory.mktemp("two_hosts"))


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


def _run_on_one_host(tmp: Path, run: tuple[str, ...] = DDP) -> Path:
    """The same ``profkit run`` line under torchrun on one host (both ranks here)."""
    import subprocess

    out = tmp / "out"
    line = _torchrun(0, out, 30, run=run)
    at = line.index("--nnodes")
    line[at:line.index("-m", at)] = ["--standalone", "--nproc-per-node", "2"]
    done = subprocess.run(line, capture_output=True, text=True, timeout=BOUND_S)
    assert done.returncode == 0, done.stderr[-3000:]
    (run_dir,) = (out / run[0]).iterdir()
    return run_dir


def test_two_hosts_give_the_report_of_one_host(run_dir, tmp_path):
    """The same configuration on one host: the same strategies, samples per rank, traces,
    collectives matched across ranks and summary rows; only the times and hosts differ."""
    here = _run_on_one_host(tmp_path)
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
    assert len(_job(here).instances) == len(_job(run_dir).instances)

    assert len(_rows(here)) > 3 and _rows(here) == _rows(run_dir)


def _rows(d: Path) -> list[str]:
    """The first cell of every table row of a run's summary.md."""
    return [line.split("|")[1].strip() for line in (d / "summary.md").read_text().splitlines()
            if line.startswith("|") and not set(line) <= set("|-: ")]


def test_pipeline_on_two_hosts_gives_the_report_of_one_host(tmp_path):
    """``profkit run pipeline`` (DDP against a two-stage GPipe of a small transformer)
    on two hosts, host B's disk its own: rank 0's folder holds both ranks' traces of
    each strategy, each rank's host is recorded, and the report is the one-host run's:
    strategies, samples per rank, traces, each rank's bubble, the schedule and stages,
    send/recv pairs matched across the hosts, summary rows."""
    for side in ("one", "two"):
        (tmp_path / side).mkdir()
    two = _run_on_two_hosts(tmp_path / "two", run=PIPELINE)
    one = _run_on_one_host(tmp_path / "one", run=PIPELINE)
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
    assert len(_rows(one)) > 3 and _rows(one) == _rows(two)


def _job(run_dir: Path):
    (w2,) = json.loads((run_dir / "run.json").read_text())["strategies"]
    (job,) = api.job_view([run_dir / w2["dir"]])
    return job


def test_a_slower_link_moves_transfer_not_wait(run_dir, tmp_path):
    """The link held to 1 Gbit/s (a token bucket on each end): each all-reduce's transfer
    grows, the ranks' waits for each other do not grow with it."""
    fast = _job(run_dir)
    slow = _job(_run_on_two_hosts(tmp_path, rate_mbit=RATE_MBIT))
    assert len(slow.instances) == len(fast.instances)
    more_transfer = (statistics.median(i.transfer_ns for i in slow.instances)
                     - statistics.median(i.transfer_ns for i in fast.instances))
    more_wait = (statistics.median(i.max_wait_ns for i in slow.instances)
                 - statistics.median(i.max_wait_ns for i in fast.instances))
    assert more_transfer >= 50e6
    assert more_wait < 0.5 * more_transfer


def test_a_host_that_never_joins_ends_at_the_join_timeout(tmp_path):
    with two_hosts(tmp_path) as (first, _second):
        start = time.monotonic()
        (proc,) = [start_on(first, tmp_path / "hosts", _torchrun(0, tmp_path / "out", 5),
                            tmp_path / "0.log")]
        (code,) = _wait([proc], 60)
        took = time.monotonic() - start
    log = (tmp_path / "0.log").read_text(errors="replace")
    assert code != 0 and took < 60
    assert "RendezvousTimeoutError" in log, log[-3000:]
    assert not (tmp_path / "out").exists()


RANK_TIMEOUT_S = 10


def _sweep_until_second(tmp: Path, hosts) -> list:
    """Both hosts run a bucket sweep of two configurations; back (the processes) once
    the second configuration has run for a second."""
    out = tmp / "out"
    more = ("--bucket-cap-mb", "25,1", "--iterations", "20", "--repeats", "1",
            "--rank-timeout", str(RANK_TIMEOUT_S))
    procs = [start_on(h, tmp / "hosts", _torchrun(i, out, 30, *more), tmp / f"{i}.log",
                      private=out if i else None)
             for i, h in enumerate(hosts)]
    deadline = time.monotonic() + BOUND_S
    # rank 0 makes the second configuration's folder as it starts it
    while not list(out.glob("ddp/*/bucket_cap_mb=1.0")) and time.monotonic() < deadline:
        assert procs[0].poll() is None, (tmp / "0.log").read_text(errors="replace")
        time.sleep(0.1)
    time.sleep(1.0)
    return procs


def test_a_host_that_drops_out_mid_run_is_named(tmp_path):
    """Every process of host B killed while the second configuration of a bucket sweep
    runs: host A's side ends within the rank timeout (plus start-up slack), with one line
    naming host B and its rank and the timeout, the first configuration kept whole."""
    out = tmp_path / "out"
    with two_hosts(tmp_path) as hosts:
        procs = _sweep_until_second(tmp_path, hosts)
        assert kill_host(hosts[1].netns)
        killed = time.monotonic()
        (code, _) = _wait(procs, RANK_TIMEOUT_S + 50)
        took = time.monotonic() - killed
    log = (tmp_path / "0.log").read_text(errors="replace")
    assert code != 0, log[-3000:]
    # silence is judged after the timeout, less the one beat that may have gone unseen
    assert RANK_TIMEOUT_S - 1 <= took < RANK_TIMEOUT_S + 45, (took, log[-3000:])
    said = " ".join(log.split())  # the console wraps long lines
    line = (f"failed bucket_cap_mb=1.0/ddp-w2: RankFailure: host-b (rank 1) dropped out "
            f"during ddp-w2: no sign of life for {RANK_TIMEOUT_S} s (--rank-timeout)")
    assert said.count(line) == 1 and said.count("failed bucket_cap_mb=") == 1, log[-3000:]
    (run_json,) = out.glob("ddp/*/run.json")
    record = json.loads(run_json.read_text())
    first, second = record["strategies"]
    assert (first["status"], second["status"]) == ("ok", "failed")
    assert len(first["per_rank_samples_ns"]) == 2 and all(
        len(samples) == 20 for samples in first["per_rank_samples_ns"])
    traces = sorted((run_json.parent / first["dir"]).glob("rank*.pt.trace.json"))
    assert [json.loads(t.read_text())["host_name"] for t in traces] == ["host-a", "host-b"]
    assert "host-b (rank 1)" in second["error"]


def _watch(procs, logs: list[Path], text: str, bound_s: float) -> tuple[list, list]:
    """Until every process ended (killed after ``bound_s``): each one's (exit code,
    seconds until it ended) and the seconds until ``text`` first appeared in each log
    (None: never)."""
    start = time.monotonic()
    ended: list = [None] * len(procs)
    seen: list = [None] * len(procs)
    try:
        while None in ended and time.monotonic() - start < bound_s:
            now = time.monotonic() - start
            for i, (p, log) in enumerate(zip(procs, logs, strict=True)):
                if seen[i] is None and text in log.read_text(errors="replace"):
                    seen[i] = now
                if ended[i] is None and p.poll() is not None:
                    ended[i] = (p.returncode, now)
            time.sleep(0.1)
    finally:
        for p in procs:
            stop(p)
    return ended, seen


def test_a_link_that_goes_down_ends_both_hosts(tmp_path):
    """Host B's end of the link down while the second configuration runs, every process
    alive: host A names host B as dropped out, as when it was killed; host B's rank says
    in one line that it lost rank 0's host and ends at the rank timeout (its waits on the
    store would last until the kernel gives the connection up); host B's torchrun, whose
    agent waits on the rendezvous store, ends when its kernel gives up (tcp_retries2=6
    here: about 25 s; 15, about 15 minutes, by default)."""
    out = tmp_path / "out"
    logs = [tmp_path / "0.log", tmp_path / "1.log"]
    with two_hosts(tmp_path, tcp_retries2=6) as hosts:
        procs = _sweep_until_second(tmp_path, hosts)
        link_down(hosts[1])
        ended, seen = _watch(procs, logs, "lost the connection", RANK_TIMEOUT_S + 50)
    said = [" ".join(log.read_text(errors="replace").split()) for log in logs]
    assert None not in ended, (ended, said[1][-3000:])
    (code_a, took_a), (code_b, took_b) = ended
    # rank 0 watched host B's beats all along: its silence counts from the link going down
    assert code_a != 0 and RANK_TIMEOUT_S - 1 <= took_a < RANK_TIMEOUT_S + 30, (
        took_a, said[0][-3000:])
    line = (f"failed bucket_cap_mb=1.0/ddp-w2: RankFailure: host-b (rank 1) dropped out "
            f"during ddp-w2: no sign of life for {RANK_TIMEOUT_S} s (--rank-timeout)")
    assert said[0].count(line) == 1, said[0][-3000:]
    lost = re.findall(r"profkit: error: rank 1 \(host-b\) lost the connection to rank 0's "
                      r"host host-a \(the run's store at host-a:\d+\): no answer for "
                      rf"{RANK_TIMEOUT_S} s \(--rank-timeout\)", said[1])
    assert len(lost) == 1 and said[1].count("lost the connection") == 1, said[1][-3000:]
    assert RANK_TIMEOUT_S <= seen[1] < RANK_TIMEOUT_S + 5, seen
    assert code_b != 0 and took_b < 25 + 20, (took_b, said[1][-3000:])
    first, second = json.loads(next(out.glob("ddp/*/run.json")).read_text())["strategies"]
    assert (first["status"], second["status"]) == ("ok", "failed")


def test_losing_rank_0s_host_ends_the_other_host(tmp_path):
    """Every process of host A (rank 0's, with the run's store) killed while the second
    configuration runs: its kernel resets the connections, so host B's rank says at once
    in one line that it lost rank 0's host, and host B's torchrun ends within seconds."""
    logs = [tmp_path / "0.log", tmp_path / "1.log"]
    with two_hosts(tmp_path) as hosts:
        procs = _sweep_until_second(tmp_path, hosts)
        assert kill_host(hosts[0].netns)
        ended, seen = _watch(procs, logs, "lost the connection", 30)
    said = " ".join(logs[1].read_text(errors="replace").split())
    code_b, took_b = ended[1]
    assert code_b != 0 and took_b < 10, (took_b, said[-3000:])
    lost = re.findall(r"profkit: error: rank 1 \(host-b\) lost the connection to rank 0's "
                      r"host host-a \(the run's store at host-a:\d+\): \w+", said)
    assert len(lost) == 1 and said.count("lost the connection") == 1, said[-3000:]
    assert seen[1] is not None and seen[1] <= took_b
    assert "Traceback" not in said.partition("lost the connection")[0]  # profkit's own


def test_a_host_that_drops_out_while_sending_its_traces_keeps_the_measurement(tmp_path):
    """Host B's rank stops right before it sends its traces (the one test hook) and the
    host is then killed: rank 0 names host B once silent for the rank timeout, keeps the
    strategy's measurement from both ranks with its own traces, says in one line that
    rank 1's traces are lost and why, and exits 1 (torchrun ends without elastic's exit
    barrier)."""
    out = tmp_path / "out"
    more = ("--iterations", "3", "--repeats", "1", "--rank-timeout", str(RANK_TIMEOUT_S))
    with two_hosts(tmp_path) as hosts:
        procs = [start_on(h, tmp_path / "hosts", _torchrun(i, out, 30, *more),
                          tmp_path / f"{i}.log", private=out if i else None,
                          env={STOP_BEFORE_SENDING_ENV: "1"} if i else None)
                 for i, h in enumerate(hosts)]
        deadline = time.monotonic() + BOUND_S
        while not stopped_in(hosts[1].netns) and time.monotonic() < deadline:
            assert procs[0].poll() is None, (tmp_path / "0.log").read_text(errors="replace")
            time.sleep(0.1)
        assert kill_host(hosts[1].netns)
        killed = time.monotonic()
        (code, _) = _wait(procs, RANK_TIMEOUT_S + 40)
        took = time.monotonic() - killed
    log = (tmp_path / "0.log").read_text(errors="replace")
    assert code == 1, log[-3000:]
    assert RANK_TIMEOUT_S - 1 <= took < RANK_TIMEOUT_S + 30, (took, log[-3000:])
    said = " ".join(log.split())  # the console wraps long lines
    why = ("rank 1's traces are not in the run folder: host-b (rank 1) dropped out while "
           f"sending them to rank 0 (no sign of life for {RANK_TIMEOUT_S} s, --rank-timeout); "
           "the measurement of every rank is kept")
    label = "bucket_cap_mb=25.0/ddp-w2"
    assert said.count(f"profkit: error: {label}: {why}") == 1, log[-3000:]
    assert f"{label} ok" in said and "(without the traces of 1 rank)" in said
    (run_json,) = out.glob("ddp/*/run.json")
    record = json.loads(run_json.read_text())
    (w2,) = record["strategies"]
    assert w2["status"] == "ok" and [len(r) for r in w2["per_rank_samples_ns"]] == [3, 3]
    assert record["report_errors"] == [f"{label}: {why}"]
    assert w2["info"]["files_lost"] == [why]
    folder = run_json.parent / w2["dir"]
    (trace0,) = folder.glob("rank0.*.pt.trace.json")
    assert w2["trace_files"] == [str(trace0.relative_to(run_json.parent))]
    assert not list(folder.glob("*rank1*")) and not list(folder.glob(".*"))
    assert record["environment"]["distributed"]["rank_hosts"] == ["host-a", "host-b"]
    summary = (run_json.parent / "summary.md").read_text()
    assert "## Traces that did not reach the run folder" in summary


def _count_named(trace: Path, name: str) -> int:
    """Events called ``name`` in a trace's raw JSON (not through profkit's loader)."""
    return sum(e.get("name") == name for e in json.loads(trace.read_text())["traceEvents"])


def test_traces_over_the_gather_limit_send_their_summary(tmp_path):
    """With a limit far below a trace's size, host B's rank sends its summary: the run
    folder holds rank 0's trace and rank 1's summary, and the job view reads both."""
    run_dir = _run_on_two_hosts(tmp_path, None, "--iterations", "3",
                                "--gather-limit-mb", "0.001")
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
    assert len(job.instances) == _count_named(trace0, "gloo:all_reduce") > 0
    assert len(summary["calls"]) == len(job.instances)
    assert record["strategies"][0]["info"]["job"]["ranks"] == [0, 1]
