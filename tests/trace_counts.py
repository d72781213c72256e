"""Per-name counts and totals of a trace, computed straight from its JSON (plain json and
collections, no profkit code): the independent reference for the op and kernel diff."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
RUNTIME_CATS = {"cuda_runtime", "cuda_driver", "runtime"}


def ns(value) -> int:
    """Microseconds as written in the file to integer nanoseconds, exactly."""
    return int(Decimal(value) * 1000)


@dataclass
class Counts:
    steps: int  # ProfilerStep spans (1: the whole trace)
    op_count: Counter
    op_total: Counter
    kernel_count: Counter  # (name, category)
    kernel_total: Counter
    launches: Counter  # (innermost cpu_op name around the launch, kernel name) -> count
    # (op name, "Input Dims", "Input type" as compact JSON, "" where absent) -> count, total
    shape_count: Counter
    shape_total: Counter


def count_names(path: str | Path, shapes_not_kept: frozenset[str] = frozenset()) -> Counts:
    """Ops starting inside a ``ProfilerStep#`` span; GPU activities whose runtime call
    (same correlation id) starts inside one (their own start when there is none). Ops
    named in ``shapes_not_kept`` count as having no shapes."""
    with gzip.open(path, "rt") if str(path).endswith(".gz") else open(path) as fh:
        doc = json.load(fh, parse_float=Decimal)
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = {e["name"]: e for e in events if e["name"].startswith("ProfilerStep#")
             and e.get("cat") in ("user_annotation", "cpu_op", "Operator")}
    if steps:
        windows = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in steps.values()]
    else:
        windows = [(min(ns(e["ts"]) for e in events),
                    max(ns(e["ts"]) + ns(e["dur"]) for e in events))]

    def inside(t: int) -> bool:
        return any(a <= t <= b for a, b in windows)

    runtime = {e["args"]["correlation"]: e for e in events
               if e.get("cat") in RUNTIME_CATS and "correlation" in e.get("args", {})}
    ops = [e for e in events if e.get("cat") == "cpu_op" and inside(ns(e["ts"]))]
    all_ops = [e for e in events if e.get("cat") == "cpu_op"]
    c = Counts(max(len(steps), 1), *(Counter() for _ in range(7)))
    for e in ops:
        c.op_count[e["name"]] += 1
        c.op_total[e["name"]] += ns(e["dur"])
        args = e.get("args", {})
        dims = args.get("Input Dims") if e["name"] not in shapes_not_kept else None
        key = (e["name"], _compact(dims) if dims else "",
               _compact(args["Input type"]) if dims and "Input type" in args else "")
        c.shape_count[key] += 1
        c.shape_total[key] += ns(e["dur"])
    for e in events:
        category = GPU_CATS.get(e.get("cat"))
        if category is None:
            continue
        call = runtime.get(e.get("args", {}).get("correlation"))
        if not inside(ns(call["ts"] if call is not None else e["ts"])):
            continue
        key = (e["name"], category)
        c.kernel_count[key] += 1
        c.kernel_total[key] += ns(e["dur"])
        if call is not None:
            c.launches[(_innermost(all_ops, call), e["name"])] += 1
    return c


def _compact(value) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _innermost(ops: list[dict], call: dict) -> str:
    """The shortest cpu_op on the call's thread that holds the call's start ("" if none)."""
    t = ns(call["ts"])
    around = [o for o in ops if o["pid"] == call["pid"] and o["tid"] == call["tid"]
              and ns(o["ts"]) <= t < ns(o["ts"]) + ns(o["dur"])]
    if not around:
        return ""
    return min(around, key=lambda o: (ns(o["dur"]), -ns(o["ts"])))["name"]
