"""Every note the what-if replay and the predictions can give has its sentence, built from
the figures the analysis gives it: the codes and their figures' names are read from the
source with ``ast``, so a note added without its sentence (or a sentence left behind)
fails here; the notes of real traces are worded, also after run.json's round trip."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from note_codes import note_calls
from real_traces import DATA

from profiler_kit.analysis.advice.counterparts import WHY_NO_PREDICTION
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.whatif import changes as c
from profiler_kit.analysis.whatif.replay import what_if
from profiler_kit.render.wording import whatif_notes
from profiler_kit.render.wording.notes import say
from profiler_kit.trace.loader import load

ANALYSIS = Path(__file__).resolve().parents[2] / "profiler_kit" / "analysis"
# the modules whose notes whatif_notes words
SOURCES = (*(f"whatif/{p.name}" for p in sorted((ANALYSIS / "whatif").glob("*.py"))),
           "predicted_gains.py")
UNTRUSTED = {"step_error": 0.09, "window_error": 0.021,
             "missing": (("other_ranks", 80, 1_250_000), ("late_return", 3, 950))}

# figures of each code, as the analyses give them
EXAMPLES: dict[str, dict] = {
    "no_matching_activity": {"change": "kernels nccl=2", "pattern": "nccl"},
    "kernels_sped_up": {"change": "kernels gemm=2", "activities": 12, "before_ns": 4_000_000,
                        "after_ns": 2_000_000},
    "precision_device_without_peaks": {"change": "precision bf16", "device": None},
    "no_fp32_matrix_kernel_in_reach": {"change": "precision bf16"},
    "no_faster_matrix_rate": {"change": "precision bf16", "device": "V100", "dtype": "bf16"},
    "precision_modeled": {"change": "precision fp16", "kernels": 3, "before_ns": 1.6e5,
                          "after_ns": 2e4, "device": "A100", "dtype": "fp16",
                          "median_ratio": 16.0, "shapes": True, "memory_bound": 1,
                          "bytes_per_s": 1.555e12},
    "no_gpu_launch": {"change": "cuda-graphs"},
    "no_graph_region": {"change": "cuda-graphs fwd", "region": "fwd"},
    "graphs_collapsed": {"change": "cuda-graphs", "regions": 1, "removed_ns": 80_000,
                         "launch_ns": 5_000, "kept_syncs": 0},
    "no_fusable_kernel": {"change": "fusion"},
    "no_fusable_run": {"change": "fusion"},
    "kernels_fused": {"change": "fusion", "runs": 1, "kernels": 3, "before_ns": 60_000,
                      "after_ns": 30_000, "launch_ns": 10_000},
    "no_dataloader_next": {"change": "no-dataloader-wait"},
    "dataloader_wait_removed": {"change": "no-dataloader-wait", "calls": 4,
                                "removed_ns": 3_000_000},
    "no_blocking_wait_in_steps": {"change": "no-sync"},
    "syncs_no_longer_wait": {"change": "no-sync", "calls": 1, "waited_ns": 100_000},
    "no_communication_kernel": {"change": "overlap-comm"},
    "communication_moved": {"change": "overlap-comm", "moved": 0, "kernels": 80,
                            "moved_ns": 0, "streams": 0, "waits_dropped": 0},
    "straggler_needs_ranks": {"change": "no-straggler"},
    "straggler_waits_removed": {"change": "no-straggler", "kernels": 0, "spans": 3,
                                "removed_ns": 1_000_000},
    "no_op_measured": {"change": "precision bf16 (measured)"},
    "ops_measured": {"change": "compile (measured)", "calls": 2, "chains": True,
                     "device": "cpu", "host_ns": -20_000, "kernels_before_ns": None,
                     "kernels_after_ns": None, "measured_ns": 40_000, "op_ns": 90_000,
                     "not_measured": 1, "not_measured_why": "aten::foo: no inputs recorded"},
    "replay_untrusted": UNTRUSTED,
    "prediction_not_trusted": UNTRUSTED,
    "prediction_lower_bound": {"fixed_delay_share": 0.31},
    "straggler_needs_job": {},
    "rules_held_back": {"min_gain_pct": 2.0, "rules": (("c", "trace", "cuda-graphs", 1.0),
                                                       ("d", "gpu:0", "fusion", 0.25))},
    **{code: {} for code in ("no_change_models_advice", *WHY_NO_PREDICTION.values())},
}


def test_every_note_the_analyses_give_has_its_sentence_and_no_other():
    # the reasons a rule has no prediction are the values of WHY_NO_PREDICTION
    made = {code: {frozenset()} for code in WHY_NO_PREDICTION.values()} | note_calls(
        ANALYSIS / rel for rel in SOURCES)
    assert set(made) == set(whatif_notes.SENTENCES) == set(EXAMPLES)
    for code, names in made.items():
        # a Note(code, figures) takes the untrusted replay's figures
        assert {frozenset(EXAMPLES["replay_untrusted"]) if n is None else n
                for n in names} == {frozenset(EXAMPLES[code])}, code
    assert c.NOTHING_TO_CHANGE < set(made)


@pytest.mark.parametrize("code", sorted(EXAMPLES))
def test_each_sentence_words_its_figures_after_run_json_too(code):
    n = Note(code, EXAMPLES[code])
    text = say(n)
    assert text and text == text.strip() and "{" not in text and not text.endswith(".")
    assert say(msgspec.convert(msgspec.to_builtins(n), Note)) == text


@pytest.mark.parametrize(("n", "text"), [
    (note("precision_modeled", **EXAMPLES["precision_modeled"]),
     "precision fp16: 3 fp32 GEMM/convolution kernels in autocast's reach, 0.16 ms → 0.02 ms: "
     "A100 fp16 matrix peak over its fp32/TF32 one (×16 median); 1 held at their op's 16-bit "
     "bytes over 1.6 TB/s; the casts autocast adds are not counted"),
    (note("precision_modeled", **{**EXAMPLES["precision_modeled"], "shapes": False}),
     "precision fp16: 3 fp32 GEMM/convolution kernels in autocast's reach, 0.16 ms → 0.02 ms: "
     "A100 fp16 matrix peak over its fp32/TF32 one (×16 median); no shapes recorded: the "
     "compute ratio alone, no memory bound; the casts autocast adds are not counted"),
    (note("precision_device_without_peaks", change="precision bf16", device=None),
     "precision bf16: device (unnamed) is not in the peak table; no change modeled"),
    (note("graphs_collapsed", change="cuda-graphs", regions=2, removed_ns=1_234_567,
          launch_ns=4_600, kept_syncs=3),
     "cuda-graphs: 2 regions, 1.23 ms of host op and launch time collapse to one graph "
     "launch of 5 µs each; 3 blocking calls inside stay"),
    (note("ops_measured", **EXAMPLES["ops_measured"]),
     "compile (measured): 2 op calls in chains compiled and timed on cpu from the trace's "
     "shapes, −0.02 ms of host time; measured 44% of the op time, the rest kept as recorded "
     "(1 op groups not rebuilt, e.g. aten::foo: no inputs recorded)"),
    (note("ops_measured", **{**EXAMPLES["ops_measured"], "chains": False, "host_ns": 0,
                             "kernels_before_ns": 80_000, "kernels_after_ns": 40_000,
                             "not_measured": 0, "not_measured_why": None}),
     "compile (measured): 2 op calls timed on cpu from the trace's shapes, +0.00 ms of host "
     "time; their kernels 0.08 ms → 0.04 ms; measured 44% of the op time, the rest kept as "
     "recorded"),
    (note("replay_untrusted", **UNTRUSTED),
     "the replay misses the measured step by 9.0% and the window by 2.1%; the graph lacks: 80 "
     "communication kernels start 1.2 ms later than their launch and stream allow: they wait "
     "for other ranks, which one rank's trace does not show; 3 blocking calls return 1 µs "
     "later than the GPU work they wait for allows: they wait for something else the trace "
     "does not show"),
    (note("prediction_not_trusted", **{**UNTRUSTED, "missing": ()}),
     "not trusted: the replay misses the measured step by 9.0% and the window by 2.1%: a "
     "dependency the trace does not record (between host threads, or GPU work it does not "
     "show)"),
    (note("rules_held_back", **EXAMPLES["rules_held_back"]),
     "held back: 2 rules whose predicted gain is under 2 %: c [trace] (cuda-graphs: 1.0 %), "
     "d [gpu:0] (fusion: 0.2 %) (--min-gain sets the line)"),
])
def test_sentences_with_choices(n, text):
    assert say(n) == text


@pytest.mark.parametrize("name", ["a100_ddp_nccl_rank0.json.gz", "h100_bert_small.json.gz",
                                  "cpu_torch_profiler.pt.trace.json.gz"])
def test_the_notes_of_real_traces_are_worded(name):
    w = what_if(load(DATA / name), changes=[
        c.Precision("bf16"), c.CudaGraphs(), c.CudaGraphs("no such region"), c.Fusion(),
        c.NoDataloaderWait(), c.NoSync(), c.OverlapComm(), c.NoStraggler(),
        c.Kernels("gemm", 2.0), c.Kernels("no such kernel", 2.0)])
    notes = [n for g in w.gains for n in g.notes]
    assert len(notes) == len(w.replay.notes) == 10  # all together: one each too
    for n, change in zip(notes + list(w.replay.notes), [g.change for g in w.gains] * 2,
                         strict=True):
        assert say(n).startswith(f"{change}: ")
