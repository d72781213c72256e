"""The sentences of the notes of trace analyses, by code (see :mod:`.notes`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from profiler_kit.render.wording.job_notes import WHY_NO_MEMORY_EVENTS

Figures = Mapping[str, Any]


def _unnamed(f: Figures) -> str:
    return "deviceProperties without a name" if f["has_properties"] else "no deviceProperties"


def _device(f: Figures) -> str:
    """The GPU as the trace names it, or what the trace lacks to name it."""
    return f"device {f['name']!r}" if f["name"] else _unnamed(f)


def _no_target(f: Figures) -> str:
    return " (AMD matrix-core kernels, but no gfx target in their names)" \
        if f["amd_matrix_kernels"] else ""


SENTENCES: dict[str, Callable[[Figures], str]] = {
    # what the figures cover (trace_analysis)
    "no_step_spans": lambda f: "no ProfilerStep# spans: step and GPU figures describe the "
                               "whole trace window",
    "gpu_not_linked_to_steps": lambda f: "no GPU activity is linked to a launch inside the "
                                         "steps (no runtime correlation): GPU figures "
                                         "describe the whole trace window",
    "critical_path_too_large": lambda f: f"critical path left out: its window holds more "
                                         f"than {f['max_events']:,} events (profile with a "
                                         "schedule to get ProfilerStep# spans)",
    # the rules that could not run (advice.recommend, advice.cpu_advice)
    "cpu_only_trace": lambda f: "CPU-only trace (no GPU kernels, memcpy or memset): GPU rules "
                                "not evaluated",
    "fp32_matmul_no_compute_capability": lambda f: "fp32-matmul rule: no NVIDIA "
                                                   "deviceProperties (compute capability "
                                                   "unknown)",
    "memory_rule_no_memory_events": lambda f: f"memory rule: no [memory] events "
                                              f"({WHY_NO_MEMORY_EVENTS})",
    "cpu_rules_no_op_time": lambda f: f"CPU rules: no CPU op time in the {f['window']}",
    "cpu_rules_not_judged_waiting": lambda f: "CPU rules on GEMM/convolution precision and "
                                              "small elementwise ops not judged: most of the "
                                              "op time is waiting",
    "cpu_one_thread": lambda f: "intra-op threads: one thread ran every op, and a trace does "
                                "not record the intra-op worker threads or the machine's "
                                "cores: whether torch.set_num_threads would help cannot be "
                                "told from it",
    "cpu_waiting_no_shapes": lambda f: "CPU waiting rule: no recorded shapes "
                                       "(record_shapes=True) to judge op times against",
    "cpu_precision_no_input_types": lambda f: "CPU precision rule: the GEMM/convolution ops "
                                              "recorded no Input type (record_shapes=True): "
                                              "their precision is unknown",
    "cpu_bf16_not_advised": lambda f: f"CPU precision rule: fp32 GEMM/convolution take most "
                                      f"of the op time, but oneDNN's kernels ({f['kernel']}) "
                                      "name no ISA with bf16: bf16 would be emulated, so it "
                                      "is not advised",
    # the perf model (perf.roofline) and its device (perf.device_specs)
    "perf_no_input_shapes": lambda f: "no input shapes in the trace (record_shapes=False): "
                                      "FLOPs and bytes not modelled",
    "perf_no_gpu_time": lambda f: "no GPU time recorded: FLOPs and bytes from the recorded "
                                  "shapes, no rate, % of peak or MFU (an op's CPU time is "
                                  "only its launches')",
    "perf_ops_without_gpu_work": lambda f: f"{f['ops']} modelled op instances ran no GPU work "
                                          "(CPU-side tensors): left out",
    "perf_ops_without_time": lambda f: f"{f['ops']} modelled ops took no time: left out",
    "perf_causal_attention_halved": lambda f: "causal attention counted at half the full "
                                              "QK^T and PV products (as FlashAttention and "
                                              "TraceLens count it; torch.utils.flop_counter "
                                              "counts them in full): groups marked causal",
    "perf_above_memory_peak": lambda f: f"{f['groups']} shape groups moved bytes faster than "
                                        f"the memory peak (up to {f['max_share']:.0%}, marked "
                                        "*): the model counts every operand byte as read from "
                                        "device memory, and these were partly served from "
                                        "cache (left there by the kernel before, or small "
                                        "enough to fit)",
    "perf_above_compute_peak": lambda f: f"{f['groups']} shape groups ran above the FLOP/s "
                                         f"peak of their data type (up to "
                                         f"{f['max_share']:.0%}, marked *): their kernels "
                                         "took a faster path than that peak assumes (lower "
                                         "precision than the inputs', or structured sparsity)",
    "device_not_in_peak_table": lambda f: f"device {f['name']!r} is not in the peak table"
                                          f"{_no_target(f)}: rates without % of peak",
    "device_unnamed": lambda f: f"{_unnamed(f)}{_no_target(f)}: rates without % of peak",
    "device_inferred_from_target": lambda f: f"{_device(f)}: {f['part']} inferred from the "
                                             f"{f['gfx']} target in the kernel names",
    "device_target_not_in_peak_table": lambda f: f"{_device(f)}: the kernel names' "
                                                 f"{f['gfx']} target is not one part in the "
                                                 "peak table: rates without % of peak",
    # SM figures (perf.sm_occupancy) and the code view (code.view)
    "sm_fields_not_recorded": lambda f: "SM efficiency and achieved occupancy withheld: the "
                                        "trace records no 'blocks per SM' or 'est. achieved "
                                        "occupancy %' for its kernels",
    "no_module_events": lambda f: "no nn.Module events or Python stacks in this trace: record "
                                  "with `profkit record --stack` or `profkit run "
                                  "--with-stack` (or torch.profiler.profile(with_stack=True, "
                                  "with_modules=True)) for time by module and source line",
    "no_calling_lines": lambda f: "nn.Module events but no calling lines (CallFrom): lines "
                                  "are the functions' first lines; record with "
                                  "torch.profiler.profile(with_stack=True) on PyTorch 2.1 or "
                                  "later for the calling lines",
}
