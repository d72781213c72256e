"""GPU idle time by gap length, against the raw trace: on the five traces whose window is the
whole trace, every gap between merged GPU activities found again from the JSON by hand; on every
GPU trace, the gaps add up to the timeline's idle time."""

from __future__ import annotations

import gzip
import io
import itertools
import json
import statistics

import pytest
from real_traces import DATA, analysis, ns
from rich.console import Console

from profiler_kit.analysis.time.idle_gaps import BOUNDS_NS
from profiler_kit.render.console.analysis import trace_view
from profiler_kit.render.html.report import charts_for
from profiler_kit.render.json.analysis import trace_document
from profiler_kit.render.markdown.analysis import trace_section

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
WHOLE_TRACE = ["a100_event_sync_multi_stream.json.gz", "b200_vllm_eager.json.gz",
               "mi300_normalization_layers.json.gz", "a100_alexnet.json.gz",
               "a100_simple_add.json.gz"]


def _gaps_by_hand(name: str) -> dict[int, list[int]]:
    """Per device: the gaps between the merged spans of its GPU activities, first start to
    last end (the whole-trace window)."""
    with gzip.open(DATA / name, "rt") as f:
        events = json.load(f)["traceEvents"]
    spans: dict[int, list[tuple[int, int]]] = {}
    for e in events:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() in GPU_CATS:
            start = ns(e["ts"])
            spans.setdefault(int(e["args"]["device"]), []).append((start, start + ns(e["dur"])))
    gaps = {}
    for device, found in spans.items():
        out, end = [], None
        for s, e in sorted(found):
            if end is not None and s > end:
                out.append(s - end)
            end = e if end is None else max(end, e)
        gaps[device] = out
    return gaps


@pytest.mark.parametrize("name", WHOLE_TRACE)
def test_the_gaps_are_those_between_the_merged_activities(name):
    a = analysis(name)
    assert a.window == "trace"
    by_hand = _gaps_by_hand(name)
    assert {d.device for d in a.idle_gaps.devices} == set(by_hand)
    for d in a.idle_gaps.devices:
        gaps = by_hand[d.device]
        assert d.count == len(gaps) and d.idle_ns == sum(gaps)
        assert d.median_ns == int(statistics.median(gaps))
        edges = (0, *BOUNDS_NS, float("inf"))
        assert [b.count for b in d.buckets] == [
            sum(lo <= g < hi for g in gaps) for lo, hi in itertools.pairwise(edges)]
        assert [b.idle_ns for b in d.buckets] == [
            sum(g for g in gaps if lo <= g < hi) for lo, hi in itertools.pairwise(edges)]


@pytest.mark.parametrize("name", ["h100_owlv2_dataloader.json.gz", "a100_ddp_nccl_rank0.json.gz",
                                  "a100_recsys_8gpu_rank3.json.gz", "v100_resnet50_train.json.gz",
                                  *WHOLE_TRACE])
def test_the_gaps_add_up_to_the_timelines_idle_time(name):
    """In the steps' window too, where the lead-in before the first activity is a gap."""
    a = analysis(name)
    idle = {d.device: d.idle_ns for d in a.timeline.devices}
    assert {d.device: d.idle_ns for d in a.idle_gaps.devices} == idle
    for d in a.idle_gaps.devices:
        assert sum(b.idle_ns for b in d.buckets) == d.idle_ns
        assert sum(b.count for b in d.buckets) == d.count


def test_a_dataloader_bound_trace_idles_in_a_few_long_gaps():
    """The H100 trace whose DataLoader takes half the step: four gaps of a millisecond or
    more hold 96 % of the idle time, the thousands between kernels under 2 %."""
    (d,) = analysis("h100_owlv2_dataloader.json.gz").idle_gaps.devices
    short, *_, long = d.buckets
    assert long.count == 4 and long.idle_ns / d.idle_ns > 0.95
    assert short.count > 5000 and short.idle_ns / d.idle_ns < 0.02


def test_every_format_shows_it_and_a_cpu_trace_has_none():
    a = analysis("h100_owlv2_dataloader.json.gz")
    console = Console(width=200, file=io.StringIO())
    console.print(trace_view(a, width=200))
    text = console.file.getvalue()
    assert "gpu:0 idle gaps: 5,166 in 512 ms" in text and "≥ 1 ms: 4 (493 ms)" in text
    assert any("idle gaps: 5,166" in line for line in trace_section(a))
    assert trace_document(a)["idle_gaps"]["devices"][0]["count"] == 5166
    (chart,) = [c for c in charts_for([a]) if c.id == "idle-gaps"]
    assert sum(sum(bar["y"]) for bar in chart.data) == pytest.approx(
        a.idle_gaps.devices[0].idle_ns / 1e6)
    cpu = analysis("cpu_only_gloo.json.gz")
    assert cpu.idle_gaps is None and trace_document(cpu)["idle_gaps"] is None
    assert not any("idle gaps" in line for line in trace_section(cpu))
