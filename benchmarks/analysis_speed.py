"""Analysis time against load time, on a real trace and on that trace tiled to millions of events.

The tiled table is built in memory (no file): each copy of the events is shifted past
the previous copy's end, with correlation and external ids offset so every copy links
its own kernels to its own launches. It shows how the analysis scales apart from the
loader. Prints seconds and the analysis/load ratio measured in this run.

    python benchmarks/analysis_speed.py [TRACE] [--events 3000000]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import msgspec
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from profiler_kit.analysis.trace_analysis import analyze_table  # noqa: E402
from profiler_kit.trace.loader import load  # noqa: E402
from profiler_kit.trace.table import EventTable, MemoryEvents  # noqa: E402

DEFAULT = ROOT / "tests" / "data" / "mi300_resnet_act_checkpoint.json.gz"


def tile(table: EventTable, copies: int) -> EventTable:
    """``copies`` back-to-back copies of ``table``, ids offset so links stay within a copy."""
    span = int((table.ts_ns + table.dur_ns).max() - table.ts_ns.min()) + 1
    step_id = int(max(table.correlation.max(), table.external_id.max(), 0)) + 1
    k = np.repeat(np.arange(copies, dtype=np.int64), len(table))

    def ids(col: np.ndarray) -> np.ndarray:
        tiled = np.tile(col, copies)
        return np.where(tiled >= 0, tiled + k * step_id, tiled)

    mem = table.memory
    mk = np.repeat(np.arange(copies, dtype=np.int64), len(mem))
    return msgspec.structs.replace(
        table,
        cat=np.tile(table.cat, copies), name=np.tile(table.name, copies),
        ts_ns=np.tile(table.ts_ns, copies) + k * span, dur_ns=np.tile(table.dur_ns, copies),
        pid=np.tile(table.pid, copies), tid=np.tile(table.tid, copies),
        device=np.tile(table.device, copies), stream=np.tile(table.stream, copies),
        correlation=ids(table.correlation), external_id=ids(table.external_id),
        input_type=None if table.input_type is None else np.tile(table.input_type, copies),
        memory=MemoryEvents(
            ts_ns=np.tile(mem.ts_ns, copies) + mk * span,
            device_type=np.tile(mem.device_type, copies),
            device_id=np.tile(mem.device_id, copies), bytes=np.tile(mem.bytes, copies),
            total_allocated_bytes=np.tile(mem.total_allocated_bytes, copies),
            total_reserved_bytes=np.tile(mem.total_reserved_bytes, copies),
            tid=np.tile(mem.tid, copies), addr=np.tile(mem.addr, copies),
        ),
    )


def timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", nargs="?", default=str(DEFAULT))
    p.add_argument("--events", type=int, default=3_000_000, help="size of the tiled table")
    args = p.parse_args(argv)

    table, load_s = timed(load, args.trace)
    _, analyze_s = timed(analyze_table, table)
    print(f"{Path(args.trace).name}: {len(table):,} events")
    print(f"  load {load_s:.3f} s, analyze {analyze_s:.3f} s "
          f"(analysis/load {analyze_s / load_s:.2f})")

    copies = max(1, args.events // max(len(table), 1))
    big, tile_s = timed(tile, table, copies)
    result, big_s = timed(analyze_table, big)
    print(f"tiled x{copies}: {len(big):,} events (built in {tile_s:.2f} s)")
    print(f"  analyze {big_s:.2f} s ({big_s / copies / analyze_s:.2f}x the per-copy time of "
          f"the single trace); {len(result.kernels)} kernel names, "
          f"GPU busy {result.timeline.busy_ns / 1e9:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
