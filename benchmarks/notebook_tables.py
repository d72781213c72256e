"""What the notebook's tables cost on top of the analysis: ``profkit analyze``'s work
(``api.analyze``, the trace loaded and analyzed in this process) against
``pk.load(trace)`` with its analysis and all eight tables built, each in a fresh
process, the two taking turns, CPU time (user + system) compared per pair:

    python benchmarks/notebook_tables.py [TRACE] [--pairs 7]

Default trace: the largest in tests/data (a 56 MB H100 trace).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "tests" / "data" / "h100_owlv2_dataloader.json.gz"
CHILD = """
import resource, sys

def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime

path = sys.argv[1]
if sys.argv[2] == "analyze":
    from profiler_kit import api
    api.analyze([path], jobs=1)
    print(cpu(), 0.0, 0.0)
else:
    import profiler_kit as pk
    t = pk.load(path)
    t.analysis
    before_pandas = cpu()
    import pandas
    before_tables = cpu()
    for name in ("kernels", "ops", "steps", "launches", "idle", "memory", "modules", "comms"):
        getattr(t, name)
    end = cpu()
    print(end, before_tables - before_pandas, end - before_tables)
"""


def cpu_s(trace: Path, what: str) -> tuple[float, float, float]:
    """The child's CPU seconds in all, importing pandas, and building the tables."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(trace), what], check=True,
                         capture_output=True, text=True, cwd=ROOT).stdout
    total, pandas_s, tables_s = (float(x) for x in out.split()[-3:])
    return total, pandas_s, tables_s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("trace", nargs="?", default=str(TRACE))
    p.add_argument("--pairs", type=int, default=7)
    args = p.parse_args()
    ratios, base, tables, imports, builds, shares = [], [], [], [], [], []
    for i in range(args.pairs):
        order = ("analyze", "tables") if i % 2 == 0 else ("tables", "analyze")
        got = {what: cpu_s(Path(args.trace), what) for what in order}
        base.append(got["analyze"][0])
        tables.append(got["tables"][0])
        imports.append(got["tables"][1])
        builds.append(got["tables"][2])
        ratios.append(got["tables"][0] / got["analyze"][0])
        shares.append(got["tables"][2] / got["analyze"][0])
    m = statistics.median
    print(f"{Path(args.trace).name}: analyze {m(base):.2f} s CPU; load + analysis + 8 tables "
          f"{m(tables):.2f} s, of which importing pandas {m(imports):.2f} s and building "
          f"the tables {m(builds):.3f} s (medians of {args.pairs} pairs)")
    print(f"  all of it over analyze: {m(ratios):.3f}x ({min(ratios):.3f} to "
          f"{max(ratios):.3f}); the tables alone add {m(shares):.1%} "
          f"({min(shares):.1%} to {max(shares):.1%}; a notebook has pandas imported)")


if __name__ == "__main__":
    main()
