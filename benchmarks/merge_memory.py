"""``profkit merge`` of many ranks: 64 rank traces of about 10 MB each (the folder of
``benchmarks/job_view.py``), merged into one gzipped Perfetto trace.

The merge first summarizes every rank (forked workers, one trace each, as ``analyze
--summary-only``), then streams the ranks one after another through the writer, so its
memory should not grow with the number of ranks. Measured in a fresh process: wall
time, CPU time, the peak RSS of the process tree (sampled every 20 ms) and of the
largest process (``wait4``), for a growing number of ranks.

    python benchmarks/merge_memory.py [--ranks 8 64] [--gzip]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from job_view import build, run

RSS_TARGET_BYTES = 1 << 30


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--gzip", action="store_true", help="write the rank traces gzipped")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    ok = True
    print(f"{'ranks':>5} {'input':>9} {'output':>9} {'wall':>8} {'CPU':>8} {'RSS tree':>10} "
          f"{'largest':>10}")
    for ranks in args.ranks:
        folder = build(ranks, args.gzip)
        size = sum(f.stat().st_size for f in folder.glob("rank*"))
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "job.json.gz"
            wall, cpu, tree, largest = run([args.python, "-m", "profiler_kit", "merge",
                                            str(folder), "-o", str(out)])
            written = out.stat().st_size
        print(f"{ranks:5d} {size / 1e6:7.0f}MB {written / 1e6:7.0f}MB {wall:7.1f}s {cpu:7.1f}s "
              f"{tree / 2**20:7.0f} MiB {largest / 2**20:7.0f} MiB")
        ok = ok and tree < RSS_TARGET_BYTES
    print(f"{'PASS' if ok else 'FAIL'}: peak RSS of the process tree under 1 GiB at every size")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
