"""Rank summaries on a Dask LocalCluster against the local process pool.

The folder of ``benchmarks/job_view.py`` (N rank traces of about 8.6 MB, built once
into ``benchmarks/.cache/``) is summarized by ``profkit analyze --summary-only`` twice in
fresh processes, taking turns: with the local pool (one forked worker per core) and
with ``--scheduler local`` (a LocalCluster of one single-threaded worker process per
core, started and closed by the command). The two files must be the same bytes; the
difference in wall time is Dask's overhead (cluster start, task hand-off, the
summaries sent back). Peak RSS is that of the whole process tree.

    python benchmarks/dask_summaries.py [--ranks 64] [--repeat 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from job_view import build, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    folder = build(args.ranks, False)
    size = sum(f.stat().st_size for f in folder.glob("rank*"))
    print(f"{args.ranks} rank traces, {size / 1e6:,.0f} MB, {os.cpu_count()} cores")
    rows: dict[str, list[tuple[float, float, int, int]]] = {"local pool": [], "dask local": []}
    same = True
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            outs = {}
            for label, extra in (("local pool", []), ("dask local", ["--scheduler", "local"])):
                out = Path(tmp) / f"{label.replace(' ', '_')}{i}.json"
                rows[label].append(run([args.python, "-m", "profiler_kit", "analyze",
                                        "--summary-only", str(folder), *extra, "--json",
                                        str(out)]))
                outs[label] = out.read_bytes()
            same = same and outs["local pool"] == outs["dask local"]
    for label, rs in rows.items():
        print(f"{label:12} wall {statistics.median(r[0] for r in rs):6.1f} s  CPU "
              f"{statistics.median(r[1] for r in rs):6.1f} s  RSS tree "
              f"{statistics.median(r[2] for r in rs) / 2**20:6.0f} MiB  (median of {len(rs)})")
    print(f"summaries files identical: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
