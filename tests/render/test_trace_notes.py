"""Every note a trace's analyses can give has its sentence, built from the figures the
analysis gives it: the codes and their figures' names are read from the source with
``ast``, so a note added without its sentence (or a sentence left behind) fails here."""

from __future__ import annotations

from pathlib import Path

import pytest
from note_codes import note_calls

from profiler_kit.analysis.core.note import Note, note
from profiler_kit.render.wording import trace_notes
from profiler_kit.render.wording.notes import say

ANALYSIS = Path(__file__).resolve().parents[2] / "profiler_kit" / "analysis"
# the modules whose notes trace_notes words
SOURCES = ("trace_analysis.py", "advice/recommend.py", "advice/cpu_advice.py",
           "perf/roofline.py", "perf/device_specs.py", "perf/sm_occupancy.py", "code/view.py")

# figures of each code, as the analyses give them
EXAMPLES: dict[str, dict] = {
    "no_step_spans": {},
    "gpu_not_linked_to_steps": {},
    "critical_path_too_large": {"max_events": 2_000_000},
    "cpu_only_trace": {},
    "fp32_matmul_no_compute_capability": {},
    "memory_rule_no_memory_events": {},
    "cpu_rules_no_op_time": {"window": "steps"},
    "cpu_rules_not_judged_waiting": {},
    "cpu_one_thread": {},
    "cpu_waiting_no_shapes": {},
    "cpu_precision_no_input_types": {},
    "cpu_bf16_not_advised": {"kernel": "brg:avx2"},
    "perf_no_input_shapes": {},
    "perf_no_gpu_time": {},
    "perf_ops_without_gpu_work": {"ops": 95},
    "perf_ops_without_time": {"ops": 33},
    "perf_causal_attention_halved": {},
    "perf_above_memory_peak": {"groups": 8, "max_share": 1.504},
    "perf_above_compute_peak": {"groups": 7, "max_share": 1.68},
    "device_not_in_peak_table": {"name": "NVIDIA H100 NVL", "amd_matrix_kernels": False},
    "device_unnamed": {"has_properties": False, "amd_matrix_kernels": False},
    "device_inferred_from_target": {"name": "AMD Radeon Graphics", "has_properties": True,
                                    "part": "MI250 (one GCD)", "gfx": "gfx90a"},
    "device_target_not_in_peak_table": {"name": None, "has_properties": True,
                                        "gfx": "gfx942"},
    "sm_fields_not_recorded": {},
    "no_module_events": {},
    "no_calling_lines": {},
}


def test_every_note_the_analyses_give_has_its_sentence_and_no_other():
    made = note_calls(ANALYSIS / rel for rel in SOURCES)
    assert set(made) == set(trace_notes.SENTENCES) == set(EXAMPLES)
    for code, names in made.items():
        assert names == {frozenset(EXAMPLES[code])}, code


@pytest.mark.parametrize("code", sorted(EXAMPLES))
def test_each_sentence_words_its_figures(code):
    text = say(Note(code, EXAMPLES[code]))
    assert text and text == text.strip() and "{" not in text and not text.endswith(".")


@pytest.mark.parametrize(("n", "text"), [
    (note("critical_path_too_large", max_events=2_000_000),
     "critical path left out: its window holds more than 2,000,000 events (profile with a "
     "schedule to get ProfilerStep# spans)"),
    (note("cpu_rules_no_op_time", window="trace"), "CPU rules: no CPU op time in the trace"),
    (note("perf_above_memory_peak", groups=8, max_share=1.504),
     "8 shape groups moved bytes faster than the memory peak (up to 150%, marked *): the "
     "model counts every operand byte as read from device memory, and these were partly "
     "served from cache (left there by the kernel before, or small enough to fit)"),
    (note("device_not_in_peak_table", name="NVIDIA H100 NVL", amd_matrix_kernels=False),
     "device 'NVIDIA H100 NVL' is not in the peak table: rates without % of peak"),
    (note("device_not_in_peak_table", name="AMD Radeon Graphics", amd_matrix_kernels=True),
     "device 'AMD Radeon Graphics' is not in the peak table (AMD matrix-core kernels, but no "
     "gfx target in their names): rates without % of peak"),
    (note("device_unnamed", has_properties=False, amd_matrix_kernels=False),
     "no deviceProperties: rates without % of peak"),
    (note("device_unnamed", has_properties=True, amd_matrix_kernels=True),
     "deviceProperties without a name (AMD matrix-core kernels, but no gfx target in their "
     "names): rates without % of peak"),
    (note("device_inferred_from_target", name=None, has_properties=False, part="MI300X",
          gfx="gfx942"),
     "no deviceProperties: MI300X inferred from the gfx942 target in the kernel names"),
    (note("device_inferred_from_target", name="AMD Radeon Graphics", has_properties=True,
          part="MI250 (one GCD)", gfx="gfx90a"),
     "device 'AMD Radeon Graphics': MI250 (one GCD) inferred from the gfx90a target in the "
     "kernel names"),
    (note("device_target_not_in_peak_table", name="AMD Radeon Graphics", has_properties=True,
          gfx="gfx942"),
     "device 'AMD Radeon Graphics': the kernel names' gfx942 target is not one part in the "
     "peak table: rates without % of peak"),
])
def test_sentences_with_choices(n, text):
    assert say(n) == text
