"""Send/recv matched between two real gloo ranks, made here: each pair's wait and
transfer against the raw traces by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profiler_kit import api
from profiler_kit.util.ports import free_port

SCRIPT = """
import os, sys, time, torch, torch.distributed as dist
from torch.profiler import profile, ProfilerActivity, schedule
rank, out = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", rank=rank, world_size=2)
t = torch.ones(1000)
with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
             schedule=schedule(wait=0, warmup=1, active=3),
             on_trace_ready=lambda p: p.export_chrome_trace(f"{out}/rank{rank}.pt.trace.json")
             ) as p:
    for _ in range(4):
        if rank == 0:
            time.sleep(0.02)          # stage 0 computes, stage 1 waits in its recv
            dist.send(t, 1)
            dist.recv(t, 1)
        else:
            dist.recv(t, 0)
            time.sleep(0.01)
            dist.send(t, 0)
        p.step()
dist.destroy_process_group()
"""


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("p2p")
    env = {**os.environ, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port()),
           "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT, str(r), str(out)], env=env)
             for r in (0, 1)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    return out


def _spans(trace: Path, name: str) -> list[tuple[float, float]]:
    events = json.loads(trace.read_text())["traceEvents"]
    return sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("ph") == "X" and e.get("name") == name)


def test_sends_pair_with_recvs_and_waits_by_hand(traces: Path) -> None:
    (job,) = api.analyze(traces).jobs
    p = job.pipeline
    assert p is not None and p.unmatched_calls == 0
    assert len(p.transfers) == 6  # 3 profiled steps, one send each way
    # by hand: the k-th send of a rank pairs with the k-th recv of the other
    pairs = []
    for src, dst in ((0, 1), (1, 0)):
        sends = _spans(traces / f"rank{src}.pt.trace.json", "gloo:send")
        recvs = _spans(traces / f"rank{dst}.pt.trace.json", "gloo:recv")
        pairs += [(src, s, r) for s, r in zip(sends, recvs, strict=True)]
    pairs.sort(key=lambda x: min(x[1][0], x[2][0]))
    for t, (src, s, r) in zip(p.transfers, pairs, strict=True):
        assert t.src == src and t.size_bytes == 4000
        assert t.wait_ns == pytest.approx(abs(r[0] - s[0]) * 1000, abs=2)
        assert t.transfer_ns == pytest.approx((max(s[1], r[1]) - max(s[0], r[0])) * 1000, abs=2)
    # stage 1 waits in its recv while stage 0 sleeps (20 ms a step, less what it overlaps)
    s0, s1 = p.stages
    assert s1.recv_wait_ns > s0.recv_wait_ns
    assert 0 <= p.bubble_share <= 1


def test_the_html_report_draws_each_stages_computation_and_bubble(traces: Path) -> None:
    from profiler_kit.render.html.job_charts import job_charts

    (job,) = api.analyze(traces).jobs
    (chart,) = [c for c in job_charts([job]) if c.id.startswith("job-pipeline")]
    busy, bubble = chart.data
    assert busy["x"] == bubble["x"] == ["rank 0", "rank 1"]
    for s, b, i in zip(job.pipeline.stages, busy["y"], bubble["y"], strict=True):
        assert (b, i) == pytest.approx((s.busy_ns / 1e6, s.bubble_ns / 1e6))
        assert b + i == pytest.approx(s.window_ns / 1e6), "the bars add up to the windows"
    assert "bubble" in chart.caption


def test_the_pipeline_report_draws_in_a_browser(traces: Path, tmp_path: Path) -> None:
    from test_report_browser import check_in_browser

    html = api.report([traces], tmp_path / "pipeline.html", jobs=1)
    ids = {c["id"] for c in check_in_browser(html, "pipeline")}
    assert {"job-pipeline-0", "profiled-steps"} <= ids
