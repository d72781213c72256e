"""The CPU rules (``profiler_kit.analysis.advice.cpu_advice``): on the real CPU traces, read by hand
first, with their shares checked against an independent sum of the raw JSON; on tables built
to cross each threshold; and in the console, the JSON and the Markdown.

What each real trace shows, and so which rule must fire (tests/analysis/test_recommendation_table.py
holds the list) and which must not (``MUST_NOT`` below), with the reason:

* ``cpu_concurrent_sequential``: ResNet-18 and MobileNet-V3 on 2×3×32×32 inputs, one
  thread. ``aten::mkldnn_convolution`` is 79 % of the op time, but the same convolution
  with the same inputs takes 0.36 ms in one step and 167 ms in the other: the time is
  waiting (a shared 2-core machine), not convolution. ``cpu_ops_waiting`` fires; the fp32
  GEMM/convolution rule must not (its share measures the waiting).
* ``cpu_concurrent_sequential_amp``: the same under autocast: the convolutions are
  already bf16, and they, the batch norms and the casts wait as above.
* ``cpu_concurrent_threads``: the same two models, one Python thread each: convolutions
  at steady times (0.4 ms for 9.4 MFLOP), fp32 ``mkldnn_convolution`` + ``addmm`` 80 % of
  the op time, two threads busy 43 and 38 ms of a 49 ms window. ``cpu_fp32_matmul_conv``
  fires, saying the trace cannot tell whether the CPU has bf16 units; nothing waits.
* ``cpu_torch_profiler``: a tiny conv/batch-norm/linear model whose every op takes
  milliseconds in both steps (a 125 kFLOP ``aten::mm``: 16 ms): waiting again.
* ``cpu_only_gloo``: its one step holds no op at all; its time is ten ``gloo:all_reduce``
  spans on two other threads (communication with 299 ranks): nothing for a CPU rule.
* ``gloo_straggler``: 1.4 ms of ops in a 163 ms step: nothing.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest
from analysis_tables import Ev, make_table, op
from real_traces import analysis, ns
from rich.console import Console

from profiler_kit.analysis.advice import cpu_advice
from profiler_kit.analysis.core.note import note
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.core.steps import analyze_steps
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.console import analysis as analysis_console
from profiler_kit.render.json import analysis as analysis_json
from profiler_kit.render.markdown import analysis as analysis_markdown
from profiler_kit.render.wording.rules import advice
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import Cat

DATA = Path(__file__).parents[1] / "data"
CPU_RULES = {"cpu_ops_waiting", "cpu_fp32_matmul_conv", "cpu_small_elementwise_ops"}

# trace -> {rule that must stay silent: why}
MUST_NOT = {
    "cpu_concurrent_sequential.pt.trace.json.gz": {
        "cpu_fp32_matmul_conv": "the convolutions' 79 % is waiting: calls identical to one "
                                "of 0.36 ms take up to 167 ms",
        "cpu_small_elementwise_ops": "elementwise ops are 0.03 % of the op time",
    },
    "cpu_concurrent_sequential_amp.pt.trace.json.gz": {
        "cpu_fp32_matmul_conv": "the convolutions are bf16 already, and waiting",
        "cpu_small_elementwise_ops": "elementwise ops are 0.03 % of the op time",
    },
    "cpu_concurrent_threads.pt.trace.json.gz": {
        "cpu_ops_waiting": "identical calls take steady times: 4 % of the op time is beyond "
                           "the fastest such call",
        "cpu_small_elementwise_ops": "elementwise ops are 0.8 % of the op time",
    },
    "cpu_torch_profiler.pt.trace.json.gz": {
        "cpu_fp32_matmul_conv": "its GEMMs and convolutions take milliseconds for "
                                "microseconds of work: waiting, not math",
        "cpu_small_elementwise_ops": "elementwise ops are 0.1 % of the op time",
    },
    "cpu_only_gloo.json.gz": {r: "no op in its step" for r in CPU_RULES},
    "gloo_straggler/rank0.pt.trace.json.gz": {r: "1.4 ms of ops in a 163 ms step"
                                              for r in CPU_RULES},
}

# the oneDNN/MKL GEMM and convolution ops these traces run (none of them wraps another)
GEMM_CONV = {"aten::mkldnn_convolution", "aten::addmm", "aten::mm", "aten::convolution_backward"}
# ops that only ever call an op of their own kind: their self time is dispatch
ALWAYS_WRAPPERS = {"aten::conv2d", "aten::convolution", "aten::_convolution", "aten::linear",
                   "aten::batch_norm", "aten::_batch_norm_impl_index"}
WITH_OPS = ["cpu_concurrent_sequential.pt.trace.json.gz",
            "cpu_concurrent_sequential_amp.pt.trace.json.gz",
            "cpu_concurrent_threads.pt.trace.json.gz", "cpu_torch_profiler.pt.trace.json.gz"]


def _raw_ops(name: str) -> tuple[list[dict], int, int]:
    """Every cpu_op and user_annotation with its self time (its duration less the parts of
    its direct children inside it, per thread), and the ProfilerStep# window, from the JSON."""
    with gzip.open(DATA / name, "rt") as f:
        events = [e for e in json.load(f)["traceEvents"]
                  if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    ops = []
    for e in events:
        start = ns(e["ts"])
        ops.append({"name": e["name"], "cat": e["cat"], "tid": (e["pid"], e["tid"]),
                    "start": start, "end": start + ns(e["dur"]), "self": ns(e["dur"]),
                    "children": 0, "args": e.get("args", {})})
    by_thread = defaultdict(list)
    for o in ops:
        by_thread[o["tid"]].append(o)
    for thread in by_thread.values():
        thread.sort(key=lambda o: (o["start"], -(o["end"] - o["start"])))
        stack: list[dict] = []
        for o in thread:
            while stack and stack[-1]["end"] <= o["start"]:
                stack.pop()
            if stack:
                parent = stack[-1]
                parent["self"] -= min(o["end"], parent["end"]) - o["start"]
                if o["cat"] == "cpu_op":
                    parent["children"] += 1
            stack.append(o)
    steps = [o for o in ops if o["name"].startswith("ProfilerStep#")]
    return ops, min(o["start"] for o in steps), max(o["end"] for o in steps)


def _profile(name: str) -> cpu_advice.CpuProfile:
    table = load(DATA / name)
    return cpu_advice.cpu_profile(table, build_op_tree(table), analyze_steps(table), top=50)


@pytest.mark.parametrize("name", sorted(MUST_NOT))
def test_rules_that_must_stay_silent(name):
    fired = {r.rule for r in analysis(name).recommendations}
    assert not fired & set(MUST_NOT[name]), MUST_NOT[name]


@pytest.mark.parametrize("name", WITH_OPS)
def test_shares_match_an_independent_sum_of_the_raw_json(name):
    ops, lo, hi = _raw_ops(name)
    in_steps = [o for o in ops if lo <= o["start"] < hi]
    cpu_ops = [o for o in in_steps if o["cat"] == "cpu_op"]
    p = _profile(name)
    assert p.window == "steps" and p.window_ns == hi - lo
    assert p.op_ns == sum(o["self"] for o in cpu_ops) and p.ops == len(cpu_ops)
    assert p.gemm_conv_ns == sum(o["self"] for o in cpu_ops if o["name"] in GEMM_CONV)
    assert {t.name for t in p.gemm_conv_top} == {o["name"] for o in cpu_ops
                                                 if o["name"] in GEMM_CONV}
    # dispatch: at least the ops that always wrap another, at most every op with a child op
    wrappers = sum(o["self"] for o in cpu_ops if o["name"] in ALWAYS_WRAPPERS)
    with_children = sum(o["self"] for o in cpu_ops if o["children"])
    assert wrappers <= p.dispatch_ns <= with_children
    assert p.annotation_ns == sum(o["self"] for o in in_steps if o["cat"] == "user_annotation")
    assert p.op_ns == (p.gemm_conv_ns + p.elementwise_ns + p.dispatch_ns + p.dataloader_ns
                       + p.other_ns)
    # each thread's busy time: the union of its ops, clipped to the steps
    busy = {}
    for tid in {o["tid"] for o in cpu_ops}:
        spans = sorted((max(o["start"], lo), min(o["end"], hi)) for o in cpu_ops
                       if o["tid"] == tid)
        total, reach = 0, lo
        for s, e in spans:
            total += max(0, e - max(s, reach))
            reach = max(reach, e)
        busy[tid] = total
    assert {(t.pid, t.tid): t.busy_ns for t in p.threads} == busy


def _excess_over_fastest_identical(cpu_ops: list[dict], op_name: str) -> int:
    """Summed time of ``op_name``'s calls beyond the fastest call with the same inputs."""
    groups = defaultdict(list)
    for o in cpu_ops:
        if o["name"] == op_name:
            a = o["args"]
            groups[json.dumps([a.get("Input Dims"), a.get("Input type")])].append(o["self"])
    return sum(sum(v) - len(v) * min(v) for v in groups.values())


@pytest.mark.parametrize("name", ["cpu_concurrent_sequential.pt.trace.json.gz",
                                  "cpu_concurrent_sequential_amp.pt.trace.json.gz"])
def test_sequential_convolutions_wait(name):
    """Counted from the JSON alone: the convolutions' time beyond the fastest identical
    call is most of the op time, so the rule that says so leads and nothing else fires."""
    ops, lo, hi = _raw_ops(name)
    cpu_ops = [o for o in ops if o["cat"] == "cpu_op" and lo <= o["start"] < hi]
    total = sum(o["self"] for o in cpu_ops)
    assert _excess_over_fastest_identical(cpu_ops, "aten::mkldnn_convolution") > 0.6 * total
    (r,) = analysis(name).recommendations
    assert r.rule == "cpu_ops_waiting" and r.measured >= 0.8
    ev = {(e.label, e.name): e.value for e in r.evidence}
    assert ev[("waited", "aten::mkldnn_convolution")] > 0.5 * total
    assert "cpu_rules_not_judged_waiting" in [n.code for n in analysis(name).notes]


def test_the_tiny_model_waits_in_every_step():
    ops, lo, hi = _raw_ops("cpu_torch_profiler.pt.trace.json.gz")
    mm = [o for o in ops if o["name"] == "aten::mm"
          and o["args"]["Input Dims"] == [[4, 10], [10, 1568]]]
    flops = 2 * 4 * 10 * 1568
    assert len(mm) == 2 and all(o["self"] > 15_000_000 for o in mm)  # < 0.01 GFLOP/s
    assert flops / (min(o["self"] for o in mm) / 1e9) < 1e7
    (r,) = analysis("cpu_torch_profiler.pt.trace.json.gz").recommendations
    assert r.rule == "cpu_ops_waiting" and r.measured >= cpu_advice.WAITING_SHARE
    assert {e.name for e in r.evidence if e.label == "waited"} >= {"aten::mm"}


def test_the_threads_trace_computes_in_fp32_on_two_threads():
    name = "cpu_concurrent_threads.pt.trace.json.gz"
    ops, lo, hi = _raw_ops(name)
    cpu_ops = [o for o in ops if o["cat"] == "cpu_op" and lo <= o["start"] < hi]
    total = sum(o["self"] for o in cpu_ops)
    conv = _excess_over_fastest_identical(cpu_ops, "aten::mkldnn_convolution")
    assert conv < 0.25 * total  # steady: no waiting to speak of
    gemm_conv = sum(o["self"] for o in cpu_ops if o["name"] in GEMM_CONV)
    assert all(o["args"]["Input type"][0] == "float" for o in cpu_ops
               if o["name"] in GEMM_CONV)
    (r,) = analysis(name).recommendations
    assert r.rule == "cpu_fp32_matmul_conv" and r.measured == pytest.approx(gemm_conv / total)
    ev = {(e.label, e.name): e.value for e in r.evidence}
    assert ev[("bf16 hardware", "")] == cpu_advice.UNKNOWN
    assert r.variant == "cpu_unknown"
    assert "does not show which CPU" in advice(r) and "lscpu" in advice(r)
    assert len([e for e in r.evidence if e.label == "busy (union of its ops)"]) == 2
    assert "cpu_one_thread" not in [n.code for n in analysis(name).notes]


def test_a_step_without_ops_says_so():
    ops, lo, hi = _raw_ops("cpu_only_gloo.json.gz")
    assert not [o for o in ops if o["cat"] == "cpu_op" and lo <= o["start"] < hi]
    assert {o["tid"] for o in ops if o["name"] == "gloo:all_reduce"} == {(1074, 3553),
                                                                        (1074, 3554)}
    a = analysis("cpu_only_gloo.json.gz")
    assert a.recommendations == ()
    assert note("cpu_rules_no_op_time", window="steps") in a.notes


# --- tables built to cross each threshold ----------------------------------------------


def _step(ops: list[Ev], dur: int, ts: int = 0) -> list[Ev]:
    return [op("ProfilerStep#1", ts, dur, cat=Cat.USER_ANNOTATION), *ops]


def _typed(name: str, ts: int, dur: int, dims: list, types: list, tid: int = 1) -> Ev:
    e = op(name, ts, dur, tid=tid, dims=dims)
    e.input_types = types
    return e


def _rules(events: list[Ev]):
    a = analyze_table(make_table(events))
    return {r.rule: r for r in a.recommendations}, [n.code for n in a.notes]


def _elementwise(n: int, each: int) -> list[Ev]:
    return [op("aten::add", 1000 + i * (each + 10), each) for i in range(n)] + \
        [op("aten::mm", 1000 + n * (each + 10), 50_000)]


def test_many_small_elementwise_ops_ask_for_torch_compile():
    fired, _ = _rules(_step(_elementwise(200, 2_000), 1_000_000))
    r = fired["cpu_small_elementwise_ops"]
    assert r.measured == pytest.approx(400_000 / 450_000)
    assert "torch.compile" in advice(r)
    assert {e.label: e.value for e in r.evidence}["elementwise calls below 100 µs"] == 200
    # too few to fuse, or each too long to be dispatch-bound
    assert "cpu_small_elementwise_ops" not in _rules(_step(_elementwise(50, 2_000),
                                                           1_000_000))[0]
    assert "cpu_small_elementwise_ops" not in _rules(_step(_elementwise(200, 200_000),
                                                           50_000_000))[0]


def _gemms(extra: list[Ev]) -> list[Ev]:
    dims, types = [[64, 64], [64, 64]], ["float", "float"]
    return _step([_typed("aten::mm", 1000 + i * 100_000, 90_000, dims, types)
                  for i in range(10)] + extra, 1_100_000)


def test_bf16_advice_follows_what_the_trace_shows():
    fired, _ = _rules(_gemms([]))
    assert fired["cpu_fp32_matmul_conv"].variant == "cpu_unknown"
    assert "does not show which CPU" in advice(fired["cpu_fp32_matmul_conv"])
    amx = [op("brgemm:avx512_core_amx", 1_050_000, 10, cat=Cat.USER_ANNOTATION)]
    fired, _ = _rules(_gemms(amx))
    r = fired["cpu_fp32_matmul_conv"]
    assert r.variant == "bf16_units" and r.figures["bf16"] == cpu_advice.AMX
    assert "This CPU has AMX" in advice(r) and "torch.autocast('cpu'" in advice(r)
    assert {e.label: e.name for e in r.evidence}["bf16 hardware"] == "brgemm:avx512_core_amx"
    avx2 = [op("brg:avx2", 1_050_000, 10, cat=Cat.USER_ANNOTATION)]
    fired, codes = _rules(_gemms(avx2))
    assert "cpu_fp32_matmul_conv" not in fired
    assert "cpu_bf16_not_advised" in codes


def test_bf16_gemms_and_untyped_gemms_are_not_called_fp32():
    dims = [[64, 64], [64, 64]]
    bf16 = _step([_typed("aten::mm", 1000 + i * 100_000, 90_000, dims,
                         ["c10::BFloat16", "c10::BFloat16"]) for i in range(10)], 1_100_000)
    assert "cpu_fp32_matmul_conv" not in _rules(bf16)[0]
    fired, codes = _rules(_step([op("aten::mm", 1000 + i * 100_000, 90_000)
                                 for i in range(10)], 1_100_000))
    assert not fired and "cpu_precision_no_input_types" in codes


def _mm_calls(durations: list[int], name: str = "aten::mm") -> list[Ev]:
    """One identical call per step, ``durations`` long (ns)."""
    events, ts = [], 0
    for d in durations:
        events += _step([_typed(name, ts + 1000, d, [[4, 10], [10, 16]], ["float", "float"])],
                        d + 2000, ts)
        events[-2].name = f"ProfilerStep#{len(events)}"
        ts += d + 3000
    return events


def test_identical_calls_far_slower_than_the_fastest_waited():
    fired, codes = _rules(_mm_calls([100_000, 100_000, 20_000_000, 20_000_000]))
    r = fired["cpu_ops_waiting"]
    assert r.measured == pytest.approx(2 * 19_900_000 / 40_200_000)
    ev = {(e.label, e.name): e.value for e in r.evidence}
    assert ev[("waited", "aten::mm")] == 2 * 19_900_000
    assert ev[("what their work needs at most, mean", "aten::mm")] == 100_000
    assert "cpu_fp32_matmul_conv" not in fired  # not judged while the ops wait
    assert "cpu_rules_not_judged_waiting" in codes


def test_a_slow_first_call_alone_is_kernel_creation_not_waiting():
    assert "cpu_ops_waiting" not in _rules(_mm_calls([20_000_000, 100_000, 100_000]))[0]
    # but where later calls wait too, the first one counts with them
    fired, _ = _rules(_mm_calls([20_000_000, 100_000, 20_000_000]))
    ev = {(e.label, e.name): e.value for e in fired["cpu_ops_waiting"].evidence}
    assert ev[("of them waiting", "")] == 2


def test_waits_for_other_ranks_are_not_judged():
    assert not _rules(_mm_calls([100_000, 20_000_000, 20_000_000],
                                name="c10d::allreduce_"))[0]


def test_gpu_traces_without_gpu_activity_get_no_cpu_rules():
    """A GPU trace whose kernels were not recorded: its op times are launch times."""
    events = _mm_calls([100_000, 100_000, 20_000_000, 20_000_000])
    assert "cpu_ops_waiting" in _rules(events)[0]
    launch = Ev(Cat.RUNTIME, "cudaLaunchKernel", 2000, 10)
    assert not _rules(events + [launch])[0]


# --- shown like every other recommendation ------------------------------------------------


def test_console_json_and_markdown_show_the_cpu_findings():
    a = analysis("cpu_concurrent_threads.pt.trace.json.gz")
    (r,) = a.recommendations
    console = Console(width=120, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(analysis_console.trace_view(a, top=5, width=120))
    text = " ".join(console.export_text().replace("│", " ").split())
    assert "fp32 GEMM/convolution take most of the CPU time [trace]: 80.3 % ≥ 50.0 % " \
           "(cpu_fp32_matmul_conv)" in text
    assert "GEMM/convolution (oneDNN/MKL) aten::mkldnn_convolution, aten::addmm 80.3 %" in text
    doc = json.loads(analysis_json.dumps([a], None))
    (rec,) = doc["traces"][0]["recommendations"]
    assert rec["rule"] == "cpu_fp32_matmul_conv" and rec["measured"] == r.measured
    assert {"label": "bf16 hardware", "value": cpu_advice.UNKNOWN, "unit": "",
            "name": ""} in rec["evidence"]
    md = analysis_markdown.render([a])
    assert "(cpu_fp32_matmul_conv)**" in md and "lscpu" in md
