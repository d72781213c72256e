"""The precision of the GEMMs and convolutions, and how much ran on tensor cores."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.json.plain import plain
from profiler_kit.render.sections.base import Presenter, View
from profiler_kit.render.sections.blocks import Block, Lines
from profiler_kit.render.wording import units
from profiler_kit.render.wording.trace_words import precision_source


class PrecisionPresenter(Presenter):
    fields = ("precision",)
    order = 160

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        p = a.precision
        if not p.eligible_ns:
            return []
        return [Lines.of(
            f"Precision of GEMM + convolution kernels ({units.duration(p.eligible_ns)}): "
            f"fp16/bf16/fp8 {units.percent(p.low_precision_share)}; "
            f"tensor cores incl. tf32 {units.percent(p.tensor_core_share)} "
            f"(data types from {precision_source(p.source)})")]

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        p = a.precision
        if not p.eligible_ns:
            return []
        return [f"Precision: GEMM + convolution {units.duration(p.eligible_ns)}; fp16/bf16/fp8 "
                f"{units.percent(p.low_precision_share)}, tensor/matrix cores "
                f"{units.percent(p.tensor_core_share)} (data types from "
                f"{precision_source(p.source)}).", ""]

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        p = a.precision
        return {"precision": {
            **plain(p),
            "fp32_simt_top": [{"name": n, "total_ns": ns} for n, ns in p.fp32_simt_top],
            "gemm_fp32_simt_top": [{"name": n, "total_ns": ns}
                                   for n, ns in p.gemm_fp32_simt_top],
            "low_precision_share": p.low_precision_share,
            "tensor_core_share": p.tensor_core_share,
        }}
