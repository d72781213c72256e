"""The ``ddp`` run as a report in PyTorch's DDP-benchmark schema, plus what that schema lacks.

PyTorch's benchmark (torch/benchmarks/distributed/ddp/benchmark.py) writes::

    {"pytorch_version", "cuda_version", "distributed_backend", "bucket_size",
     "benchmark_results": [{"model", "batch_size",
                            "result": [{"ranks": [0, 1, ...], "measurements": [s, ...]}]}]}

with the first result of each benchmark the run without DDP. This report keeps every one
of those keys, so PyTorch's own ``diff.py`` reads it, and adds: ``metadata`` (versions,
backend, bucket size, device, threads, world and topology), per benchmark its
``bucket_size`` and ``image_size``, and per configuration its name, ``world_size``,
``times`` (p50/p75/p90/p95 seconds per iteration, examples/s per replica and aggregate),
the verdicts by throughput (``speedup``, ``scaling_efficiency``, ``best``),
``per_rank_measurements`` with each rank's median, and ``repeat_measurements`` (each
independent run's samples, when the configuration was repeated). One difference in
meaning: ``measurements`` here are the slowest rank's time of each step (PyTorch pools
every rank's samples). No torch import.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from profiler_kit.errors import UsageError
from profiler_kit.results import (
    OK,
    SKIPPED,
    RunResult,
    decode_run,
    scaling_efficiency,
    speedup,
)
from profiler_kit.util.artifacts import RUN_JSON, write_text_atomic
from profiler_kit.util.path_kinds import DDP_REPORT_NAME
from profiler_kit.version import __version__

SCHEMA = "profkit.ddp_report/1"
REPORT_NAME = DDP_REPORT_NAME
PERCENTILES = (50, 75, 90, 95)


def times(measurements_s: Sequence[float], batch_size: int, ranks: int) -> dict[str, Any]:
    """Percentiles of seconds per iteration and the examples/s they imply (numpy's linear
    percentiles, as PyTorch's benchmark computes them)."""
    data = np.asarray(measurements_s, dtype=float)
    out: dict[str, Any] = {"sec_per_iter": {}, "examples_per_sec_per_replica": {},
                           "examples_per_sec": {}}
    for p in PERCENTILES:
        value = float(np.percentile(data, p))
        key = f"p{p}"
        out["sec_per_iter"][key] = value
        out["examples_per_sec_per_replica"][key] = batch_size / value if value > 0 else None
        out["examples_per_sec"][key] = batch_size * ranks / value if value > 0 else None
    return out


def build(run: RunResult) -> dict[str, Any]:
    """The report of a ``ddp`` run (as the runner returns it or ``read_run`` decodes it)."""
    env = run.environment
    dist_env = dict(env.get("distributed") or {})
    buckets = run.params.get("bucket_cap_mb")
    bucket_list = list(buckets) if isinstance(buckets, (list, tuple)) else [buckets]
    device = run.device
    backend = dist_env.get("backend") or ("nccl" if device.startswith("cuda") else "gloo")

    benchmarks: dict[tuple[Any, ...], dict[str, Any]] = {}
    threads: int | None = None
    for s in run.strategies:
        pp = s.point_params or run.params
        bucket = pp.get("bucket_cap_mb")
        bucket = bucket[0] if isinstance(bucket, (list, tuple)) else bucket
        batch = int(pp.get("batch_size", 0))
        key = (pp.get("model"), batch, bucket, pp.get("image_size"))
        bench = benchmarks.setdefault(key, {
            "model": pp.get("model"),
            "batch_size": batch,
            "bucket_size": bucket,
            "image_size": pp.get("image_size"),
            "result": [],
            "failed": [],
            "skipped": [],
        })
        world = _world_size(s.name)
        if s.status != OK or not s.samples_ns:
            bucket_name = "skipped" if s.status == SKIPPED else "failed"
            bench[bucket_name].append({
                "configuration": s.name, "world_size": world,
                "status": s.status, "error": s.error or s.reason,
            })
            continue
        if threads is None and s.info.get("threads_per_rank") is not None:
            threads = int(s.info["threads_per_rank"])
        measurements = [ns / 1e9 for ns in s.samples_ns]
        per_rank = s.per_rank_samples_ns or (s.samples_ns,)
        bench["result"].append({
            "ranks": list(range(world)),
            "measurements": measurements,
            "configuration": s.name,
            "world_size": world,
            "ddp": s.name != "no-ddp",
            "times": times(measurements, batch, world),
            "per_rank_measurements": [[ns / 1e9 for ns in r] for r in per_rank],
            "per_rank_sec_per_iter_p50": [float(np.percentile(r, 50)) / 1e9 for r in per_rank],
            "repeat_measurements": [[ns / 1e9 for ns in r] for r in s.repeat_samples_ns],
            # what competed with each round (profiler_kit.contention), for profkit diff
            "contention": msgspec.to_builtins(s.contention),
            "profiled_sec_per_iter_p50": s.profiled.p50_ns / 1e9 if s.profiled else None,
            "trace_dir": s.dir,
        })
    for bench in benchmarks.values():
        bench["result"].sort(key=lambda r: (r["ddp"], r["world_size"]))
        _add_scaling(bench["result"])

    bucket_size = bucket_list[0] if len(bucket_list) == 1 else bucket_list
    metadata = {
        "profkit_version": __version__,
        "scenario": "ddp",
        "run_id": run.run_dir.name,
        "pytorch_version": env.get("torch"),
        "torchvision_version": env.get("torchvision"),
        "cuda_version": env.get("cuda"),
        "python_version": env.get("python"),
        "distributed_backend": backend,
        "launcher": dist_env.get("launcher", "spawn"),
        "bucket_size": bucket_size,
        "device": device,
        "device_names": env.get("devices") or [],
        "cuda_device_count": env.get("device_count", 0),
        "world_size": max(
            (r["world_size"] for b in benchmarks.values() for r in b["result"]), default=0
        ),
        "threads_per_rank": threads if not device.startswith("cuda") else None,
        "cpu_count": env.get("cpu_count"),
        "hostname": env.get("hostname"),
        "interconnect_topology": dist_env.get("interconnect_topology"),
        "iterations": run.options.get("iterations"),
        "warmup": run.options.get("warmup"),
        "measurements": "seconds per iteration of the slowest rank, each step bracketed "
        "by a device synchronization, after warm-up",
        "started_at": run.started_at,
    }
    return {
        "schema": SCHEMA,
        "pytorch_version": env.get("torch"),
        "cuda_version": env.get("cuda"),
        "distributed_backend": backend,
        "bucket_size": bucket_size,
        "metadata": metadata,
        "benchmark_results": list(benchmarks.values()),
    }


def _add_scaling(results: list[dict[str, Any]]) -> None:
    """Verdicts by throughput, as the run's own table gives them: ``speedup`` is the median
    aggregate examples/s over the no-DDP one, ``scaling_efficiency`` that over world size
    times the no-DDP examples/s (1.0 is perfect scaling; DDP overhead shows below it), and
    ``best`` marks the configuration with the most examples/s. Step times alone would
    favour one process: DDP's global batch grows with its ranks."""
    base = next((r for r in results if not r["ddp"]), None)
    base_rate = base["times"]["examples_per_sec"]["p50"] if base else None
    for r in results:
        rate = r["times"]["examples_per_sec"]["p50"]
        r["speedup"] = speedup(base_rate, rate)
        r["scaling_efficiency"] = scaling_efficiency(rate, r["world_size"], base_rate)
    rates = [r["times"]["examples_per_sec"]["p50"] or 0.0 for r in results]
    for i, r in enumerate(results):
        r["best"] = bool(rates) and i == rates.index(max(rates))


def _world_size(configuration: str) -> int:
    """``ddp-w4`` -> 4; ``no-ddp`` -> 1."""
    tail = configuration.rsplit("-w", 1)[-1]
    return int(tail) if configuration.startswith("ddp-w") and tail.isdigit() else 1


def write_for_run(run: RunResult) -> Path:
    """Write ``ddp_report.json`` into the run's folder (atomically) and return its path."""
    path = run.run_dir / REPORT_NAME
    write_text_atomic(path, json.dumps(build(run), indent=1) + "\n")
    return path


def load_report(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A DDP report to diff: profkit's ``ddp_report.json``, PyTorch's benchmark JSON, or a
    ``ddp`` run folder / run.json (its report is built on the fly). UsageError otherwise."""
    path = Path(path)
    if path.is_dir():
        report = path / REPORT_NAME
        path = report if report.exists() else path / RUN_JSON
    if not path.is_file():
        raise UsageError(f"{path}: no such report (give a ddp_report.json, a benchmark JSON "
                         "or a ddp run folder)")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{path}: not a JSON report ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a DDP benchmark report (expected a JSON object)")
    if "benchmark_results" in data:
        return data
    if isinstance(data.get("strategies"), list) and isinstance(data.get("scenario"), dict):
        if data["scenario"].get("name") != "ddp":
            raise UsageError(f"{path}: a run of scenario {data['scenario'].get('name')!r}, "
                             "not ddp: only ddp runs have a DDP report")
        return build(decode_run(data, path))
    raise UsageError(f"{path}: not a DDP benchmark report (no 'benchmark_results')")
