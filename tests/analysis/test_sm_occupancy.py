"""SM efficiency and achieved occupancy against the TensorBoard plugin's own parser, the
occupancy rules against the CUDA occupancy calculator's, and each limiter on a synthetic
trace."""

from __future__ import annotations

import gzip
import json

import pytest
from real_traces import DATA, analysis, ns
from tb_reference import run_profile

from profiler_kit.analysis.perf.occupancy_rules import (
    BLOCK_SIZE,
    GRID,
    REGISTERS,
    SHARED_MEMORY,
    device_limits,
    theoretical,
)
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.json.analysis import trace_document
from profiler_kit.trace.loader import load

PP = 0.005  # half a percentage point
# traces with ProfilerStep spans: the same window as the plugin's (its steps' span)
STEP_TRACES = ["a100_ddp_nccl_rank0.json.gz", "h100_bert_small.json.gz",
               "h100_vit_image_classification.json.gz",
               "v100_resnet50_tb_sample_step.json.gz", "a100_event_sync.json.gz",
               "h200_concurrent_sequential.pt.trace.json.gz"]
# no steps: the plugin's window is the CPU side's span, profkit's the GPU's; the SM-busy
# time is the same, so it is compared over the plugin's window
WINDOW_TRACES = ["a100_simple_add.json.gz"]


@pytest.fixture(scope="module", params=STEP_TRACES + WINDOW_TRACES)
def pair(request):
    return request.param, analysis(request.param), run_profile(DATA / request.param)


def test_figures_equal_the_plugins(pair):
    name, ours, tb = pair
    from torch_tb_profiler.profiler.event_parser import ProfileRole

    g = tb.gpu_metrics_parser
    assert ours.sm is not None and ours.sm.available
    for d in ours.sm.devices:
        eff = g.avg_approximated_sm_efficiency_per_device[d.device]
        if name in WINDOW_TRACES:
            window_ns = sum(c.costs[ProfileRole.Total] for c in tb.steps_costs) * 1000
            assert d.sm_busy_ns / window_ns == pytest.approx(eff, abs=PP)
        else:
            assert d.sm_efficiency == pytest.approx(eff, abs=PP)
        assert d.achieved_occupancy == pytest.approx(g.avg_occupancy_per_device[d.device] / 100,
                                                     abs=PP)


def test_per_step_figures_average_to_the_whole():
    a = analysis("v100_resnet50_tb_sample_step.json.gz")
    (step,) = a.sm.steps
    assert step.sm_efficiency == pytest.approx(a.sm.devices[0].sm_efficiency, abs=1e-9)


def test_kernels_idling_the_gpu_are_named_with_op_and_line():
    sm = analysis("h100_bert_small.json.gz").sm
    top = sm.idle_kernels[0]
    assert top.idle_sm_ns == max(k.idle_sm_ns for k in sm.kernels)
    assert top.limiter == GRID and top.op == "aten::addmm"
    assert top.source is not None and top.source.startswith("moca/")
    k = next(k for k in sm.kernels if k.name == top.name)
    assert 0 < k.sm_efficiency < 1 and k.achieved_occupancy is not None


@pytest.mark.parametrize("name", ["mi300_bert_small.json.gz", "cpu_only_gloo.json.gz"])
def test_figures_withheld_without_the_fields(name):
    a = analysis(name)
    doc = trace_document(a)
    assert all("sm_efficiency" not in d for d in (doc["timeline"] or {}).get("devices", []))
    if a.has_gpu:  # AMD: one note, no figure
        assert not a.sm.available and "withheld" in a.sm.note
        assert not doc["sm_occupancy"]["devices"]
    else:
        assert "sm_occupancy" not in doc


def test_json_has_the_figures_per_device():
    doc = trace_document(analysis("h100_bert_small.json.gz"))
    d = doc["timeline"]["devices"][0]
    assert d["sm_efficiency"] == pytest.approx(0.0447, abs=1e-3)
    assert d["achieved_occupancy"] == pytest.approx(0.0408, abs=1e-3)


# (compute capability, block threads, registers per thread, shared memory per block) ->
# (active blocks per SM, occupancy, limiter), worked out by the calculator's rules
# (cuda_occupancy.h: register units of 256 per warp over 4 sub-partitions, 2 on 6.0;
# shared memory in units of 256 bytes to 7.x, 128 from 8.0 plus 1 KiB reserved per block)
CASES = [
    ((7, 0), 128, 128, 16384, 4, 0.25, REGISTERS),  # 4096 regs/warp: 4 warps per quarter
    ((7, 0), 256, 32, 0, 8, 1.0, None),
    ((8, 0), 256, 32, 0, 8, 1.0, None),
    ((8, 0), 32, 16, 0, 32, 0.5, BLOCK_SIZE),  # 32 resident blocks of one warp
    ((8, 0), 128, 32, 49152, 3, 0.1875, SHARED_MEMORY),  # (48 KiB + 1 KiB) x 3 of 164 KiB
    ((9, 0), 128, 255, 0, 2, 0.125, REGISTERS),  # 8160 -> 8192 per warp: 2 per quarter
    ((8, 6), 1024, 32, 0, 1, 2 / 3, BLOCK_SIZE),  # 32 of 48 warps
    ((7, 5), 256, 64, 0, 4, 1.0, None),  # Turing: 32 warps per SM
    ((6, 0), 64, 40, 0, 25, 50 / 64, REGISTERS),  # 1280 per warp over 2 halves: 25 warps each
    ((8, 9), 32, 32, 0, 24, 0.5, BLOCK_SIZE),  # 24 resident blocks of 48 warps
    ((9, 0), 128, 32, 232448, 1, 1 / 16, SHARED_MEMORY),  # 227 + 1 KiB: all 228 KiB
    ((9, 0), 128, 32, 232449, 0, 0.0, SHARED_MEMORY),  # one byte more: no block
]


@pytest.mark.parametrize(("cc", "threads", "regs", "smem", "blocks", "occupancy", "limiter"),
                         CASES)
def test_occupancy_rules_match_the_calculator(cc, threads, regs, smem, blocks, occupancy,
                                              limiter):
    d = device_limits({"computeMajor": cc[0], "computeMinor": cc[1], "numSms": 80})
    o = theoretical(d, threads, regs, smem)
    assert (o.blocks_per_sm, o.limiter) == (blocks, limiter)
    assert o.occupancy == pytest.approx(occupancy)


@pytest.mark.parametrize("name", ["v100_resnet50_tb_sample_step.json.gz",
                                  "h100_vit_image_classification.json.gz"])
def test_rules_give_kinetos_estimate(name):
    """Kineto's 'est. achieved occupancy %' is the theoretical occupancy capped by the warps
    the grid gives each SM (0 where the occupancy API refused the kernel's opt-in shared
    memory): the rules here give the same wherever it is not 0."""
    t = load(DATA / name)
    d = device_limits(t.meta.device_properties[0])
    L = t.launches
    checked = 0
    for i in range(len(L)):
        if L.occupancy_pct[i] <= 0:
            continue
        o = theoretical(d, int(L.block_threads[i]), int(L.registers[i]),
                        int(L.shared_memory_bytes[i]))
        est = min(L.warps_per_sm[i], o.warps_per_sm) / d.max_warps_per_sm * 100
        assert abs(est - L.occupancy_pct[i]) <= 1
        checked += 1
    assert checked > 50


A100 = {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "computeMajor": 8, "computeMinor": 0,
        "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
        "regsPerBlock": 65536, "regsPerMultiprocessor": 65536, "warpSize": 32,
        "sharedMemPerBlock": 49152, "sharedMemPerMultiprocessor": 167936, "numSms": 108}
# kernel -> (grid blocks, block threads, registers, shared memory): one per limiter
SYNTHETIC = {
    "regs_heavy": (10000, 256, 200, 0, REGISTERS),
    "smem_heavy": (10000, 128, 32, 100000, SHARED_MEMORY),
    "tiny_blocks": (100000, 32, 16, 0, BLOCK_SIZE),
    "two_blocks": (2, 256, 32, 0, GRID),
    "full": (10000, 256, 32, 0, None),
}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    events, ts = [], 1000
    for i, (name, (grid, threads, regs, smem, _)) in enumerate(SYNTHETIC.items()):
        d = device_limits(A100)
        o = theoretical(d, threads, regs, smem)
        bps = grid / 108
        warps = bps * (threads // 32)
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts,
                       "dur": 100, "args": {
                           "device": 0, "stream": 7, "correlation": i,
                           "registers per thread": regs, "shared memory": smem,
                           "blocks per SM": bps, "warps per SM": warps,
                           "grid": [grid, 1, 1], "block": [threads, 1, 1],
                           "est. achieved occupancy %": round(
                               100 * min(warps, o.warps_per_sm) / 64)}})
        ts += 200
    path = tmp_path_factory.mktemp("sm") / "synthetic.json.gz"
    path.write_bytes(gzip.compress(json.dumps(
        {"deviceProperties": [A100], "traceEvents": events}).encode()))
    return analyze_table(load(path))


def test_each_limiter_is_named(synthetic):
    by_name = {k.name: k for k in synthetic.sm.kernels}
    for name, (*_, limiter) in SYNTHETIC.items():
        assert by_name[name].limiter == limiter, name
    assert by_name["two_blocks"].sm_efficiency == pytest.approx(2 / 108)
    assert synthetic.sm.idle_kernels[0].name == "two_blocks"
    # 5 kernels of 100 µs in a window of 900 µs; four fill every SM
    assert synthetic.sm.devices[0].sm_efficiency == pytest.approx((400 + 100 * 2 / 108) / 900)


def test_no_fields_no_figures(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 5,
         "args": {"device": 0, "stream": 7}}]}))
    sm = analyze_table(load(path)).sm
    assert not sm.available and sm.devices == () and sm.note is not None


def test_html_report_draws_the_figures_over_time():
    from profiler_kit.render.html.sm_charts import sm_charts

    (chart,) = sm_charts([analysis("h100_bert_small.json.gz")])
    assert [d["name"] for d in chart.data] == ["h100_bert_small gpu:0 SM efficiency",
                                               "h100_bert_small gpu:0 achieved occupancy"]
    assert len(chart.data[0]["y"]) == 100 and max(chart.data[0]["y"]) <= 100
    assert sm_charts([analysis("mi300_bert_small.json.gz")]) == []


def _by_hand(name: str, a) -> dict[str, tuple[float | None, float | None]]:
    """Per hotspot class, from the raw trace JSON: the kernels launched inside a
    ProfilerStep# span, each weighted by its time inside its GPU's window:
    sum(t × min(blocks per SM, 1)) / sum(t), and the same of the occupancy estimate."""
    events = json.loads(gzip.decompress((DATA / name).read_bytes()))["traceEvents"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep#")]
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in
                e.get("args", {}) and any(s <= e["ts"] < t for s, t in steps)}
    windows = {d.device: (d.window_start_ns, d.window_start_ns + d.window_ns)
               for d in a.sm.devices}
    klass = {}
    for k in a.kernels:
        assert klass.setdefault(k.name, k.klass) == k.klass  # one class per name here
    sums: dict[str, list[float]] = {}
    for e in events:
        args = e.get("args", {})
        if e.get("cat") != "kernel" or args.get("correlation") not in launched:
            continue
        w0, w1 = windows[args["device"]]
        start = ns(e["ts"])
        t = min(start + ns(e["dur"]), w1) - max(start, w0)
        s = sums.setdefault(klass[e["name"]], [0.0] * 4)
        if t > 0 and args.get("blocks per SM", 0) > 0:
            s[0] += t
            s[1] += t * min(args["blocks per SM"], 1.0)
        if t > 0 and "est. achieved occupancy %" in args:
            s[2] += t
            s[3] += t * args["est. achieved occupancy %"] / 100
    return {c: (s[1] / s[0] if s[0] else None, s[3] / s[2] if s[2] else None)
            for c, s in sums.items() if s[0] or s[2]}


@pytest.mark.parametrize("name", ["h100_vit_image_classification.json.gz",
                                  "a100_ddp_nccl_rank0.json.gz"])
def test_per_class_figures_by_hand_and_in_the_console(name):
    from rich.console import Console

    from profiler_kit.render.console.analysis import trace_view

    a = analysis(name)
    hand = _by_hand(name, a)
    ours = {c.klass: (c.sm_efficiency, c.achieved_occupancy) for c in a.sm.classes}
    assert set(ours) == set(hand) and len(ours) >= 6
    for c, (eff, occ) in hand.items():
        assert ours[c][0] == pytest.approx(eff, abs=1e-9), c
        assert ours[c][1] == pytest.approx(occ, abs=1e-9), c
    doc = trace_document(a)["sm_occupancy"]["classes"]
    assert {d["class"]: d["sm_efficiency"] for d in doc} == {c: f[0] for c, f in ours.items()}
    for width in (80, 120):
        console = Console(width=width, record=True, color_system=None,
                          file=open("/dev/null", "w"))
        console.print(trace_view(a, width=width))
        text = console.export_text()
        assert max(len(line) for line in text.splitlines()) <= width
        table = text[text.index("GPU time by class"):text.index("Top GPU kernels")]
        for c, (eff, occ) in hand.items():
            row = next(line for line in table.splitlines() if line.split()[:1] == [c])
            cells = " ".join(row.split())
            assert f" {100 * eff:.1f} % " in cells if eff is not None else " - " in cells, row
            assert f" {100 * occ:.1f} % " in cells if occ else " n/a " in cells or " - " in \
                cells, row


def test_perf_groups_carry_their_kernels_figures():
    perf = analysis("h100_vit_image_classification.json.gz").perf
    conv = next(g for g in perf.groups if g.op == "aten::convolution")
    assert 0 < conv.sm_efficiency < 1 and conv.achieved_occupancy is not None
    assert all(g.sm_efficiency is None for g in analysis("mi300_bert_small.json.gz").perf.groups)


def test_markdown_shows_the_figures_the_idle_kernels_or_one_note():
    from profiler_kit.render.markdown.analysis import trace_section

    a = analysis("h100_bert_small.json.gz")
    text = "\n".join(trace_section(a))
    d = a.sm.devices[0]
    assert (f"gpu:0 SM efficiency {100 * d.sm_efficiency:.1f} %, achieved occupancy "
            f"{100 * d.achieved_occupancy:.1f} %") in text
    top = a.sm.idle_kernels[0]
    assert "SMs left idle while busy" in text
    idle = text[text.index("SMs left idle while busy"):].splitlines()
    assert next(line for line in idle if line.startswith("- ")).endswith(
        f"launched by `{top.op}`, `{top.source}`")
    gemm = next(c for c in a.sm.classes if c.klass == "gemm")
    row = next(line for line in text.splitlines() if line.startswith("| gemm |"))
    assert f"| {100 * gemm.sm_efficiency:.1f} % |" in row
    amd = "\n".join(trace_section(analysis("mi300_bert_small.json.gz")))
    assert amd.count("withheld") == 1 and "SM eff." not in amd and "idle while busy" not in amd
    cpu = "\n".join(trace_section(analysis("cpu_only_gloo.json.gz")))
    assert "SM eff" not in cpu and "occupancy" not in cpu
