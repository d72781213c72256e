"""Holistic Trace Analysis' numbers for the real test traces, kept as test fixtures.

Runs HTA (installed in its own environment; see benchmarks/README.md) on each trace and
writes ``tests/data/hta/<trace>.json`` with its idle time breakdown per stream, its
kernel launch statistics, its queue length summary per stream and its kernel breakdown,
in nanoseconds where HTA gives times. The tests compare profkit with these numbers.
HTA keeps times as whole microseconds, and with several ``ProfilerStep#`` spans it keeps
only the GPU activities launched by CPU events up to the end of the last step.

    benchmarks/.cache/hta-venv/bin/python benchmarks/hta_reference.py [TRACE ...]
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
OUT = DATA / "hta"
TRACES = [
    "a100_ddp_nccl_rank0.json.gz",
    "a100_alexnet.json.gz",
    "a100_simple_add.json.gz",
    "h100_bert_small.json.gz",
    "h100_vit_image_classification.json.gz",
    "mi300_bert_small.json.gz",
    "mi300_resnet_act_checkpoint.json.gz",
]


def describe(series) -> dict[str, float]:
    d = series.describe()
    return {k: float(v) for k, v in d.items()}


def reference(trace: Path) -> dict:
    import hta
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copyfile(trace, Path(tmp) / trace.name)
        # the whole trace: HTA leaves out the last ProfilerStep unless told otherwise
        analyzer = TraceAnalysis(trace_dir=tmp, include_last_profiler_step=True)
        rank = next(iter(analyzer.t.traces))
        idle, _ = analyzer.get_idle_time_breakdown(ranks=[rank], visualize=False)
        launch = analyzer.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
        queue = analyzer.get_queue_length_time_series(ranks=[rank]).get(rank)
        kernel_type_df, kernel_df = analyzer.get_gpu_kernel_breakdown(visualize=False)
    # HTA keeps trace times as whole microseconds
    us = 1000.0
    out = {
        "hta_version": getattr(hta, "__version__", None),
        "rank": int(rank),
        "idle_time_ns": [
            {"stream": int(r.stream), "category": str(r.idle_category),
             "idle_time_ns": float(r.idle_time) * us}
            for r in idle.itertuples()
        ],
        "kernel_launch": {
            "count": int(len(launch)),
            "cpu_duration_ns": {k: v * us if k != "count" else v
                                for k, v in describe(launch.cpu_duration).items()},
            "launch_delay_ns": {k: v * us if k != "count" else v
                                for k, v in describe(launch.launch_delay).items()},
            "cpu_duration_total_ns": float(launch.cpu_duration.sum()) * us,
            "launch_delay_total_ns": float(launch.launch_delay.sum()) * us,
        },
        "queue_length": [] if queue is None else [
            {"stream": int(s), "max": int(g.queue_length.max()),
             "points": int(len(g)), "median": float(g.queue_length.median())}
            for s, g in queue.groupby("stream")
        ],
        "kernel_type_breakdown_ns": [
            {"kernel_type": str(r.kernel_type), "sum_ns": float(r.sum) * us}
            for r in kernel_type_df.itertuples()
        ],
        "kernel_breakdown_ns": [
            {"name": str(row["name"]), "kernel_type": str(row["kernel_type"]),
             "sum_ns": float(row["sum (us)"]) * us}
            for _, row in kernel_df.iterrows()
        ],
    }
    return out


def main(argv: list[str]) -> int:
    import warnings

    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    OUT.mkdir(parents=True, exist_ok=True)
    for name in argv or TRACES:
        path = DATA / name
        data = reference(path)
        target = OUT / (path.name.split(".")[0] + ".json")
        target.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(target.relative_to(ROOT), data["kernel_launch"]["count"], "launches")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
