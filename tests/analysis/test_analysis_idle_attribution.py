"""GPU idle time by what the launching CPU thread was doing: real traces against a sweep over
their raw JSON (plain json and Decimal, no profkit code), and small timelines by hand."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

import pytest
from analysis_tables import kernel, launch, make_table, op
from real_traces import analysis as analyzed
from trace_counts import GPU_CATS, RUNTIME_CATS, ns

from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.time import idle_causes as ia
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import Cat

DATA = Path(__file__).parents[1] / "data"
LOADER = re.compile(r"^enumerate\(DataLoader\)|DataLoader.*__next__")
OPTIM = re.compile(r"^Optimizer\.(step|zero_grad)#")
SYNC_OPS = {"aten::item", "aten::_local_scalar_dense"}
SYNC_CALLS = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
              "cudaMemcpy"}
# precedence, lowest first
KINDS = ["python", "phase", "cpu_op", "optimizer", "synchronization", "dataloader"]


def _kind(e: dict) -> str | None:
    name, cat = e["name"], e.get("cat", "").lower()
    if cat in RUNTIME_CATS:
        return "synchronization" if name in SYNC_CALLS else None
    if cat not in ("cpu_op", "operator", "user_annotation"):
        return None
    if LOADER.search(name):
        return "dataloader"
    if name in SYNC_OPS:
        return "synchronization"
    if OPTIM.match(name):
        return "optimizer"
    if cat == "user_annotation":
        return None if name.startswith("ProfilerStep#") else "phase"
    return "cpu_op"


def reference(path: Path) -> dict[int, dict]:
    """Per GPU: idle causes {(kind, name): ns}, idle, gaps after a sync call and the idle
    in gaps of at most 1 ms spent launching, by a sweep over each launching thread."""
    with gzip.open(path, "rt") as fh:
        events = [e for e in json.load(fh, parse_float=Decimal)["traceEvents"]
                  if e.get("ph") == "X" and "dur" in e]
    calls, spans = {}, defaultdict(list)
    for e in events:
        args = e.get("args") or {}
        if e.get("cat", "").lower() in RUNTIME_CATS and "correlation" in args:
            calls[args["correlation"]] = (ns(e["ts"]), (e["pid"], e["tid"]))
        kind = _kind(e)
        if kind:
            spans[(e["pid"], e["tid"])].append(
                (ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), kind, e["name"]))
    acts = defaultdict(list)
    for e in events:
        if e.get("cat") in GPU_CATS:
            start = ns(e["ts"])
            acts[e["args"]["device"]].append(
                (start, start + ns(e["dur"]), calls.get(e["args"].get("correlation"))))
    out = {}
    for dev, items in acts.items():
        items.sort(key=lambda x: x[0])
        reach, host_parts = items[0][1], defaultdict(list)
        causes, idle, after_sync = Counter(), 0, []
        for start, end, call in items[1:]:
            if start > reach:
                idle += start - reach
                if call is None:
                    causes[("unlinked", "")] += start - reach
                else:
                    launched = min(max(call[0], reach), start)
                    causes[("queued", "")] += start - launched
                    if launched > reach:
                        host_parts[call[1]].append((reach, launched, start - reach))
            reach = max(reach, end)
        launching = 0
        for thread, parts in host_parts.items():
            mine = spans.get(thread, [])
            for lo, hi, width, kind, name in _sweep(mine, parts):
                causes[(kind, name)] += hi - lo
                if width <= ia.LAUNCH_GAP_NS and kind in ia.LAUNCHING_KINDS:
                    launching += hi - lo
            syncs = [s for s in mine if s[2] == "synchronization"]
            for lo, hi, width in parts:
                if any(s[0] < lo <= s[1] for s in syncs):
                    loader = sum(b - a for a, b, _, k, _ in _sweep(mine, [(lo, hi, width)])
                                 if k == "dataloader")
                    after_sync.append(width - loader)
        out[dev] = {"causes": +causes, "idle": idle, "after_sync": sum(after_sync),
                    "after_sync_gaps": len(after_sync), "launching": launching}
    return out


def _sweep(spans: list, parts: list):
    """Pieces (lo, hi, gap width, kind, name) of the parts, each under the outermost open
    span of the highest-precedence kind (no span: Python)."""
    points = []
    for i, (s, e, _, _) in enumerate(spans):
        points += [(s, 1, i), (e, 0, i)]
    for j, (lo, hi, _) in enumerate(parts):
        points += [(lo, 3, j), (hi, 2, j)]
    points.sort()
    open_spans, part, last = set(), None, None
    for t, what, i in points:
        if part is not None and last is not None and t > last:
            best = max((spans[k] for k in open_spans),
                       key=lambda sp: (KINDS.index(sp[2]), -sp[0], sp[1]), default=None)
            kind, name = (best[2], best[3]) if best else ("python", "")
            if best:  # the outermost open span of that kind names it
                name = min((spans[k] for k in open_spans if spans[k][2] == kind),
                           key=lambda sp: (sp[0], -sp[1]))[3]
            yield last, t, parts[part][2], kind, name
        last = t
        if what == 1:
            open_spans.add(i)
        elif what == 0:
            open_spans.discard(i)
        elif what == 3:
            part = i
        else:
            part = None


def profkit_devices(path: Path) -> dict[int, ia.IdleCauses]:
    table = load(path)
    tree = build_op_tree(table)
    idle = ia.attribute_idle(table, tree, attribute_gpu(table, tree))
    return {d.device: d for d in idle.devices}


@pytest.mark.parametrize("name", ["h100_owlv2_dataloader.json.gz", "b200_vllm_eager.json.gz",
                                  "a100_ddp_nccl_rank0.json.gz", "a100_event_sync.json.gz"])
def test_real_trace_equals_a_sweep_over_its_json(name):
    ref = reference(DATA / name)
    got = profkit_devices(DATA / name)
    assert set(got) == set(ref)
    for dev, r in ref.items():
        d = got[dev]
        assert d.idle_ns == r["idle"]
        assert Counter({(c.kind, c.name): c.ns for c in d.causes}) == r["causes"]
        assert sum(c.ns for c in d.causes) == d.idle_ns
        assert (d.after_sync_ns, d.after_sync_gaps) == (r["after_sync"], r["after_sync_gaps"])
        assert d.launch_gap_ns == r["launching"]


def test_dataloader_trace_idles_in_the_dataloader():
    """OWLv2 fed by a single-process DataLoader: about half of the step is the DataLoader,
    and the GPU idles through nearly all of it (the kernels wait in a deep queue otherwise:
    median launch delay 64 ms)."""
    a = analyzed("h100_owlv2_dataloader.json.gz")
    (d,) = a.idle.devices
    (tl,) = a.timeline.devices
    # one step: the lead-in and the gaps fill the device-side step time around the busy
    # time, but for the tail where the step's CPU side outlasts its last GPU work
    tail = a.steps.end_ns - a.steps.gpu_window_end_ns
    assert d.idle_ns + tl.busy_ns + tail == pytest.approx(a.step_device_ns, abs=1_000)
    assert d.causes[0].kind == "dataloader"
    assert d.kind_ns("dataloader") / a.step_device_ns == pytest.approx(0.511, abs=0.001)
    assert d.launch_gap_ns / a.step_device_ns < 0.01


def test_synchronization_gap_and_what_follows():
    """The thread waits in aten::item while the GPU drains; the GPU then idles while the
    thread runs Python and the next op, up to the next launch call."""
    events = [
        op("aten::mm", 0, 20), launch(5, corr=1), kernel("k1", 10, 100, corr=1),
        op("aten::item", 30, 90), op("aten::_local_scalar_dense", 31, 88),
        launch(35, corr=2, name="cudaStreamSynchronize", dur=80),
        op("aten::add", 150, 30), launch(160, corr=3), kernel("k2", 170, 10, corr=3),
    ]
    table = make_table(events)
    tree = build_op_tree(table)
    (d,) = ia.attribute_idle(table, tree, attribute_gpu(table, tree)).devices
    # gap 110..170: item until 120 (outermost sync range), Python 120..150, aten::add
    # 150..160, then the launch is queued 160..170
    assert {(c.kind, c.name): c.ns for c in d.causes} == {
        ("synchronization", "aten::item"): 10, ("python", ""): 30, ("cpu_op", "aten::add"): 10,
        ("queued", ""): 10}
    assert (d.after_sync_ns, d.after_sync_gaps) == (60, 1)


def test_launch_thread_decides_and_unlinked_gaps():
    """The next kernel's launching thread is the one read (a DataLoader on another thread
    does not count), and a kernel with no launch call leaves its gap unlinked."""
    events = [
        op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 500, tid=2),
        op("aten::mm", 0, 20, tid=1), launch(5, corr=1, tid=1), kernel("k1", 10, 10, corr=1),
        op("Optimizer.step#SGD.step", 100, 100, tid=1), op("aten::add_", 150, 20, tid=1),
        launch(160, corr=2, tid=1), kernel("k2", 200, 10, corr=2),
        kernel("k3", 300, 10),
    ]
    table = make_table(events)
    tree = build_op_tree(table)
    (d,) = ia.attribute_idle(table, tree, attribute_gpu(table, tree)).devices
    # 20..100 Python, 100..160 the optimizer (its op inside too), 160..200 queued,
    # 210..300 unlinked
    assert {(c.kind, c.name): c.ns for c in d.causes} == {
        ("python", ""): 80, ("optimizer", "Optimizer.step#SGD.step"): 60, ("queued", ""): 40,
        ("unlinked", ""): 90}
    assert d.idle_ns == 270


def test_streams_and_lead_in():
    """Per stream, gaps run between that stream's own activities; the lead-in from the
    steps' start counts on the device only."""
    events = [
        op("ProfilerStep#1", 0, 400, cat=Cat.USER_ANNOTATION),
        op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 100),
        launch(100, corr=1), kernel("a", 110, 50, corr=1, stream=7),
        launch(120, corr=2), kernel("b", 130, 50, corr=2, stream=8),
        op("aten::mul", 190, 20), launch(200, corr=3), kernel("c", 210, 10, corr=3, stream=7),
    ]
    table = make_table(events)
    tree = build_op_tree(table)
    got = ia.attribute_idle(table, tree, attribute_gpu(table, tree), lead_in_from=0)
    (d,) = got.devices
    assert {(c.kind, c.name): c.ns for c in d.causes} == {
        ("dataloader", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"): 100,
        ("queued", ""): 20, ("python", ""): 10, ("cpu_op", "aten::mul"): 10}
    by_stream = {s.stream: s for s in got.streams}
    assert by_stream[7].idle_ns == 50 and by_stream[8].idle_ns == 0
    assert by_stream[7].kind_ns("python") == 30  # 160..190, before aten::mul
