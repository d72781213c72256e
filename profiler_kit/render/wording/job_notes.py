"""The sentences of the notes of job analyses (several ranks) and of memory analyses, by
code (see :mod:`.notes`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

Figures = Mapping[str, Any]

# why a trace has no memory events: the two ways torch.profiler records none (the memory
# rule's note in .trace_notes says it too)
WHY_NO_MEMORY_EVENTS = ("profile_memory was off, or the profiler followed every thread "
                        "with profile_all_threads, which records none")


def _ranges(values: Sequence[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2, 5, 7-8"``."""
    vals = sorted(set(values))
    out, i = [], 0
    while i < len(vals):
        j = i
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        out.append(str(vals[i]) if i == j else f"{vals[i]}-{vals[j]}")
        i = j + 1
    return ", ".join(out)


def _different_jobs(f: Figures) -> str:
    desc = "; ".join(f"{', '.join(labels)}: world size {world}" for labels, world in f["groups"])
    return (f"{f['folder']}: traces of different jobs (world sizes or process groups "
            f"disagree), analyzed as separate groups: {desc}")


def _clocks_differ(f: Figures) -> str:
    shifts = ", ".join(f"rank {rank} {ns / 1e6:+.3f} ms" for rank, ns in f["shifts"])
    return (f"clocks differ between ranks: aligned at the median end of {f['collectives']} "
            f"collectives common to all ranks (against rank {f['against']}) ({shifts})")


# why the slow-transfer rule has no link to measure against (job_rules)
_NO_LINK: dict[str, Callable[[Figures], str]] = {
    "ranks_missing": lambda f: f"{f['missing']} ranks not traced, maybe on other hosts",
    "no_host_name": lambda f: "no host name in the traces",
    "several_hosts": lambda f: f"ranks on {f['hosts']} hosts: the network's bandwidth is not "
                               "recorded",
    "no_gpu_name": lambda f: "no GPU name in the traces",
    "unknown_gpu": lambda f: f"no interconnect figure for {', '.join(f['gpus'])}",
}


def _no_link(f: Figures) -> str:
    return ("slow-transfer rule not judged: the link between the ranks is not in the traces "
            "(it is known for SXM/OAM GPUs of one host, every rank traced; here: "
            + _NO_LINK[f["why"]](f) + ")")


MiB = 1 << 20


def _reserve_at_peak(f: Figures) -> str:
    share = (f["reserved"] - f["allocated"]) / f["reserved"]
    return (f"at the peak {f['allocated'] / MiB:.1f} MiB allocated of "
            f"{f['reserved'] / MiB:.1f} MiB reserved ({share:.0%} reserved but free); "
            f"the most reserved was {f['peak_reserved'] / MiB:.1f} MiB")


def _free_of_reserved(f: Figures) -> str:
    return (f"{f['free'] / MiB:.1f} MiB of {f['reserved'] / MiB:.1f} MiB reserved is free "
            f"({f['free'] / f['reserved']:.0%})")


def _how_to_record_stacks(f: Figures) -> str:
    if f["by_profkit"]:
        return "record them with profkit run --with-stack"
    return "record them with profkit run --with-stack, or torch.profiler's with_stack=True"


SENTENCES: dict[str, Callable[[Figures], str]] = {
    # the job view (jobs.job_view)
    "different_jobs_in_folder": _different_jobs,
    "ranks_in_several_traces": lambda f: f"{f['folder']}: rank {_ranges(f['ranks'])} appears "
                                         f"in more than one trace; analyzed as {f['groups']} "
                                         "separate groups",
    "ranks_without_trace": lambda f: f"ranks {_ranges(f['missing'])} of {f['world']} have no "
                                     f"trace here: the job view covers ranks "
                                     f"{_ranges(f['ranks'])}",
    "clocks_differ": _clocks_differ,
    "collectives_mismatched": lambda f: f"{f['count']} matched collectives disagree between "
                                        "ranks on type or size: the ranks may not have run "
                                        "the same calls in the same order",
    # the job's rules (advice.job_rules)
    "job_rules_no_step_time": lambda f: "job rules: no step or trace time to measure against",
    "slow_transfer_no_link": _no_link,
    # growth step to step (memory.growth)
    "growth_no_addresses": lambda f: "the trace's memory events have no addresses: frees "
                                     "cannot be matched to allocations",
    "growth_no_steps": lambda f: "no ProfilerStep#k ranges in the trace",
    "growth_too_few_steps": lambda f: f"{f['steps']} profiled step(s): a leak needs at least "
                                      f"{f['needed']} (the first and last are left out of "
                                      "the verdict)",
    "growth_held_by_profiler": lambda f: "each step ran a torch.func transform with "
                                         "record_shapes on, and PyTorch's profiler then keeps "
                                         "the tensors that pass through it alive until it "
                                         "stops (pytorch/pytorch#116697): profile with "
                                         "record_shapes=False (profkit run "
                                         "--no-record-shapes) to tell a leak from the profiler",
    # why a trace has no memory events (memory.explained's unrecorded)
    "no_memory_events": lambda f: WHY_NO_MEMORY_EVENTS,
    "no_memory_events_threaded": lambda f: "its ops run in worker threads, profiled with "
                                           "profile_all_threads, which records none",
    "no_memory_events_profile_memory_off": lambda f: "the run was made with "
                                                     "--no-profile-memory",
    # files a strategy's memory could not use, or used with less (sources.strategy_memory)
    "memory_file_unreadable": lambda f: f["error"],
    "categories_left_out": lambda f: f"{f['path']}: categories of {', '.join(f['devices'])} "
                                     "left out: the profile recorded no allocation there "
                                     "(profile_all_threads records none), only the tensors "
                                     "from before it",
    "categories_run_note": lambda f: f"{f['path']}: {f['text']}",
    "snapshot_left_out": lambda f: f"{f['path']}: left out (one allocator snapshot per "
                                   "strategy is read)",
    "trace_without_stacks": lambda f: f"{f['path']}: no Python stacks "
                                      f"({_how_to_record_stacks(f)}): allocations are named "
                                      "by op only",
    "snapshot_without_stacks": lambda f: f"{f['path']}: recorded without stacks "
                                         "(_record_memory_history(stacks='python')): sites "
                                         "cannot be named",
    # what would reduce fragmentation and idle reserve, with its evidence (memory.advice)
    "snapshot_free_blocks_too_small": lambda f: f"{_free_of_reserved(f)}; "
                                                f"{f['unusable_share']:.0%} of it is in blocks "
                                                "smaller than the largest live block "
                                                f"({f['largest_active'] / MiB:.1f} MiB), the "
                                                "largest free block is "
                                                f"{f['largest_free'] / MiB:.1f} MiB: set "
                                                "PYTORCH_CUDA_ALLOC_CONF="
                                                "expandable_segments:True",
    "snapshot_empty_segments": lambda f: f"{f['segments']} segment(s) of "
                                         f"{f['empty'] / MiB:.1f} MiB "
                                         f"({f['empty'] / f['reserved']:.0%} of reserved) hold "
                                         "no live block: torch.cuda.empty_cache() after the "
                                         "phase that allocated them returns them",
    "snapshot_nothing_to_gain": lambda f: f"{_free_of_reserved(f)}, {f['unusable_share']:.0%} "
                                          "of it in blocks too small for the largest live "
                                          "block: nothing to gain",
    "trace_reserve_idle_at_peak": lambda f: f"{_reserve_at_peak(f)}: free reserve at the peak "
                                            "is fragmentation or cached blocks of other sizes; "
                                            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
                                            "lets segments grow instead (an allocator "
                                            "snapshot's segments tell which)",
    "trace_nothing_to_gain": lambda f: f"{_reserve_at_peak(f)}: nothing to gain",
    # what a fit assumes (memory.fit)
    "fit_linear_in_batch": lambda f: f"the peak grows linearly with the batch (measured at "
                                     f"{f['low']} and {f['high']} items)",
    "fit_categories_scale": lambda f: f"{', '.join(f['growing'])} at the peak are "
                                      f"proportional to the batch ({f['batch']} items); "
                                      f"{', '.join(f['fixed'])} and unknown bytes stay",
    "fit_same_model": lambda f: "the same model, strategy and optimizer (parameters, "
                                "gradients and optimizer state do not change with the batch)",
    "fit_profiler_peak": lambda f: "the peak the profiler saw: the allocator's reserve above "
                                   "it (caching, fragmentation) and other processes on the "
                                   "device are not counted",
}
