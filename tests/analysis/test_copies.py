"""The GPU's copies by direction and memory, against a hand count of the raw trace events:
every memcpy of a trace without steps; on a trace with steps, those whose launch call
(same correlation id) starts inside a ``ProfilerStep#`` span, as the steps' window counts
activities."""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict

import pytest
from real_traces import DATA, analysis, ns

from profiler_kit.render.json.analysis import trace_document
from profiler_kit.render.sections.base import View
from profiler_kit.render.sections.copies import CopiesPresenter, pageable_line

MEMCPY = ("gpu_memcpy", "Memcpy")


def _events(name: str) -> list[dict]:
    with gzip.open(DATA / name, "rt") as f:
        return json.load(f)["traceEvents"]


def _hand(name: str, in_steps: bool) -> dict[tuple[str, str, str], tuple[int, int, int]]:
    """(direction, source, destination) -> (count, total ns, max ns), from the raw events."""
    events = _events(name)
    steps = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events
             if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")]
    launched = {e["args"]["correlation"]: ns(e["ts"]) for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver", "Runtime")
                and "correlation" in e.get("args", {})}
    found: dict = defaultdict(list)
    for e in events:
        if e.get("cat") not in MEMCPY:
            continue
        if in_steps:
            at = launched.get(e["args"].get("correlation"))
            if at is None or not any(s <= at < end for s, end in steps):
                continue
        m = re.fullmatch(r"Memcpy (\w+) \((\w+) -> (\w+)\)", e["name"])
        found[m.groups()].append(ns(e["dur"]))
    return {k: (len(v), sum(v), max(v)) for k, v in found.items()}


@pytest.mark.parametrize("name, window", [
    ("a100_alexnet.json.gz", "trace"),  # no steps: every copy
    ("b200_vllm_eager.json.gz", "trace"),
    ("h100_owlv2_dataloader.json.gz", "steps"),
    ("a100_recsys_16gpu_rank0.json.gz", "steps"),
    ("h100_bert_small.json.gz", "steps"),
])
def test_copies_by_kind_match_the_raw_events(name, window):
    a = analysis(name)
    assert a.window == window
    got = {(k.direction, k.source, k.destination): (k.count, k.total_ns, k.max_ns)
           for k in a.copies.kinds}
    assert got == _hand(name, window == "steps")
    assert [k.total_ns for k in a.copies.kinds] == sorted(
        (k.total_ns for k in a.copies.kinds), reverse=True)
    assert a.copies.steps == (len(a.steps.steps) if window == "steps" else 0)


def test_the_launching_ops_are_named():
    """OWLv2's outputs go back to pageable host memory through ``.cpu()`` (aten::copy_);
    BERT's one copy to pinned memory is the ``.item()`` of its loss."""
    owl = {(k.direction, k.destination): k for k in analysis("h100_owlv2_dataloader.json.gz")
           .copies.kinds}
    assert owl["DtoH", "Pageable"].ops == (("aten::copy_", 55),)
    (bert,) = analysis("h100_bert_small.json.gz").copies.kinds
    assert (bert.direction, bert.destination, bert.ops) == (
        "DtoH", "Pinned", (("aten::_local_scalar_dense", 1),))


def test_pageable_copies_are_named_with_what_to_do():
    owl = analysis("h100_owlv2_dataloader.json.gz")
    line = pageable_line(owl.copies)
    pageable = [k for k in owl.copies.kinds if "Pageable" in (k.source, k.destination)]
    assert sum(k.count for k in pageable) == 80
    assert line.startswith("80 copies to or from pageable host memory (14.6 ms on the GPU)")
    assert "pin_memory=True" in line and "non_blocking=True" in line
    # a pinned-only trace gets the table, not the line
    assert pageable_line(analysis("h100_bert_small.json.gz").copies) is None


def test_no_copy_no_section():
    """A CPU trace and a trace without memcpy show nothing and write null."""
    for name in ("cpu_only_gloo.json.gz", "a100_triton_kernel.json.gz"):
        a = analysis(name)
        assert a.copies is None
        assert CopiesPresenter().console(a, View()) == []
        assert CopiesPresenter().markdown(a, View()) == []
        assert trace_document(a)["copies"] is None


def test_every_format_shows_the_table():
    a = analysis("h100_owlv2_dataloader.json.gz")
    grid, line = CopiesPresenter().console(a, View())
    assert [r[:2] for r in grid.rows] == [("DtoH Device → Pageable", "55"),
                                         ("HtoD Pageable → Device", "25"),
                                         ("DtoD Device → Device", "5")]
    md = CopiesPresenter().markdown(a, View())
    assert md[0].startswith("### GPU copies (memcpy)")
    assert any("| DtoH Device → Pageable |" in r for r in md)
    doc = json.loads(json.dumps(trace_document(a)["copies"]))
    assert doc["kinds"][0]["count"] == 55 and doc["kinds"][0]["ops"] == [["aten::copy_", 55]]


def test_a_copy_named_otherwise_keeps_its_name_and_the_table_fits(tmp_path):
    """A memcpy whose name is not in Kineto's form (another runtime's, another exporter's)
    is its own kind, named whole in the JSON and cut to fit on an 80-column console."""
    from rich.console import Console

    from profiler_kit.analysis.trace_analysis import analyze_table
    from profiler_kit.render.console.blocks import renderables
    from profiler_kit.trace.loader import load

    odd = "CopyHostToDevice_some_runtime_specific_memcpy_name"
    events = _events("a100_alexnet.json.gz")
    for e in events:
        if e["name"] == "Memcpy HtoD (Pageable -> Device)":
            e["name"] = odd
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"traceEvents": events}))
    a = analyze_table(load(path))
    (kind,) = a.copies.kinds
    assert (kind.direction, kind.source, kind.count) == (odd, "", 16)
    assert pageable_line(a.copies) is None  # the name says no memory kind
    console = Console(width=80, record=True, color_system=None)
    console.print(*renderables(CopiesPresenter().console(a, View(width=80))))
    text = console.export_text()
    assert "count" in text and "launched by" in text and "CopyHostToDevice_some_r…" in text
    assert max(len(line) for line in text.splitlines()) <= 80


# Where the pageable-copy line must fire, read from each trace's memcpy names in its window:
# host memory the driver stages (Kineto writes "Pageable" on the host side).
PAGEABLE_FIRES = {
    "a100_alexnet.json.gz": 16,  # inputs moved to the GPU with .to() from pageable tensors
    "a100_simple_add.json.gz": 16,
    "a100_event_sync.json.gz": 1,  # one .item()-style copy back to pageable memory
    "a100_recsys_16gpu_rank0.json.gz": 75,  # 45 to the GPU, 30 back
    "a100_recsys_8gpu_rank3.json.gz": 60,
    "b200_vllm_eager.json.gz": 2,
    "h100_owlv2_dataloader.json.gz": 80,
    "v100_resnet50_tb_sample_step.json.gz": 2,
    "two_ranks/rank0.json.gz": 24,
}
# Silent: copies only between device buffers or from pinned memory (a100_ddp_nccl_rank0,
# h100_bert_small, h200_*, mi300_bert_small, mi300_resnet_act_checkpoint,
# v100_resnet50_train), ROCm's "Host", whose kind it does not name (mi250_minitoy_train),
# no memcpy in the window (CPU traces, h100_vit_image_classification: memsets only).
PAGEABLE_SILENT = (
    "a100_ddp_nccl_rank0.json.gz", "h100_bert_small.json.gz",
    "h200_concurrent_sequential.pt.trace.json.gz",
    "h200_concurrent_sequential_amp.pt.trace.json.gz", "mi300_bert_small.json.gz",
    "mi300_resnet_act_checkpoint.json.gz", "v100_resnet50_train.json.gz",
    "mi250_minitoy_train.json.gz", "h100_vit_image_classification.json.gz",
    "cpu_torch_profiler.pt.trace.json.gz", "a100_triton_kernel.json.gz",
)


@pytest.mark.parametrize("name", sorted(PAGEABLE_FIRES))
def test_the_pageable_line_fires_where_the_trace_copies_pageable_memory(name):
    a = analysis(name)
    line = pageable_line(a.copies)
    assert line is not None and line.startswith(f"{PAGEABLE_FIRES[name]:,} copies to or from "
                                                "pageable host memory")
    raw = _hand(name, a.window == "steps")
    assert sum(n for (_, src, dst), (n, _, _) in raw.items()
               if "Pageable" in (src, dst)) == PAGEABLE_FIRES[name]


@pytest.mark.parametrize("name", PAGEABLE_SILENT)
def test_the_pageable_line_stays_silent_elsewhere(name):
    a = analysis(name)
    assert a.copies is None or pageable_line(a.copies) is None


def test_the_chart_draws_the_figures_the_json_writes():
    """The HTML chart's bars are the JSON's GPU time and counts, per trace and kind."""
    from profiler_kit.render.sections.base import Page

    names = ("h100_owlv2_dataloader.json.gz", "a100_alexnet.json.gz")
    analyses = [analysis(n) for n in names]
    (chart,) = CopiesPresenter().charts(Page(analyses=analyses))
    for series in chart.data:
        for a, ms_, (count,) in zip(analyses, series["y"], series["customdata"], strict=True):
            kinds = {f"{k['direction']} {k['source']} → {k['destination']}": k
                     for k in trace_document(a)["copies"]["kinds"]}
            k = kinds.get(series["name"])
            assert (ms_, count) == ((k["total_ns"] / 1e6, k["count"]) if k else (0, 0))
