"""Real traces exported again by PyTorch's own ``cupti_monitor`` exporter, in both formats.

PyTorch 2.14's second profiler backend keeps the GPU side of a recording as a columnar
"window" (one dict of numpy columns per CUPTI activity kind) and merges it with Kineto's
CPU events into either a Chrome JSON trace or a Perfetto-native ``.pftrace``
(``torch.profiler._cupti.monitor_trace.merge_trace_window_into_chrome_trace``). Here the
GPU events of a real Kineto trace are turned back into such a window, so that the real
exporter writes the same recording both ways: the pair the ``.pftrace`` reader is held to.
The exporter runs on the CPU; it needs the ``cupti-python`` package (for CUPTI's API
enums) and torch 2.14 or newer.

``python tests/monitor_window.py TRACE OUT_STEM [--counters]`` writes ``OUT_STEM.json.gz``
and ``OUT_STEM.pftrace``.
"""

from __future__ import annotations

import bisect
import gzip
import json
import os
import sys
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "cuda_sync",
            "gpu_user_annotation", "ac2g", "Trace"}
SYNC_TYPES = {"Event Sync": 1, "Stream Wait Event": 2, "Stream Sync": 3, "Context Sync": 4}
COPY_KINDS = {"HtoD": 1, "DtoH": 2, "DtoD": 8, "PtoP": 10}


def exporter_available() -> str | None:
    """None when PyTorch's exporter can run here, else why not."""
    try:
        import torch.profiler._cupti.monitor_trace  # noqa: F401
    except ImportError as e:
        return f"PyTorch's cupti_monitor exporter cannot be imported ({e})"
    return None


def need_exporter() -> None:
    """Skip a test without PyTorch's exporter; fail it where ``PROFKIT_NEEDS_EXPORTER`` is
    set (CI installs it: a test skipped there would hold nothing)."""
    import pytest

    why = exporter_available()
    if why and os.environ.get("PROFKIT_NEEDS_EXPORTER"):
        pytest.fail(why)
    if why:
        pytest.skip(why)


def read(path: Path) -> dict:
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt") as fh:
        return json.load(fh)


def window(doc: dict, counters: bool = False) -> tuple[dict, dict]:
    """(the CPU part of ``doc`` as Kineto writes it in cupti_monitor mode, the GPU window).

    The CPU part keeps metadata and the CPU threads' complete events. Instant events are
    left out: the ``.pftrace`` exporter writes complete events only, so a trace's memory
    records have no Perfetto-native form there; so is the JSON header but for its base
    time (``deviceProperties`` and ``distributedInfo`` have none either). ``counters``
    adds sampled power, clocks, temperature and PM utilization over the trace (a made-up
    but plausible signal: the real one needs a GPU).
    """
    from cupti.cupti import Driver_api_trace_cbid, Runtime_api_trace_cbid
    from torch.profiler._cupti.monitor_trace import _load_cbid_names

    # times made relative to the first event, so that a float's µs keep whole ns: the
    # exporter rounds float(ts) * 1000, which a µs figure of 10^12 and more cannot
    events = [e for e in doc["traceEvents"] if isinstance(e, dict)]
    origin = min(int(float(e["ts"])) for e in events if "ts" in e)
    events = [{**e, "ts": round(float(e["ts"]) - origin, 3)} if "ts" in e else e
              for e in events]
    base_ns = int(doc.get("baseTimeNanoseconds", 0)) + origin * 1000
    cbid_of = {name: cbid for cbid, name in _load_cbid_names(Runtime_api_trace_cbid).items()}
    driver_cbid_of = {name: cbid for cbid, name in
                      _load_cbid_names(Driver_api_trace_cbid).items()}

    def ns(e: dict, key: str = "ts") -> int:
        return base_ns + int(round(float(e[key]) * 1000))

    def end_ns(e: dict) -> int:
        return base_ns + int(round((float(e["ts"]) + float(e.get("dur", 0))) * 1000))

    # a .pftrace has no JSON header: both exports get only what it keeps
    cpu = {k: v for k, v in doc.items() if k in ("baseTimeNanoseconds", "traceName")}
    cpu["baseTimeNanoseconds"] = base_ns  # else the exporter takes the time of day
    cpu["traceEvents"] = [e for e in events if e.get("ph") == "M" or (
        e.get("ph") == "X" and e.get("cat") not in GPU_CATS)]
    by_cat: dict[str, list[dict]] = {}
    for e in events:
        if e.get("ph") == "X":
            by_cat.setdefault(e.get("cat"), []).append(e)

    columns: dict[str, dict[str, Any]] = {}

    def gpu_common(rows: list[dict]) -> dict[str, Any]:
        a = [r.get("args", {}) for r in rows]
        n = len(rows)
        return {
            "start_ns": np.array([ns(r) for r in rows], dtype=np.int64),
            "end_ns": np.array([end_ns(r) for r in rows], dtype=np.int64),
            "device_id": np.array([int(x.get("device", r.get("pid", 0)))
                                   for x, r in zip(a, rows, strict=True)], dtype=np.int64),
            "context_id": np.array([int(x.get("context", 1)) for x in a], dtype=np.int64),
            "stream_id": np.array([int(x.get("stream", r.get("tid", 0)))
                                   for x, r in zip(a, rows, strict=True)], dtype=np.int64),
            "correlation_id": np.array([int(x.get("correlation", 0)) for x in a],
                                       dtype=np.int64),
            "graph_id": np.zeros(n, dtype=np.int64),
            "graph_node_id": np.zeros(n, dtype=np.int64),
            "annotation": np.array([None] * n, dtype=object),
            "channel": np.zeros(n, dtype=np.int64),
            "channel_type": np.zeros(n, dtype=np.int64),
        }

    _serialize_streams([e for cat in ("kernel", "gpu_memcpy", "gpu_memset")
                        for e in by_cat.get(cat, [])])
    kernels = by_cat.get("kernel", [])
    if kernels:
        c = gpu_common(kernels)
        a = [r.get("args", {}) for r in kernels]
        c["name"] = np.array([r["name"] for r in kernels], dtype=object)
        for axis, i in (("x", 0), ("y", 1), ("z", 2)):
            c[f"grid_{axis}"] = np.array([_dim(x.get("grid"), i) for x in a], dtype=np.int64)
            c[f"block_{axis}"] = np.array([_dim(x.get("block"), i) for x in a], dtype=np.int64)
        c["registers_per_thread"] = np.array([int(x.get("registers per thread", 0)) for x in a],
                                             dtype=np.int64)
        c["static_shared_memory"] = np.array([int(x.get("shared memory", 0)) for x in a],
                                             dtype=np.int64)
        c["dynamic_shared_memory"] = np.zeros(len(a), dtype=np.int64)
        c["priority"] = np.zeros(len(a), dtype=np.int64)
        c["queued"] = np.array([int(x.get("queued", 0)) for x in a], dtype=np.int64)
        columns["kernel"] = c
    for cat, extra in (("gpu_memcpy", _memcpy_columns), ("gpu_memset", _memset_columns)):
        rows = by_cat.get(cat, [])
        if rows:
            c = gpu_common(rows)
            c.update(extra([r.get("args", {}) for r in rows]))
            columns[cat] = c
    for cat, names in (("cuda_runtime", cbid_of), ("cuda_driver", driver_cbid_of)):
        rows = [r for r in by_cat.get(cat, [])
                if int(r.get("args", {}).get("cbid", names.get(r["name"], -1))) >= 0]
        if rows:
            columns[cat] = {
                "start_ns": np.array([ns(r) for r in rows], dtype=np.int64),
                "end_ns": np.array([end_ns(r) for r in rows], dtype=np.int64),
                "cbid": np.array([int(r.get("args", {}).get("cbid", names.get(r["name"], 0)))
                                  for r in rows], dtype=np.int64),
                "process_id": np.array([int(r["pid"]) for r in rows], dtype=np.int64),
                "thread_id": np.array([int(r["tid"]) for r in rows], dtype=np.int64),
                "correlation_id": np.array([int(r.get("args", {}).get("correlation", 0))
                                            for r in rows], dtype=np.int64),
            }
    columns["external_correlation"], user_annotations = _external_correlation(
        events, by_cat)
    syncs = by_cat.get("cuda_sync", [])
    if syncs:
        columns.update(_sync_columns(syncs, ns, end_ns))
    if counters:
        columns.update(_counter_columns(columns, base_ns))
    return cpu, {"columns": columns, "user_annotations": user_annotations}


def _serialize_streams(ops: list[dict]) -> None:
    """End each GPU op no later than the next op on its stream starts (in place).

    CUPTI's ops on one stream can overlap by some hundred ns; the ``.pftrace`` encoder
    clamps them so (Perfetto draws a stream as one row), the JSON export does not. The
    pair is made from clamped ops, so that it differs in format only.
    """
    by_stream: dict[tuple, list[dict]] = {}
    for e in ops:
        a = e.get("args", {})
        by_stream.setdefault((a.get("device", e.get("pid")), a.get("stream", e.get("tid"))),
                             []).append(e)
    for stream in by_stream.values():
        stream.sort(key=lambda e: float(e["ts"]))
        for op, after in pairwise(stream):
            end = float(op["ts"]) + float(op.get("dur", 0))
            if end > float(after["ts"]):
                op["dur"] = max(float(after["ts"]) - float(op["ts"]), 0.0)


def _dim(v: Any, i: int) -> int:
    return int(v[i]) if isinstance(v, list) and len(v) > i else 1


def _memcpy_columns(a: list[dict]) -> dict[str, Any]:
    kinds = []
    for x in a:
        kind = str(x.get("copy kind", ""))
        kinds.append(next((k for name, k in COPY_KINDS.items() if name in kind), 8))
    return {"bytes": np.array([int(x.get("bytes", 0)) for x in a], dtype=np.int64),
            "copy_kind": np.array(kinds, dtype=np.int64),
            "src_kind": np.full(len(a), 3, dtype=np.int64),
            "dst_kind": np.full(len(a), 3, dtype=np.int64),
            "flags": np.zeros(len(a), dtype=np.int64)}


def _memset_columns(a: list[dict]) -> dict[str, Any]:
    return {"bytes": np.array([int(x.get("bytes", 0)) for x in a], dtype=np.int64),
            "value": np.zeros(len(a), dtype=np.int64),
            "memory_kind": np.full(len(a), 3, dtype=np.int64),
            "flags": np.zeros(len(a), dtype=np.int64)}


def _external_correlation(events: list[dict], by_cat: dict) -> tuple[dict, dict]:
    """correlation -> the launching op's External id, and -> its innermost user annotation
    (what the monitor resolves at decode time)."""
    annotations: dict[tuple, list[tuple[float, float, int]]] = {}
    names: dict[int, str] = {}
    for e in by_cat.get("user_annotation", []):
        ext = e.get("args", {}).get("External id")
        if ext is None or str(e.get("name", "")).startswith("ProfilerStep"):
            continue
        names[int(ext)] = e["name"]
        annotations.setdefault((e["pid"], e["tid"]), []).append(
            (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), int(ext)))
    for spans in annotations.values():
        spans.sort()
    corr, ext_ids, user_ids = [], [], []
    for e in by_cat.get("cuda_runtime", []) + by_cat.get("cuda_driver", []):
        a = e.get("args", {})
        if "correlation" not in a:
            continue
        ext = int(a.get("External id", 0))
        spans = annotations.get((e["pid"], e["tid"]), [])
        t = float(e["ts"])
        user = ext
        i = bisect.bisect_right(spans, (t, float("inf"), 0))
        for _, end, span_ext in reversed(spans[:i]):  # the latest start enclosing t
            if end >= t:
                user = span_ext
                break
        corr.append(int(a["correlation"]))
        ext_ids.append(ext)
        user_ids.append(user)
    return ({"correlation_id": np.array(corr, dtype=np.int64),
             "external_id": np.array(ext_ids, dtype=np.int64),
             "user_external_id": np.array(user_ids, dtype=np.int64)}, names)


def _sync_columns(syncs: list[dict], ns: Any, end_ns: Any) -> dict[str, Any]:
    a = [r.get("args", {}) for r in syncs]
    record_corr = [int(x.get("wait_on_cuda_event_record_corr_id", -1)) for x in a]
    sync_ids = [i + 1 if c >= 0 else 0 for i, c in enumerate(record_corr)]
    waited = [(i, c) for i, c in zip(sync_ids, record_corr, strict=True) if i]
    stream = [int(x.get("stream", -1)) for x in a]
    return {
        "cuda_sync": {
            "start_ns": np.array([ns(r) for r in syncs], dtype=np.int64),
            "end_ns": np.array([end_ns(r) for r in syncs], dtype=np.int64),
            "sync_type": np.array([SYNC_TYPES.get(r["name"], 0) for r in syncs],
                                  dtype=np.int64),
            "context_id": np.array([int(x.get("context", 1)) for x in a], dtype=np.int64),
            "stream_id": np.array([s if s >= 0 else 0xFFFFFFFF for s in stream],
                                  dtype=np.int64),
            "correlation_id": np.array([int(x.get("correlation", 0)) for x in a],
                                       dtype=np.int64),
            "cuda_event_id": np.zeros(len(a), dtype=np.int64),
            "cuda_event_sync_id": np.array(sync_ids, dtype=np.int64),
        },
        "cuda_event": {
            "context_id": np.ones(len(waited), dtype=np.int64),
            "device_id": np.array([int(a[i - 1].get("device", 0)) for i, _ in waited],
                                  dtype=np.int64),
            "cuda_event_sync_id": np.array([i for i, _ in waited], dtype=np.int64),
            "correlation_id": np.array([c for _, c in waited], dtype=np.int64),
        },
    }


def _counter_columns(columns: dict, base_ns: int) -> dict[str, Any]:
    """Power, temperature and clocks every 10 ms and PM samples every 1 ms over the GPU
    work, with the SM clock dropping from 1980 to 1500 MHz in the second half."""
    starts = [c["start_ns"].min() for k, c in columns.items()
              if k in ("kernel", "gpu_memcpy", "gpu_memset") and len(c["start_ns"])]
    ends = [c["end_ns"].max() for k, c in columns.items()
            if k in ("kernel", "gpu_memcpy", "gpu_memset") and len(c["end_ns"])]
    first, last = int(min(starts)), int(max(ends))
    env_ts = np.arange(first, last + 10_000_000, 10_000_000, dtype=np.int64)
    half = first + (last - first) // 2
    sm_clock = np.where(env_ts < half, 1980, 1500).astype(np.uint64)
    rows = []
    for kind, data in ((3, (np.full(len(env_ts), 650_000, dtype=np.uint64)
                            | (np.uint64(700_000) << np.uint64(32)))),  # power mW | limit
                       (2, np.full(len(env_ts), 61, dtype=np.uint64)),
                       (1, sm_clock | (np.uint64(2619) << np.uint64(32)))):
        rows.append((np.full(len(env_ts), kind, dtype=np.int64), data))
    env = {"start_ns": np.tile(env_ts, 3),
           "device_id": np.zeros(3 * len(env_ts), dtype=np.int64),
           "environment_kind": np.concatenate([k for k, _ in rows]),
           "data": np.concatenate([d for _, d in rows])}
    pm_ts = np.arange(first, last + 1_000_000, 1_000_000, dtype=np.int64)
    phase = np.linspace(0, 6.0, len(pm_ts))
    pm = {"start_ns": pm_ts, "device_id": np.zeros(len(pm_ts), dtype=np.int64),
          "sm__cycles_active.avg.pct_of_peak_sustained_elapsed": 60 + 30 * np.sin(phase),
          "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 40 + 20 * np.cos(phase)}
    return {"environment": env, "pm_sampling": pm}


def export(trace: Path, stem: Path, counters: bool = False) -> tuple[Path, Path]:
    """Write ``stem.json.gz`` and ``stem.pftrace`` from one window of ``trace``."""
    from torch.profiler._cupti.monitor_trace import merge_trace_window_into_chrome_trace

    cpu, win = window(read(trace), counters)
    stem.parent.mkdir(parents=True, exist_ok=True)
    cpu_path = stem.with_name(stem.name + ".cpu.json")
    cpu_path.write_text(json.dumps(cpu))
    try:
        outputs = (stem.with_name(stem.name + ".json.gz"), stem.with_name(stem.name + ".pftrace"))
        for out in outputs:
            merge_trace_window_into_chrome_trace(cpu_path, out, win, trace_name=trace.name)
    finally:
        cpu_path.unlink()
    return outputs


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    print(*export(Path(sys.argv[1]), Path(sys.argv[2]), "--counters" in sys.argv[3:]))
