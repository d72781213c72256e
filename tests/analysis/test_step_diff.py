"""The step-time change term by term: exact sums, a check against the JSON, verdicts."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import pytest
from analysis_tables import kernel, launch, make_table, op
from trace_counts import GPU_CATS, RUNTIME_CATS, ns

from profiler_kit import api
from profiler_kit.analysis.compare import compare
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.wording.diff_views import verdict_line
from profiler_kit.trace.table import Cat

DATA = Path(__file__).parents[1] / "data"
BERT = (DATA / "h100_bert_small.json.gz", DATA / "mi300_bert_small.json.gz")
CPU_RUN = (DATA / "cpu_concurrent_sequential.pt.trace.json.gz",
           DATA / "cpu_concurrent_sequential_amp.pt.trace.json.gz",
           DATA / "cpu_concurrent_threads.pt.trace.json.gz")


def _exact(terms) -> None:
    assert terms.window_ns == sum(terms.busy_ns.values()) - terms.overlap_ns + terms.idle_ns
    assert terms.window_ns == sum(terms.step_window_ns)


def _adds_up(comparison) -> None:
    for w in comparison.steps.waterfalls:
        if w is None:
            continue
        assert sum(t.delta_ns for t in w.terms) == pytest.approx(w.delta_ns, abs=1e-6)
        assert w.delta_ns == pytest.approx(w.after_ns - w.before_ns, abs=1e-6)


def _busy_and_union_from_json(path: Path, lo: int, hi: int) -> tuple[int, int]:
    """Summed durations and union length, clipped to ``[lo, hi]``, of the GPU activities
    launched in the trace's one step (their runtime call inside the step's CPU span)."""
    with gzip.open(path, "rt") as fh:
        events = [e for e in json.load(fh, parse_float=Decimal)["traceEvents"]
                  if e.get("ph") == "X"]
    step = next(e for e in events if e["name"].startswith("ProfilerStep#")
                and e.get("cat") == "user_annotation")
    a, b = ns(step["ts"]), ns(step["ts"]) + ns(step["dur"])
    calls = {e["args"]["correlation"]: e for e in events
             if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {})}
    spans = []
    for e in events:
        call = calls.get(e.get("args", {}).get("correlation"))
        if e.get("cat") in GPU_CATS and call is not None \
                and a <= ns(call["ts"]) and ns(call["ts"]) + ns(call["dur"]) <= b:
            s, t = ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])
            spans.append((min(max(s, lo), hi), min(max(t, lo), hi)))
    spans.sort()
    union, end = 0, None
    for s, e in spans:  # sweep: add what each span covers beyond the ones before it
        if end is None or s > end:
            union += e - s
            end = e
        elif e > end:
            union += e - end
            end = e
    return sum(e - s for s, e in spans), union


def test_bert_pair_device_side_against_the_json():
    analyses = api.analyze(list(BERT), jobs=1)
    for a, path in zip(analyses, BERT, strict=True):
        t = a.step_terms
        _exact(t)
        (step,) = a.steps.steps  # device side as the TensorBoard plugin times it
        lo, hi = step.device_start_ns, step.device_start_ns + step.device_dur_ns
        busy, union = _busy_and_union_from_json(path, lo, hi)
        assert (t.side, t.steps, t.step_window_ns) == ("device", 1, (step.device_dur_ns,))
        assert sum(t.busy_ns.values()) == busy
        assert t.idle_ns == hi - lo - union
        assert t.overlap_ns == busy - union
    c = api.compare(analyses)
    _adds_up(c)
    w = c.steps.waterfalls[1]
    by_name = {x.name: x for x in w.terms}
    # the MI300's own attention kernel takes longer than the H100's flash attention
    assert by_name["attention"].delta_ns > 0
    assert {e.name for e in by_name["attention"].evidence} >= {"attn_fwd"}
    # both are launch-bound: most of the step is idle GPU, and idle moved most
    assert w.terms[0].name == "idle"
    assert verdict_line(w).startswith("mi300_bert_small: device step −")


def _gpu_steps(n: int, gemm: str, gemm_ns: int, cast: bool = False, streams: bool = False):
    """``n`` GPU-bound steps, 10 µs apart: a 500 ns CPU span launching a gemm at 1 µs and
    an add 100 ns after it, optionally a cast kernel first, optionally the add on a
    second stream beside the gemm."""
    events = []
    corr = 0
    for i in range(n):
        t0 = i * 10_000
        events.append(op(f"ProfilerStep#{i}", t0, 500, cat=Cat.USER_ANNOTATION))
        corr += 1
        events += [op("aten::mm", t0 + 10, 50), launch(t0 + 20, corr),
                   kernel(gemm, t0 + 1000, gemm_ns, corr=corr)]
        corr += 1
        add_start = t0 + 1000 if streams else t0 + 1000 + gemm_ns + 100
        events += [op("aten::add", t0 + 100, 50), launch(t0 + 110, corr),
                   kernel("elementwise_add", add_start, 400, corr=corr,
                          stream=8 if streams else 7)]
        if cast:
            corr += 1
            events += [op("aten::to", t0 + 200, 50), launch(t0 + 210, corr),
                       kernel("cast_bf16", t0 + 900, 50, corr=corr)]
    return make_table(events)


def test_waterfall_terms_add_up_and_name_the_cause():
    base = analyze_table(_gpu_steps(2, "sgemm_fp32", 3000), label="fp32")
    amp = analyze_table(_gpu_steps(4, "bf16_gemm", 1000, cast=True), label="amp")
    c = compare([base, amp])
    _adds_up(c)
    w = c.steps.waterfalls[1]
    # from the step's CPU start to the end of the add; the GPU idles the first µs
    assert w.before_ns == 1000 + 3000 + 100 + 400
    assert w.after_ns == 1000 + 1000 + 100 + 400
    assert w.delta_ns == pytest.approx(-2000)
    terms = {t.name: t.delta_ns for t in w.terms}
    assert terms["gemm"] == pytest.approx(-2000)
    assert terms["copy"] == pytest.approx(50)  # the cast runs in the idle microsecond
    assert terms["idle"] == pytest.approx(-50)
    top = w.terms[0]
    assert [(e.name, e.status) for e in top.evidence] == [("sgemm_fp32", "removed"),
                                                         ("bf16_gemm", "added")]
    line = verdict_line(w)
    assert line.startswith("amp: device step −2 µs")
    assert "gemm −2 µs (no sgemm_fp32 (was ×1); new bf16_gemm ×1)" in line


def test_streams_show_as_overlap():
    serial = analyze_table(_gpu_steps(3, "gemm", 2000), label="serial")
    streams = analyze_table(_gpu_steps(3, "gemm", 2000, streams=True), label="streams")
    _exact(streams.step_terms)
    assert streams.step_terms.overlap_ns == 3 * 400
    c = compare([serial, streams])
    _adds_up(c)
    w = c.steps.waterfalls[1]
    terms = {t.name: t.delta_ns for t in w.terms}
    assert w.delta_ns == pytest.approx(-500)  # the add and the gap before it
    assert terms["overlap"] == pytest.approx(-400)  # the add now runs beside the gemm
    assert terms["idle"] == pytest.approx(-100)  # and the gap before it is gone
    assert terms["gemm"] == 0 and terms["elementwise"] == 0


@pytest.mark.skipif(not CPU_RUN[0].exists(), reason="CPU run traces not present")
def test_cpu_runs_sequential_amp_and_threads():
    analyses = api.analyze(list(CPU_RUN), jobs=1)
    for a in analyses:
        assert a.step_terms.side == "cpu" and a.step_terms.steps == 2
        _exact(a.step_terms)
        assert a.step_terms.step_window_ns == tuple(s.dur_ns for s in a.steps.steps)
    c = api.compare(analyses)
    _adds_up(c)
    amp, threads = c.steps.waterfalls[1], c.steps.waterfalls[2]
    # autocast adds casts of weights and inputs (class copy): evidence names them
    copy = next(t for t in amp.terms if t.name == "copy")
    assert copy.delta_ns > 0
    assert {e.name for e in copy.evidence} & {"aten::to", "aten::_to_copy", "aten::copy_"}
    # two models on two threads: their ops run at once, which only threads can show
    assert analyses[0].step_terms.overlap_ns == 0
    assert analyses[2].step_terms.overlap_ns > 0
    overlap = next(t for t in threads.terms if t.name == "overlap")
    assert overlap.delta_ns < 0


def test_a_trace_without_steps_is_one_step():
    t = make_table([op("aten::mm", 0, 100), launch(10, 1), kernel("gemm", 200, 300, corr=1),
                    op("aten::add", 600, 50), launch(610, 2), kernel("add", 700, 100, corr=2)])
    terms = analyze_table(t).step_terms
    # the whole trace window: from the first op to the end of the last kernel
    assert (terms.window, terms.steps, terms.window_ns) == ("trace", 1, 800)
    assert terms.idle_ns == 400 and terms.overlap_ns == 0
    _exact(terms)


def test_console_and_markdown_show_waterfall_diffs_and_verdict():
    from rich.console import Console

    from profiler_kit.render.console.analysis import comparison_view
    from profiler_kit.render.markdown import analysis as analysis_markdown

    base = analyze_table(_gpu_steps(2, "sgemm_fp32", 3000), label="fp32")
    amp = analyze_table(_gpu_steps(2, "bf16_gemm", 1000, cast=True), label="amp")
    c = compare([base, amp])
    console = Console(width=110, record=True, color_system=None)
    console.print(comparison_view(c, top=5, width=110))
    text = console.export_text()
    assert "Step time, amp against fp32 (device side, per step)" in text
    assert "GPU kernels that changed most" in text and "bf16_gemm" in text
    assert "CPU ops that changed most" in text and "└ cast_bf16" in text
    assert text.rstrip().endswith(verdict_line(c.steps.waterfalls[1]).split()[-1])
    md = analysis_markdown.render([base, amp], c, top=5)
    assert f"- {verdict_line(c.steps.waterfalls[1])}" in md
