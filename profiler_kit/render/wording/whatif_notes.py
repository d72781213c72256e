"""The sentences of the notes of whatif analyses, by code (see :mod:`.notes`): what each
change of the replay touched (``whatif.changes``), why a replay is not trusted and which
dependencies its graph lacks (``whatif.replay``, ``whatif.graph``), and the caveats of the
recommendations' predictions (``predicted_gains``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from profiler_kit.analysis.whatif import graph

Figures = Mapping[str, Any]


def _ms(ns: float) -> str:
    return f"{ns / 1e6:,.2f} ms"


def _short(ns: int) -> str:
    """A wait: milliseconds with one decimal, microseconds under one."""
    return f"{ns / 1e6:,.1f} ms" if ns >= 1_000_000 else f"{ns / 1e3:,.0f} µs"


# what each kind of wait the graph cannot explain is (graph.MissingDependency), after its
# count; {ms}: the wait summed
_LACKS = {
    graph.OTHER_RANKS: "communication kernels start {ms} later than their launch and stream "
                       "allow: they wait for other ranks, which one rank's trace does not show",
    graph.NO_LAUNCH: "GPU activities with no launch call in the trace start {ms} later than "
                     "their stream allows: what launched them (a CUDA graph, an unprofiled "
                     "thread) is not in the trace",
    graph.CROSS_STREAM: "GPU activities start {ms} later than their launch and stream allow, "
                        "right after work on another stream ended: a dependency between "
                        "streams the trace records no event for",
    graph.GPU_SHARED: "GPU activities start {ms} later than their launch and stream allow "
                      "while other streams' work ran: the GPU shared between streams, which "
                      "the replay does not model",
    graph.UNEXPLAINED: "GPU activities start {ms} later than their launch and stream allow, "
                       "for no reason the trace shows",
    graph.LATE_RETURN: "blocking calls return {ms} later than the GPU work they wait for "
                       "allows: they wait for something else the trace does not show",
}


def lacks(kind: str, events: int, wait_ns: int) -> str:
    """The sentence of a dependency the graph lacks (a ``MissingDependency``)."""
    return f"{events} " + _LACKS[kind].format(ms=_short(wait_ns))


def replay_miss(f: Figures) -> str:
    """Why the replay is not trusted (the figures of ``replay_untrusted`` and
    ``prediction_not_trusted``): its miss, and the dependencies the graph lacks."""
    miss = f"the replay misses the measured step by {f['step_error']:.1%} and the window by " \
           f"{f['window_error']:.1%}"
    if f["missing"]:
        return f"{miss}; the graph lacks: " + "; ".join(lacks(*m) for m in f["missing"])
    return f"{miss}: a dependency the trace does not record (between host threads, or " \
           f"GPU work it does not show)"


def _precision(f: Figures) -> str:
    bound = (f"{f['memory_bound']} held at their op's 16-bit bytes over "
             f"{f['bytes_per_s'] / 1e12:.2g} TB/s" if f["shapes"]
             else "no shapes recorded: the compute ratio alone, no memory bound")
    return (f"{f['change']}: {f['kernels']} fp32 GEMM/convolution kernels in autocast's reach, "
            f"{_ms(f['before_ns'])} → {_ms(f['after_ns'])}: {f['device']} {f['dtype']} matrix "
            f"peak over its fp32/TF32 one (×{f['median_ratio']:.2g} median); {bound}; the "
            f"casts autocast adds are not counted")


def _cuda_graphs(f: Figures) -> str:
    n = f["regions"]
    return (f"{f['change']}: {n} region{'s' if n != 1 else ''}, {_ms(f['removed_ns'])} of host "
            f"op and launch time collapse to one graph launch of {f['launch_ns'] / 1e3:.0f} µs "
            f"each" + (f"; {f['kept_syncs']} blocking calls inside stay"
                       if f["kept_syncs"] else ""))


def _measured_ops(f: Figures) -> str:
    host = f["host_ns"]
    kernels = (f"; their kernels {_ms(f['kernels_before_ns'])} → {_ms(f['kernels_after_ns'])}"
               if f["kernels_before_ns"] is not None else "")
    return (f"{f['change']}: {f['calls']} op calls "
            f"{'in chains compiled and ' if f['chains'] else ''}timed on {f['device']} from "
            f"the trace's shapes, {'+' if host >= 0 else '−'}{_ms(abs(host))} of host time"
            f"{kernels}; measured {f['measured_ns'] / max(f['op_ns'], 1):.0%} of the op time, "
            f"the rest kept as recorded"
            + (f" ({f['not_measured']} op groups not rebuilt, e.g. {f['not_measured_why']})"
               if f["not_measured"] else ""))


def _held_back(f: Figures) -> str:
    n = len(f["rules"])
    names = ", ".join(f"{rule} [{scope}] ({change}: {pct:.1f} %)"
                      for rule, scope, change, pct in f["rules"])
    return (f"held back: {n} rule{'s' if n != 1 else ''} whose predicted gain is under "
            f"{f['min_gain_pct']:g} %: {names} (--min-gain sets the line)")


SENTENCES: dict[str, Callable[[Figures], str]] = {
    # what each change touched, or why it changed nothing (whatif.changes)
    "no_matching_activity": lambda f: f"{f['change']}: no GPU activity matches "
                                      f"{f['pattern']!r}",
    "kernels_sped_up": lambda f: f"{f['change']}: {f['activities']} GPU activities, "
                                 f"{_ms(f['before_ns'])} of work → {_ms(f['after_ns'])}",
    "precision_device_without_peaks": lambda f: f"{f['change']}: device "
                                                f"{f['device'] or '(unnamed)'} is not in the "
                                                f"peak table; no change modeled",
    "no_fp32_matrix_kernel_in_reach": lambda f: f"{f['change']}: no fp32 GEMM or convolution "
                                                f"kernel in autocast's reach",
    "no_faster_matrix_rate": lambda f: f"{f['change']}: {f['device']} has no faster "
                                       f"{f['dtype']} matrix rate than its fp32 one; no "
                                       f"change modeled",
    "precision_modeled": _precision,
    "no_gpu_launch": lambda f: f"{f['change']}: no GPU work launched in the trace: nothing for "
                               f"a graph to hold",
    "no_graph_region": lambda f: f"{f['change']}: no region {f['region']!r} in the trace",
    "graphs_collapsed": _cuda_graphs,
    "no_fusable_kernel": lambda f: f"{f['change']}: no elementwise or normalization kernel in "
                                   f"the trace: nothing to fuse",
    "no_fusable_run": lambda f: f"{f['change']}: no two elementwise or normalization kernels "
                                f"back to back on a stream",
    "kernels_fused": lambda f: f"{f['change']}: {f['runs']} runs of {f['kernels']} elementwise "
                               f"and normalization kernels, {_ms(f['before_ns'])} of work → "
                               f"{_ms(f['after_ns'])} (each run its longest kernel); "
                               f"{_ms(f['launch_ns'])} of launch calls go (one launch a run)",
    "no_dataloader_next": lambda f: f"{f['change']}: no DataLoader __next__ in the trace",
    "dataloader_wait_removed": lambda f: f"{f['change']}: {f['calls']} DataLoader __next__ "
                                         f"calls, {_ms(f['removed_ns'])} of host time, removed",
    "no_blocking_wait_in_steps": lambda f: f"{f['change']}: no blocking call waits for the GPU "
                                           f"in the steps",
    "syncs_no_longer_wait": lambda f: f"{f['change']}: {f['calls']} blocking calls no longer "
                                      f"wait ({_ms(f['waited_ns'])} recorded in them beyond "
                                      f"their own cost)",
    "no_communication_kernel": lambda f: f"{f['change']}: no communication kernel in the trace",
    "communication_moved": lambda f: f"{f['change']}: {f['moved']} of {f['kernels']} "
                                     f"communication kernels ({_ms(f['moved_ns'])}) moved off "
                                     f"{f['streams']} compute streams; {f['waits_dropped']} "
                                     f"waits on them dropped",
    "straggler_needs_ranks": lambda f: f"{f['change']}: needs the traces of two or more ranks "
                                       f"of one job, matched by their collectives; no change "
                                       f"modeled",
    "straggler_waits_removed": lambda f: f"{f['change']}: {f['kernels'] + f['spans']} "
                                         f"collectives ({f['kernels']} kernels, {f['spans']} "
                                         f"CPU spans) no longer wait for the other ranks, "
                                         f"{_ms(f['removed_ns'])} of waiting removed",
    "no_op_measured": lambda f: f"{f['change']}: none of the trace's ops was measured",
    "ops_measured": _measured_ops,
    # the replay of the unchanged trace against the measurement (whatif.replay)
    "replay_untrusted": replay_miss,
    # the caveats of a recommendation's prediction (predicted_gains)
    "prediction_not_trusted": lambda f: f"not trusted: {replay_miss(f)}",
    "prediction_lower_bound": lambda f: f"a lower bound: the fixed delays of the steps' GPU "
                                        f"work (waits the trace does not explain), summed "
                                        f"over its streams, come to "
                                        f"{f['fixed_delay_share']:.0%} of the steps' time and "
                                        f"do not move with a change",
    "straggler_needs_job": lambda f: "needs the traces of two or more ranks of one job: "
                                     "profkit whatif --no-straggler",
    "rules_held_back": _held_back,
    # why a rule no change models has no predicted gain (advice.counterparts)
    "no_change_models_advice": lambda f: "no what-if change models its advice",
    "optimizer_not_modeled": lambda f: "no change models a fused or foreach optimizer",
    "symptom_of_other_rules": lambda f: "a symptom: the rules of its causes (host-bound, "
                                        "launch-bound, DataLoader, syncs) carry the "
                                        "predictions",
    "link_speed_not_modeled": lambda f: "the link's speed is not a change the replay models",
    "transfer_overlap_not_modeled": lambda f: "moving a transfer beside compute is not a "
                                              "change the replay models for the job",
    "copies_not_modeled": lambda f: "fewer or pinned copies are not a change the replay models",
    "memory_is_not_time": lambda f: "memory is not time: the step does not move",
    "dropped_bias_not_timed": lambda f: "dropping a bias the batchnorm cancels saves a kernel "
                                        "the replay does not time",
    "padded_shapes_need_a_run": lambda f: "padded shapes run other kernels, which only a run "
                                          "of them can time (profkit whatif --measure times "
                                          "the ops as recorded)",
    "batched_gemms_need_a_run": lambda f: "batched GEMMs run other kernels, which only a run "
                                          "of them can time",
    "channels_last_measured_only": lambda f: "measured, not modeled: profkit whatif --measure "
                                             "--channels-last times each convolution in "
                                             "channels_last on this machine",
    "priced_by_fusion_or_graphs": lambda f: "fusion or CUDA graphs price it: profkit whatif "
                                            "--fusion --cuda-graphs",
    "free_cores_not_modeled": lambda f: "free cores are not a change the replay models",
    "cpu_bf16_measured_only": lambda f: "measured, not modeled: profkit whatif --measure "
                                        "--precision bf16 times each op in bf16 on this "
                                        "machine",
    "cpu_fusion_not_modeled": lambda f: "fusion on the CPU is not a change the replay models",
}
