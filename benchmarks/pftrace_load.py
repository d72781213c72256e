"""Loading one recording as Chrome JSON and as a Perfetto-native ``.pftrace``: CPU time of
``trace.loader.load`` on each, taking turns, in one process (both warm), the ratio per
pair:

    python benchmarks/pftrace_load.py [TRACE ...] [--pairs 7]

Both files are written by PyTorch's own ``cupti_monitor`` exporter from the same window
of each real trace (``tests/monitor_window.py``: needs torch 2.14 and cupti-python) into
``benchmarks/.cache/pftrace``; the JSON one gzip-compressed, as the ``.pftrace`` is.
Default traces: the H200 main job's trace and the A100 DDP rank of tests/data.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
DATA = ROOT / "tests" / "data"
TRACES = [DATA / "h200_concurrent_sequential.pt.trace.json.gz",
          DATA / "a100_ddp_nccl_rank0.json.gz"]
CACHE = ROOT / "benchmarks" / ".cache" / "pftrace"


def cpu_seconds(fn, *args) -> float:
    gc.collect()
    start = time.process_time()
    fn(*args)
    return time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path, default=TRACES)
    parser.add_argument("--pairs", type=int, default=7)
    args = parser.parse_args()
    from monitor_window import export, exporter_available

    from profiler_kit.trace.loader import load

    why = exporter_available()
    if why:
        print(why, file=sys.stderr)
        return 2
    print("| trace | events | JSON (.json.gz) | .pftrace | .pftrace / JSON, CPU |")
    print("| --- | --- | --- | --- | --- |")
    for trace in args.traces:
        stem = CACHE / trace.name.split(".")[0]
        json_path, pftrace_path = export(trace, stem)
        events = len(load(json_path))
        load(pftrace_path)  # warm: imports, the protobuf schema
        json_s, pftrace_s, ratios = [], [], []
        for _ in range(args.pairs):
            j = cpu_seconds(load, json_path)
            p = cpu_seconds(load, pftrace_path)
            json_s.append(j)
            pftrace_s.append(p)
            ratios.append(p / j)
        mib = json_path.stat().st_size / 2**20, pftrace_path.stat().st_size / 2**20
        print(f"| {trace.name} | {events:,} | {statistics.median(json_s) * 1e3:.0f} ms "
              f"({mib[0]:.1f} MiB) | {statistics.median(pftrace_s) * 1e3:.0f} ms "
              f"({mib[1]:.1f} MiB) | {statistics.median(ratios):.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
