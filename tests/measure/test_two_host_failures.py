"""Hosts that fail during a two-host run (see :mod:`test_multihost`): one killed mid-run,
or while it sends its traces, or whose link goes down, is named by rank 0 after the rank
timeout; losing rank 0's host, or the link to it, ends the other host's rank with one line."""

from __future__ import annotations

import json
import re
import time

import pytest
from multihost_runs import (
    BOUND_S,
    PACED,
    RANK_TIMEOUT_S,
    SWEPT,
    sweep_until_second,
    torchrun,
    wait,
    watch,
)
from two_hosts import kill_host, link_down, start_on, stopped_in, two_hosts, why_not

from profiler_kit.measure.distributed.gather import STOP_BEFORE_SENDING_ENV

REASON = why_not()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(REASON is not None, reason=REASON or "")]


def test_a_host_that_drops_out_mid_run_is_named(tmp_path):
    """Every process of host B killed while the second configuration of a sweep
    runs: host A's side ends within the rank timeout (plus start-up slack), with one line
    naming host B and its rank and the timeout, the first configuration kept whole."""
    out = tmp_path / "out"
    with two_hosts(tmp_path) as hosts:
        procs = sweep_until_second(tmp_path, hosts)
        assert kill_host(hosts[1].netns)
        killed = time.monotonic()
        (code, _) = wait(procs, RANK_TIMEOUT_S + 50)
        took = time.monotonic() - killed
    log = (tmp_path / "0.log").read_text(errors="replace")
    assert code != 0, log[-3000:]
    # silence is judged after the timeout, less the one beat that may have gone unseen
    assert RANK_TIMEOUT_S - 1 <= took < RANK_TIMEOUT_S + 45, (took, log[-3000:])
    said = " ".join(log.split())  # the console wraps long lines
    line = (f"failed {SWEPT}/w2: RankFailure: host-b (rank 1) dropped out "
            f"during w2: no sign of life for {RANK_TIMEOUT_S} s (--rank-timeout)")
    assert said.count(line) == 1 and said.count("failed pace_ms=") == 1, log[-3000:]
    (run_json,) = out.glob("paced/*/run.json")
    record = json.loads(run_json.read_text())
    first, second = record["strategies"]
    assert (first["status"], second["status"]) == ("ok", "failed")
    assert len(first["per_rank_samples_ns"]) == 2 and all(
        len(samples) == 20 for samples in first["per_rank_samples_ns"])
    traces = sorted((run_json.parent / first["dir"]).glob("rank*.pt.trace.json"))
    assert [json.loads(t.read_text())["host_name"] for t in traces] == ["host-a", "host-b"]
    assert "host-b (rank 1)" in second["error"]


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
        procs = sweep_until_second(tmp_path, hosts)
        link_down(hosts[1])
        ended, seen = watch(procs, logs, "lost the connection", RANK_TIMEOUT_S + 50)
    said = [" ".join(log.read_text(errors="replace").split()) for log in logs]
    assert None not in ended, (ended, said[1][-3000:])
    (code_a, took_a), (code_b, took_b) = ended
    # rank 0 watched host B's beats all along: its silence counts from the link going down
    assert code_a != 0 and RANK_TIMEOUT_S - 1 <= took_a < RANK_TIMEOUT_S + 30, (
        took_a, said[0][-3000:])
    line = (f"failed {SWEPT}/w2: RankFailure: host-b (rank 1) dropped out "
            f"during w2: no sign of life for {RANK_TIMEOUT_S} s (--rank-timeout)")
    assert said[0].count(line) == 1, said[0][-3000:]
    lost = re.findall(r"profkit: error: rank 1 \(host-b\) lost the connection to rank 0's "
                      r"host host-a \(the run's store at host-a:\d+\): no answer for "
                      rf"{RANK_TIMEOUT_S} s \(--rank-timeout\)", said[1])
    assert len(lost) == 1 and said[1].count("lost the connection") == 1, said[1][-3000:]
    assert RANK_TIMEOUT_S <= seen[1] < RANK_TIMEOUT_S + 5, seen
    assert code_b != 0 and took_b < 25 + 20, (took_b, said[1][-3000:])
    first, second = json.loads(next(out.glob("paced/*/run.json")).read_text())["strategies"]
    assert (first["status"], second["status"]) == ("ok", "failed")


def test_losing_rank_0s_host_ends_the_other_host(tmp_path):
    """Every process of host A (rank 0's, with the run's store) killed while the second
    configuration runs: its kernel resets the connections, so host B's rank says at once
    in one line that it lost rank 0's host, and host B's torchrun ends within seconds."""
    logs = [tmp_path / "0.log", tmp_path / "1.log"]
    with two_hosts(tmp_path) as hosts:
        procs = sweep_until_second(tmp_path, hosts)
        assert kill_host(hosts[0].netns)
        ended, seen = watch(procs, logs, "lost the connection", 30)
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
    more = ("--pace-ms", "100", "--iterations", "3", "--rank-timeout", str(RANK_TIMEOUT_S))
    with two_hosts(tmp_path) as hosts:
        procs = [start_on(h, tmp_path / "hosts", torchrun(i, out, 30, *more, run=PACED),
                          tmp_path / f"{i}.log", private=out if i else None,
                          env={STOP_BEFORE_SENDING_ENV: "1"} if i else None)
                 for i, h in enumerate(hosts)]
        deadline = time.monotonic() + BOUND_S
        while not stopped_in(hosts[1].netns) and time.monotonic() < deadline:
            assert procs[0].poll() is None, (tmp_path / "0.log").read_text(errors="replace")
            time.sleep(0.1)
        assert kill_host(hosts[1].netns)
        killed = time.monotonic()
        (code, _) = wait(procs, RANK_TIMEOUT_S + 40)
        took = time.monotonic() - killed
    log = (tmp_path / "0.log").read_text(errors="replace")
    assert code == 1, log[-3000:]
    assert RANK_TIMEOUT_S - 1 <= took < RANK_TIMEOUT_S + 30, (took, log[-3000:])
    said = " ".join(log.split())  # the console wraps long lines
    why = ("rank 1's traces are not in the run folder: host-b (rank 1) dropped out while "
           f"sending them to rank 0 (no sign of life for {RANK_TIMEOUT_S} s, --rank-timeout); "
           "the measurement of every rank is kept")
    label = "pace_ms=100.0/w2"
    assert said.count(f"profkit: error: {label}: {why}") == 1, log[-3000:]
    assert f"{label} ok" in said and "(without the traces of 1 rank)" in said
    (run_json,) = out.glob("paced/*/run.json")
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

