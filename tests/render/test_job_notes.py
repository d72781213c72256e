"""Every note the job and memory analyses can give has its sentence, built from the
figures the analysis gives it: the codes and their figures' names are read from the source
with ``ast``, so a note added without its sentence (or a sentence left behind) fails here.
Each sentence is checked word for word against the text the analyses wrote before notes
were codes."""

from __future__ import annotations

from pathlib import Path

import pytest
from note_codes import note_calls

from profiler_kit.analysis.core.note import Note, note
from profiler_kit.render.wording import job_notes
from profiler_kit.render.wording.notes import say

PACKAGE = Path(__file__).resolve().parents[2] / "profiler_kit"
# the modules whose notes job_notes words
SOURCES = ("analysis/jobs", "analysis/memory", "analysis/job_analysis.py",
           "analysis/advice/job_rules.py", "sources/strategy_memory.py",
           "sources/memory_files.py")

HELD = ("each step ran a torch.func transform with record_shapes on, and PyTorch's profiler "
        "then keeps the tensors that pass through it alive until it stops "
        "(pytorch/pytorch#116697): profile with record_shapes=False (profkit run "
        "--no-record-shapes) to tell a leak from the profiler")
NO_LINK = ("slow-transfer rule not judged: the link between the ranks is not in the traces "
           "(it is known for SXM/OAM GPUs of one host, every rank traced; here: ")

# a note of each kind the analyses give, with its words
EXAMPLES: list[tuple[Note, str]] = [
    (note("different_jobs_in_folder", folder="/job",
          groups=((("rank0", "rank1"), 2), (("other0", "other1"), 4))),
     "/job: traces of different jobs (world sizes or process groups disagree), analyzed as "
     "separate groups: rank0, rank1: world size 2; other0, other1: world size 4"),
    (note("ranks_in_several_traces", folder="/job", ranks=(0, 2), groups=3),
     "/job: rank 0, 2 appears in more than one trace; analyzed as 3 separate groups"),
    (note("ranks_without_trace", missing=(3, 4, 6, 7), world=8, ranks=(0, 1, 2, 5)),
     "ranks 3-4, 6-7 of 8 have no trace here: the job view covers ranks 0-2, 5"),
    (note("clocks_differ", collectives=3, against=0,
          shifts=((1, 5_000_000_000), (2, -7_000_000))),
     "clocks differ between ranks: aligned at the median end of 3 collectives common to all "
     "ranks (against rank 0) (rank 1 +5000.000 ms, rank 2 -7.000 ms)"),
    (note("collectives_mismatched", count=6),
     "6 matched collectives disagree between ranks on type or size: the ranks may not have "
     "run the same calls in the same order"),
    (note("job_rules_no_step_time"), "job rules: no step or trace time to measure against"),
    (note("slow_transfer_no_link", why="ranks_missing", missing=2),
     NO_LINK + "2 ranks not traced, maybe on other hosts)"),
    (note("slow_transfer_no_link", why="no_host_name"), NO_LINK + "no host name in the traces)"),
    (note("slow_transfer_no_link", why="several_hosts", hosts=2),
     NO_LINK + "ranks on 2 hosts: the network's bandwidth is not recorded)"),
    (note("slow_transfer_no_link", why="no_gpu_name"), NO_LINK + "no GPU name in the traces)"),
    (note("slow_transfer_no_link", why="unknown_gpu", gpus=("NVIDIA GeForce RTX 4090",)),
     NO_LINK + "no interconnect figure for NVIDIA GeForce RTX 4090)"),
    (note("growth_no_addresses"),
     "the trace's memory events have no addresses: frees cannot be matched to allocations"),
    (note("growth_no_steps"), "no ProfilerStep#k ranges in the trace"),
    (note("growth_too_few_steps", steps=2, needed=3),
     "2 profiled step(s): a leak needs at least 3 (the first and last are left out of the "
     "verdict)"),
    (note("growth_held_by_profiler"), HELD),
    (note("no_memory_events"),
     "profile_memory was off, or the profiler followed every thread with "
     "profile_all_threads, which records none"),
    (note("no_memory_events_threaded"),
     "its ops run in worker threads, profiled with profile_all_threads, which records none"),
    (note("no_memory_events_profile_memory_off"), "the run was made with --no-profile-memory"),
    (note("memory_file_unreadable", error="/m/c.memory_categories.json: not a memory "
                                          "categories file (JSON is malformed)"),
     "/m/c.memory_categories.json: not a memory categories file (JSON is malformed)"),
    (note("categories_left_out", path="/m/w.memory_categories.json", devices=("cuda:0",)),
     "/m/w.memory_categories.json: categories of cuda:0 left out: the profile recorded no "
     "allocation there (profile_all_threads records none), only the tensors from before it"),
    (note("categories_run_note", path="/m/w.memory_categories.json",
          text="memory profiler failed: boom"),
     "/m/w.memory_categories.json: memory profiler failed: boom"),
    (note("snapshot_left_out", path="/m/b.pickle"),
     "/m/b.pickle: left out (one allocator snapshot per strategy is read)"),
    (note("trace_without_stacks", path="/m/w.json", by_profkit=True),
     "/m/w.json: no Python stacks (record them with profkit run --with-stack): allocations "
     "are named by op only"),
    (note("trace_without_stacks", path="/m/w.json", by_profkit=False),
     "/m/w.json: no Python stacks (record them with profkit run --with-stack, or "
     "torch.profiler's with_stack=True): allocations are named by op only"),
    (note("snapshot_without_stacks", path="/m/s.pickle"),
     "/m/s.pickle: recorded without stacks (_record_memory_history(stacks='python')): sites "
     "cannot be named"),
    (note("fit_linear_in_batch", low=2, high=6),
     "the peak grows linearly with the batch (measured at 2 and 6 items)"),
    (note("fit_categories_scale", growing=("activation", "input", "temporary",
                                           "autograd_detail"), batch=2,
          fixed=("parameter", "gradient", "optimizer_state")),
     "activation, input, temporary, autograd_detail at the peak are proportional to the "
     "batch (2 items); parameter, gradient, optimizer_state and unknown bytes stay"),
    (note("snapshot_free_blocks_too_small", free=18 << 20, reserved=30 << 20,
          unusable_share=8 / 18, largest_active=8 << 20, largest_free=10 << 20),
     "18.0 MiB of 30.0 MiB reserved is free (60%); 44% of it is in blocks smaller than the "
     "largest live block (8.0 MiB), the largest free block is 10.0 MiB: set "
     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
    (note("snapshot_empty_segments", segments=1, empty=10 << 20, reserved=30 << 20),
     "1 segment(s) of 10.0 MiB (33% of reserved) hold no live block: torch.cuda.empty_cache() "
     "after the phase that allocated them returns them"),
    (note("snapshot_nothing_to_gain", free=2 << 20, reserved=30 << 20, unusable_share=0.0),
     "2.0 MiB of 30.0 MiB reserved is free (7%), 0% of it in blocks too small for the "
     "largest live block: nothing to gain"),
    (note("trace_reserve_idle_at_peak", allocated=6 << 20, reserved=8 << 20,
          peak_reserved=12 << 20),
     "at the peak 6.0 MiB allocated of 8.0 MiB reserved (25% reserved but free); the most "
     "reserved was 12.0 MiB: free reserve at the peak is fragmentation or cached blocks of "
     "other sizes; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets segments grow "
     "instead (an allocator snapshot's segments tell which)"),
    (note("trace_nothing_to_gain", allocated=31 << 18, reserved=8 << 20,
          peak_reserved=8 << 20),
     "at the peak 7.8 MiB allocated of 8.0 MiB reserved (3% reserved but free); the most "
     "reserved was 8.0 MiB: nothing to gain"),
    (note("fit_same_model"),
     "the same model, strategy and optimizer (parameters, gradients and optimizer state do "
     "not change with the batch)"),
    (note("fit_profiler_peak"),
     "the peak the profiler saw: the allocator's reserve above it (caching, fragmentation) "
     "and other processes on the device are not counted"),
]


def _files() -> list[Path]:
    return [p for rel in SOURCES for p in ((PACKAGE / rel).rglob("*.py")
                                           if (PACKAGE / rel).is_dir() else [PACKAGE / rel])]


def test_every_note_the_analyses_give_has_its_sentence_and_no_other():
    made = note_calls(_files())
    assert set(made) == set(job_notes.SENTENCES)
    # every call's figures, and nothing else, are among the examples
    assert {(code, n) for code, names in made.items() for n in names} == {
        (n.code, frozenset(n.figures)) for n, _ in EXAMPLES}


@pytest.mark.parametrize(("n", "text"), EXAMPLES, ids=[n.code for n, _ in EXAMPLES])
def test_each_sentence_words_its_figures(n, text):
    assert say(n) == text


def test_every_note_anywhere_in_the_package_has_its_sentence():
    """A note made in a room no table above reads (a new one) still needs its sentence."""
    from profiler_kit.render.wording.notes import SENTENCES

    made = note_calls(p for room in ("analysis", "sources") for p in (PACKAGE / room).rglob(
        "*.py") if p.name != "note.py")
    assert set(made) - set(SENTENCES) == set()
