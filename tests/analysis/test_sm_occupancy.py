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
from profiler_kit.analysis.perf.sm_occupancy import NO_FIELDS_NOTE
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.json.analysis import trace_document
from profiler_kit.trace.loader import load

# profkit's device figures against the plugin's parser. What is left between them is the
# plugin reading Kineto's microseconds as doubles (0.25 µs apart at today's epoch values,
# ~1.7e15 µs) where profkit keeps exact nanoseconds: at most 3.1e-7 of SM efficiency
# (v100_resnet50_train) and 2.2e-5 of occupancy, which weighs many µs-short kernels by
# their own durations, on every trace below. The bounds leave a margin of about three.
EFF_TOL = 1e-6  # a ten-thousandth of a percentage point
OCC_TOL = 1e-4  # a hundredth of a percentage point
# one ProfilerStep
ONE_STEP = ["h100_bert_small.json.gz", "h100_vit_image_classification.json.gz",
            "v100_resnet50_tb_sample_step.json.gz", "a100_event_sync.json.gz"]
# two or more ProfilerSteps; a100_recsys_16gpu_rank0 runs 705 kernels in the steps whose
# launch is not in the trace (the plugin counts them: profkit, counting only kernels
# launched in a step, read 14.8 % where the plugin reads 17.5 %)
MULTI_STEP = ["a100_ddp_nccl_rank0.json.gz", "h200_concurrent_sequential.pt.trace.json.gz",
              "h200_concurrent_sequential_amp.pt.trace.json.gz", "v100_resnet50_train.json.gz",
              "a100_recsys_8gpu_rank3.json.gz", "a100_recsys_16gpu_rank0.json.gz",
              "two_ranks/rank0.json.gz"]
# no steps: the plugin's window is the CPU ops' span widened to the GPU work they launched
NO_STEP = ["a100_simple_add.json.gz", "a100_alexnet.json.gz", "b200_vllm_eager.json.gz"]


def _equal_the_plugins(ours, tb):
    g = tb.gpu_metrics_parser
    assert ours.sm is not None and ours.sm.available
    assert {d.device for d in ours.sm.devices} == set(g.gpu_ids)
    for d in ours.sm.devices:
        assert d.sm_efficiency == pytest.approx(
            g.avg_approximated_sm_efficiency_per_device[d.device], abs=EFF_TOL)
        assert d.achieved_occupancy == pytest.approx(g.avg_occupancy_per_device[d.device] / 100,
                                                     abs=OCC_TOL)


@pytest.mark.parametrize("name", ONE_STEP + MULTI_STEP + NO_STEP)
def test_figures_equal_the_plugins(name):
    ours = analysis(name)
    _equal_the_plugins(ours, run_profile(DATA / name))
    assert ours.sm.steps_left_out == ()


def test_kernels_launched_outside_the_steps_count_as_the_plugin_counts_them():
    """The plugin counts every kernel that runs in its window: here 705 kernels inside the
    first step whose runtime calls are not in the trace."""
    name = "a100_recsys_16gpu_rank0.json.gz"
    events = json.loads(gzip.decompress((DATA / name).read_bytes()))["traceEvents"]
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    unlaunched = [e for e in events if e.get("cat") == "kernel"
                  and e["args"]["correlation"] not in launched]
    assert len(unlaunched) == 705
    d = analysis(name).sm.devices[0]
    inside = [e for e in unlaunched if d.window_start_ns <= ns(e["ts"])
              and ns(e["ts"]) + ns(e["dur"]) <= d.window_start_ns + d.window_ns]
    assert len(inside) == 705
    g = run_profile(DATA / name).gpu_metrics_parser
    assert d.sm_efficiency == pytest.approx(
        g.avg_approximated_sm_efficiency_per_device[0], abs=EFF_TOL)
    assert d.sm_efficiency == pytest.approx(0.1749, abs=1e-4)


def _cut_in_last_step(name: str, share: float, out) -> tuple[int, int]:
    """The real trace ``name`` as a profiler that stopped ``share`` into the last step
    leaves it (every event from then on gone but the steps' spans); the last and the one
    before's numbers."""
    doc = json.loads(gzip.decompress((DATA / name).read_bytes()))
    steps = sorted((e["ts"], e["dur"], int(e["name"].split("#")[1]))
                   for e in doc["traceEvents"] if e.get("ph") == "X"
                   and str(e.get("name")).startswith("ProfilerStep#"))
    cut = steps[-1][0] + share * steps[-1][1]
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("ts", 0) < cut
                          or str(e.get("name")).startswith("ProfilerStep#")]
    out.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return steps[-1][2], steps[-2][2]


@pytest.mark.parametrize("name", ["two_ranks/rank0.json.gz", "a100_ddp_nccl_rank0.json.gz"])
def test_a_last_step_cut_short_is_left_out_as_the_plugin_does(name, tmp_path):
    """The plugin drops a last step that launched under 0.8 times the GPU activities of
    the one before (taken as cut short by the profiler) from its window: profkit, which
    kept it, read 14.1 % where the plugin reads 21.3 % on the two-step trace."""
    from profiler_kit.render.wording.sm_figures import sm_line

    path = tmp_path / "cut.json.gz"
    last, before = _cut_in_last_step(name, 0.3, path)
    ours = analyze_table(load(path))
    launched = {st.number: st.gpu_activities for st in ours.steps.steps}
    assert 0 < launched[last] < 0.8 * launched[before]
    tb = run_profile(path)
    assert len(tb.steps_costs) == len(ours.steps.steps) - 1  # the plugin dropped it
    _equal_the_plugins(ours, tb)
    assert ours.sm.steps_left_out == (last,)
    (d,) = ours.sm.devices
    kept = next(st for st in ours.steps.steps if st.number == before)
    assert d.window_start_ns + d.window_ns == kept.device_start_ns + kept.device_dur_ns
    assert {s.step for s in ours.sm.steps} == set(launched)  # profkit's per step keeps it
    assert sm_line(ours.sm).endswith(
        f"(est., as the TensorBoard plugin, without step {last}: no GPU activity or under "
        "0.8 times the step before's, taken as cut short)")


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
        assert not a.sm.available and a.sm.note == NO_FIELDS_NOTE
        assert "withheld" in doc["sm_occupancy"]["note"]
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
    assert not sm.available and sm.devices == () and sm.note == NO_FIELDS_NOTE


def test_html_report_draws_the_figures_over_time():
    from profiler_kit.render.sections import Page
    from profiler_kit.render.sections.sm_occupancy import SmOccupancyPresenter

    def sm_charts(analyses):
        return SmOccupancyPresenter().charts(Page(analyses))

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
