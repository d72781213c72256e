"""Renderers: console at a fixed width, the JSON schema, Markdown. They only format."""

from __future__ import annotations

import json
from pathlib import Path

import json_docs
import pytest
from rich.console import Console

from profiler_kit import api
from profiler_kit.analysis.compare import compare
from profiler_kit.render.console import analysis as analysis_console
from profiler_kit.render.json import analysis as analysis_json
from profiler_kit.render.markdown import analysis as analysis_markdown
from profiler_kit.render.wording.names import short_name

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def analyses():
    return api.analyze([DATA / "a100_ddp_nccl_rank0.json.gz",
                        DATA / "cpu_torch_profiler.pt.trace.json.gz"])


def _console_text(analyses, comparison, width):
    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))
    analysis_console.render(console, analyses, comparison, top=5)
    return console.export_text()


@pytest.mark.parametrize("width", [80, 120])
def test_console_fits_the_width_and_shows_every_section(analyses, width):
    text = _console_text(analyses, compare(analyses), width)
    assert max(len(line) for line in text.splitlines()) <= width
    for heading in ("GPU timeline", "GPU time by class", "Top GPU kernels",
                    "CPU ops by self time", "Phases (record_function", "Recommendations",
                    "Memory", "Comparison (baseline: a100_ddp_nccl_rank0"):
        assert heading in text
    # busy 157.5 ms over the 3 steps' device-side time, 667.1 ms (not the 660.6 ms GPU window)
    # the idle GPU is the host-bound rule's evidence, not a recommendation of its own
    assert "GPU busy (the symptom) 23.6 %" in " ".join(text.replace("│", " ").split())
    assert "(low_gpu_utilization)" not in text
    assert "Memory: not recorded" in text  # the DDP trace has no [memory] events
    assert "CPU-only trace" in text  # the CPU trace says why GPU rules did not run
    assert "ncclKernel_AllRe" in text  # cut to fit at 80 columns, whole at 120
    assert "## forward ##" in text  # names are text, not markup


def test_bracketed_names_are_printed_not_taken_as_markup():
    # the fp32 GEMM rule's predicted gain is 0.002 %: shown only with no minimum gain
    (a,) = api.analyze([DATA / "a100_alexnet.json.gz"], min_gain_pct=0)
    text = _console_text([a], None, 120)
    assert "[param|cuda]" in text
    assert "fp32 GEMM kernel ampere_sgemm_32x32_sliced1x4_tn" in text


def test_short_names_drop_arguments_but_keep_meaning():
    n = "void at::native::(anonymous namespace)::max_pool_forward_nchw<float, float>(int, float)"
    assert short_name(n) == "at::native::max_pool_forward_nchw<float, float>"
    assert short_name("Memcpy DtoD (Device -> Device)") == \
        "Memcpy DtoD (Device -> Device)"
    assert short_name("x" * 100, 10) == "x" * 9 + "…"


def test_json_document_follows_the_schema(analyses):
    doc = json.loads(analysis_json.dumps(analyses, compare(analyses)))
    assert doc["schema"] == "profkit.analysis/3"
    ddp, cpu = doc["traces"]
    assert set(ddp) >= {"label", "path", "rank", "devices", "steps", "gpu_hotspots",
                        "cpu_hotspots", "kernels", "timeline", "precision", "memory",
                        "phases", "recommendations", "notes", "attribution", "skipped"}
    assert ddp["rank"] == 0 and ddp["devices"][0]["compute_capability"] == "8.0"
    kernels = ddp["kernels"]
    assert len(kernels) == len(analyses[0].kernels)
    assert set(kernels[0]) == {"name", "category", "class", "count", "total_ns", "min_ns",
                               "max_ns"}
    assert sum(k["total_ns"] for k in kernels) == ddp["gpu_hotspots"]["total_ns"]
    assert ddp["timeline"]["devices"][0]["busy_ns"] == ddp["timeline"]["busy_ns"]
    rec = ddp["recommendations"][0]
    assert set(rec) == {"rule", "scope", "title", "advice", "measured", "threshold",
                        "fires_when", "unit", "evidence", "change", "step_ns",
                        "predicted_step_ns", "predicted_gain_pct", "prediction_trusted",
                        "prediction_caveat", "no_prediction"}
    assert cpu["memory"]["recorded"] is True and cpu["memory"]["devices"][0]["device"] == "cpu"
    assert doc["comparison"]["baseline"] == "a100_ddp_nccl_rank0"
    step = next(m for m in doc["comparison"]["metrics"] if m["key"] == "step_median_ns")
    assert step["best"] == "cpu_torch_profiler"  # 153 ms against 222 ms


def test_json_single_trace_has_no_comparison(analyses):
    doc = analysis_json.document(analyses[:1], None)
    assert doc["comparison"] is None and len(doc["traces"]) == 1


def test_markdown_has_tables_and_escapes_pipes(analyses):
    md = analysis_markdown.render(analyses, compare(analyses))
    assert md.startswith("# profkit analysis")
    assert "## Comparison" in md and "## a100_ddp_nccl_rank0" in md
    assert "| class | count | time | share | SM eff. | occ. | top kernels |" in md
    assert "**GPU waits while the CPU runs model code (host-bound) [gpu:0]" in md
    for line in md.splitlines():
        if line.startswith("|"):
            assert line.endswith("|")


def _keys(obj, out: set[str]) -> set[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.add(k)
            _keys(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _keys(v, out)
    return out


def test_every_json_field_is_documented(analyses):
    doc = analysis_json.document(analyses, compare(analyses))
    for t in doc["traces"]:
        t["skipped"] = t["normalized"] = {}  # their keys are reasons, not fields
    text = json_docs.reference()
    missing = sorted(k for k in _keys(doc, set()) if f"`{k}`" not in text)
    assert not missing, f"fields missing from docs/analysis-json.md: {missing}"


def test_perf_model_in_every_format():
    """ViT on H100 (shapes recorded): summary, rate per class and the per-shape table."""
    vit = api.analyze([DATA / "h100_vit_image_classification.json.gz"])
    perf = vit[0].perf
    for width in (80, 120):
        text = _console_text(vit, None, width)
        assert max(len(line) for line in text.splitlines()) <= width
    assert f"Perf model: {perf.ops:,} op instances modelled" in text
    assert "Peaks of H100 SXM" in text
    assert f"Model FLOP utilization: {100 * perf.model_flops_utilization:.1f} %" in text
    assert "Achieved rate by class" in text and "Ops by input shape" in text
    top = perf.groups[0]
    assert f"{top.flops_per_s / 1e12:.3g}" in text
    md = analysis_markdown.render(vit)
    assert "### Perf model" in md
    assert any(line.startswith("| `aten::addmm` |")
               and line.endswith("| bf16 [768] [788,768] [768,768] |") for line in md.splitlines())
    doc = json.loads(analysis_json.dumps(vit, None))
    groups = doc["traces"][0]["perf"]["groups"]
    assert groups[0]["op"] == top.op and groups[0]["flops"] == top.flops
    assert doc["traces"][0]["perf"]["peak"]["name"] == "H100 SXM"


def test_steps_window_and_whole_trace_marks():
    """The device-side step time leads; a trace without steps is marked in comparisons."""
    steps, whole = api.analyze([DATA / "mi300_resnet_act_checkpoint.json.gz",
                                DATA / "a100_alexnet.json.gz"])
    c = compare([steps, whole])
    assert c.windows == ("steps", "trace")
    text = _console_text([steps, whole], c, 100)
    assert "device-side median 19 ms" in text and "CPU-side median 16 ms" in text
    assert "GPU timeline (steps: GPU work launched in the ProfilerStep# spans)" in text
    assert "whole trace: busy 84 ms of 86.6 ms" in text
    assert "a100_alexnet †" in text and "cover" in text and "the whole trace window" in text
    assert "gpu:2: idle" in text and "launch delay median" in text
    md = analysis_markdown.render([steps, whole], c)
    assert "a100_alexnet †" in md and "cover the whole trace window" in md
    assert "### GPU idle causes and kernel launches" in md
    doc = analysis_json.document([steps, whole], c)
    assert doc["comparison"]["windows"] == ["steps", "trace"]
    assert [t["window"] for t in doc["traces"]] == ["steps", "trace"]
