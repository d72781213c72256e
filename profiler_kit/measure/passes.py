"""Measuring one strategy in one process: a timing pass, then a separate profiled pass.

Profiler overhead must not leak into the reported times, so the samples come from
a pass without the profiler; the profiled pass's own step times are kept beside
them to make the overhead visible. ``measure`` works the same inside a
distributed rank (``worker_name=f"rank{r}"``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

from profiler_kit.contention import RoundContention
from profiler_kit.measure import (
    contention_watch,
    gpu_counters,
    inductor_provenance,
    memory_categories,
    memory_snapshot,
)
from profiler_kit.measure import devices as dev
from profiler_kit.measure.timing import Progress, time_phases
from profiler_kit.scenario import Workload
from profiler_kit.util.artifacts import write_text_atomic

DEFAULT_WORKER = "main"


@dataclass(frozen=True)
class MeasureOptions:
    """How many samples to keep and how to profile."""

    iterations: int = 20  # timed samples kept (after warm-up)
    warmup: int = 3  # discarded iterations
    profile_wait: int = 1  # torch.profiler.schedule(wait, warmup, active, repeat)
    profile_warmup: int = 1
    profile_active: int = 3
    profile_repeat: int = 1
    record_shapes: bool = True
    profile_memory: bool = True
    with_stack: bool = False
    # the CUDA allocator's history with stacks over the profiled pass (memory_snapshot)
    memory_snapshot: bool = False
    # the GPU's counters sampled while profiling (power, clocks, SM active %): gpu_counters
    counters: bool = False
    gzip: bool = False
    # independent rounds of every strategy (the first one also profiles): three by default,
    # the fewest that judge a speedup paired by round and a diff between runs
    repeats: int = 3
    profile: bool = True  # False: the timing pass only (the later rounds)

    @property
    def profiled_steps(self) -> int:
        cycle = self.profile_wait + self.profile_warmup + self.profile_active
        return cycle * max(self.profile_repeat, 1)


@dataclass(frozen=True)
class Measurement:
    """One process's measurement of one strategy."""

    samples_ns: tuple[int, ...]  # timing pass: one synchronized iteration each
    phase_samples_ns: Mapping[str, tuple[int, ...]]  # per phase, when the workload has phases()
    profiled_samples_ns: tuple[int, ...]  # step times of the profiled pass's active steps
    peak_memory: Mapping[str, Mapping[str, int]]  # device -> {"allocated_bytes", "reserved_bytes"}
    trace_files: tuple[str, ...]  # written by tensorboard_trace_handler
    items_per_step: int = 0  # this process's items per step (global throughput sums ranks)
    info: Mapping[str, Any] = field(default_factory=dict)  # the workload's ``info``
    key_averages_files: tuple[str, ...] = ()  # key_averages.{txt,json} of this process
    # under torchrun, on rank 0: why this rank's traces and key averages are not in the run
    # folder (its host dropped out while sending them); "" when they are, or never had to be
    files_lost: str = ""
    # what competed with the timing pass (other processes, own threads, clocks)
    contention: RoundContention | None = None


def measure(
    workload: Workload,
    options: MeasureOptions,
    strategy_dir: Path,
    worker_name: str = DEFAULT_WORKER,
    progress: Progress | None = None,
) -> Measurement:
    """Timing pass, then profiled pass (unless ``options.profile`` is off); writes traces
    and key_averages.{txt,json} into ``strategy_dir``."""
    strategy_dir = Path(strategy_dir)
    strategy_dir.mkdir(parents=True, exist_ok=True)
    devices = list(workload.devices)
    phases = _phases(workload)
    if options.profile:  # before the first call compiles: each kernel to its FX nodes' lines
        inductor_provenance.enable_if_compiling()

    held = dev.reset_peak_memory(devices)
    contention_watch.mark_root()
    watch = contention_watch.Watch(devices)
    watch.start()
    samples = time_phases(phases, devices, options.iterations, options.warmup, progress, "timing")
    contention = watch.stop(torch.get_num_threads())
    peak = dev.peak_memory(devices, held)

    trace_files: tuple[str, ...] = ()
    profiled: list[int] = []
    ka_files: tuple[str, ...] = ()
    if options.profile:
        before = set(os.listdir(strategy_dir))
        profiled, cpu_peak, averages = _profiled_pass(workload, devices, options, strategy_dir,
                                                      worker_name, progress)
        after = sorted(set(os.listdir(strategy_dir)) - before)
        trace_files = tuple(str(strategy_dir / f) for f in after
                            if f.endswith((".pt.trace.json", ".pt.trace.json.gz")))
        if trace_files:  # a compiled model's kernels to the user's lines, beside the trace
            inductor_provenance.write_beside(strategy_dir, worker_name)
        if cpu_peak is not None:
            peak = {"cpu": {"allocated_bytes": cpu_peak}, **peak}
        ka_files = _write_key_averages(averages, strategy_dir, worker_name)

    phase_samples = {
        name: tuple(values) for name, values in samples.items() if name != "step"
    } if len(phases) > 1 or phases[0][0] != "step" else {}
    return Measurement(
        samples_ns=tuple(samples["step"]),
        phase_samples_ns=phase_samples,
        profiled_samples_ns=tuple(profiled),
        peak_memory=peak,
        trace_files=trace_files,
        items_per_step=int(workload.items_per_step),
        info=_info(workload, options),
        key_averages_files=ka_files,
        contention=contention,
    )


# why a strategy has no CPU peak memory although profile_memory was on (run.json's info)
NO_MEMORY_EVENTS = ("not recorded: its ops run in worker threads, profiled with "
                    "profile_all_threads, which records no memory events")


def _info(workload: Workload, options: MeasureOptions) -> dict[str, Any]:
    info = dict(workload.info or {})
    if (options.profile and options.profile_memory
            and gpu_counters.experimental_config(False, bool(workload.threaded))):
        info["cpu_memory"] = NO_MEMORY_EVENTS
    return info


def _phases(workload: Workload) -> list[tuple[str, Callable[[], None]]]:
    return list(workload.phases()) or [("step", workload.step)]


def _experimental(workload: Workload, options: MeasureOptions) -> dict[str, Any]:
    """The profiler's experimental config: the GPU counters (``options.counters``; the
    run checked they can be sampled), and every thread, not only the one that starts the
    profiler, when the workload runs ops in worker threads (``threaded = True``).

    Without every thread, ops that a strategy runs in worker threads (``threads``) are
    missing from its trace, key averages and hotspot summary. It is not the default
    because in this mode the profiler records no ``[memory]`` events, so the CPU peak
    memory of such a strategy is unknown (``_info`` says so). Older torch has no such
    option and records the starting thread only."""
    return gpu_counters.experimental_config(options.counters, bool(workload.threaded))


def _profiled_pass(
    workload: Workload,
    devices: list[Any],
    options: MeasureOptions,
    strategy_dir: Path,
    worker_name: str,
    progress: Progress | None,
) -> tuple[list[int], int | None, Any]:
    """Run the scheduled profiler; return active step times, CPU peak bytes, key averages."""
    activities = [ProfilerActivity.CPU]
    if dev.cuda_devices(devices):
        activities.append(ProfilerActivity.CUDA)
    else:
        # Kineto's GPU probe errors and USDT markers are noise in a CPU-only run; read
        # when the profiler first starts, and a user's own setting wins.
        os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    wait, warm, active = options.profile_wait, options.profile_warmup, options.profile_active
    cycle = wait + warm + active
    total = options.profiled_steps
    step_times: list[int] = []
    cuda = dev.cuda_devices(devices) if options.memory_snapshot else []
    recorder = (memory_snapshot.recording(cuda, strategy_dir, worker_name) if cuda
                else nullcontext())
    with recorder, profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warm, active=active, repeat=options.profile_repeat),
        on_trace_ready=_trace_ready(devices, options, strategy_dir, worker_name),
        record_shapes=options.record_shapes,
        profile_memory=options.profile_memory,
        with_stack=options.with_stack,
        **_experimental(workload, options),
    ) as prof:
        for i in range(total):
            dev.synchronize(devices)
            start = time.perf_counter_ns()
            workload.step()
            dev.synchronize(devices)
            if i % cycle >= wait + warm:
                step_times.append(time.perf_counter_ns() - start)
            prof.step()
            if progress is not None:
                progress("profiling", i + 1, total)
    cpu_peak = _cpu_peak_bytes(prof) if options.profile_memory else None
    return step_times, cpu_peak, prof.key_averages()


def _trace_ready(devices: list[Any], options: MeasureOptions, strategy_dir: Path,
                 worker_name: str) -> Callable[[Any], None]:
    """The trace writer, plus memory by category when the recording options allow it."""
    writer = tensorboard_trace_handler(str(strategy_dir), worker_name=worker_name,
                                       use_gzip=options.gzip)
    if not memory_categories.wanted(options.record_shapes, options.profile_memory,
                                    options.with_stack):
        return writer
    names = ["cpu", *(str(d) for d in dev.cuda_devices(devices))]
    return memory_categories.handler(writer, strategy_dir, worker_name, names)


def _cpu_peak_bytes(prof: Any) -> int | None:
    """Largest rise of CPU bytes allocated during the last active window, from the
    profiler's memory events (the CPU has no allocator statistics to ask)."""
    try:
        events = prof.profiler.kineto_results.events()
        mem = sorted(
            (e.start_ns(), e.nbytes())
            for e in events
            if e.name() == "[memory]" and str(e.device_type()).endswith("CPU")
        )
    except (AttributeError, RuntimeError):
        return None
    if not mem:
        return None
    level = low = peak = 0
    for _ts, nbytes in mem:
        level += nbytes
        low = min(low, level)
        peak = max(peak, level - low)
    return int(peak)


def _us_to_ns(value: Any) -> int:
    return int(round(float(value or 0) * 1000))


def key_average_rows(averages: Any) -> list[dict[str, Any]]:
    """``prof.key_averages()`` as plain dicts with times in ns and memory in bytes."""
    rows = []
    for e in averages:
        rows.append({
            "name": e.key,
            "count": int(e.count),
            "self_cpu_time_ns": _us_to_ns(e.self_cpu_time_total),
            "cpu_time_total_ns": _us_to_ns(e.cpu_time_total),
            "self_device_time_ns": _us_to_ns(getattr(e, "self_device_time_total", 0)),
            "device_time_total_ns": _us_to_ns(getattr(e, "device_time_total", 0)),
            "self_cpu_memory_bytes": int(e.self_cpu_memory_usage or 0),
            "cpu_memory_bytes": int(e.cpu_memory_usage or 0),
            "self_device_memory_bytes": int(getattr(e, "self_device_memory_usage", 0) or 0),
            "device_memory_bytes": int(getattr(e, "device_memory_usage", 0) or 0),
            "flops": int(getattr(e, "flops", 0) or 0),
            "is_user_annotation": bool(getattr(e, "is_user_annotation", False)),
        })
    rows.sort(key=lambda r: (-r["self_cpu_time_ns"], r["name"]))
    return rows


def _write_key_averages(averages: Any, strategy_dir: Path, worker_name: str) -> tuple[str, ...]:
    stem = "key_averages" if worker_name == DEFAULT_WORKER else f"key_averages.{worker_name}"
    has_device = any(getattr(e, "device_time_total", 0) for e in averages)
    sort_by = "self_device_time_total" if has_device else "self_cpu_time_total"
    txt = strategy_dir / f"{stem}.txt"
    js = strategy_dir / f"{stem}.json"
    write_text_atomic(txt, averages.table(sort_by=sort_by, row_limit=-1, max_name_column_width=60))
    write_text_atomic(js, json.dumps(key_average_rows(averages), indent=1) + "\n")
    return (str(txt), str(js))
