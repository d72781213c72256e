"""Critical path on a ~100 MB trace: the whole trace and one step, beside loading it.

The trace is a real one tiled with time and id offsets (as in ``large_trace.py``), built
once into ``benchmarks/.cache/``. In one process: load the trace (the anchor), build the
op tree and GPU attribution that every analysis shares, then the critical path of the
whole trace and of one step window (a copy of the source's busiest step in the middle
of the file). Target: the critical path within a few seconds (5 s) on 100 MB.

    python benchmarks/critical_path_speed.py [--size-mb 100] [--source TRACE] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
DEFAULT_SOURCE = ROOT / "tests" / "data" / "a100_simple_add.json.gz"
TARGET_S = 5.0

sys.path.insert(0, str(HERE))
from large_trace import build  # noqa: E402


def _timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    CACHE.mkdir(parents=True, exist_ok=True)
    trace = CACHE / f"large_{args.source.name.split('.')[0]}_{args.size_mb}MB.json"
    if not trace.exists():
        build(args.source, trace, args.size_mb * 2**20)

    from profiler_kit.analysis.core.launch_links import attribute_gpu
    from profiler_kit.analysis.core.op_tree import build_op_tree
    from profiler_kit.analysis.core.steps import analyze_steps
    from profiler_kit.analysis.time.critical_path import build_path, critical_path, summarize
    from profiler_kit.trace.loader import load

    load_s, table = _timed(lambda: load(trace), 1)
    shared_s, (tree, gpu, steps) = _timed(
        lambda: (t := build_op_tree(table), attribute_gpu(table, t), analyze_steps(table)), 1)
    whole_s, g = _timed(lambda: build_path(table, gpu), args.repeat)
    summary = summarize(table, gpu, g, "trace", None, int(table.ts_ns.min()),
                        int((table.ts_ns + table.dur_ns).max()))
    step_s, step = _timed(lambda: critical_path(table, gpu, steps), args.repeat)
    print(f"{trace.name}: {trace.stat().st_size / 1e6:.0f} MB, {len(table):,} events, "
          f"{len(g.node_ts):,} graph nodes, {len(g.edge_src):,} edges")
    print(f"  load (anchor)                  {load_s:6.2f} s")
    print(f"  op tree + attribution + steps  {shared_s:6.2f} s")
    print(f"  critical path, whole trace     {whole_s:6.2f} s  "
          f"(length {summary.length_ns / 1e9:.3f} s, {summary.events:,} events on it)")
    print(f"  critical path, median step     {step_s:6.2f} s  ({step.window})")
    ok = whole_s < TARGET_S
    print(f"  target: whole trace under {TARGET_S:.0f} s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
