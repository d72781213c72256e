"""The job view of 1,024 ranks reduced from their summaries alone.

The summaries are made from one real trace (``tests/data/a100_ddp_nccl_rank0.json.gz``,
21 NCCL collectives over 2 steps), summarized once and copied to every rank of a world
of N ranks whose default group holds them all, rank r's times moved by r x 50 µs so the
matching has waits to compute. They are written as one ``--summary-only`` file, then
``profkit analyze FILE --json`` reduces them in a fresh process: wall time, CPU time and
peak RSS (the process tree, sampled every 20 ms; the largest process from ``wait4``).

Targets: 1,024 ranks in under 10 s with under 1 GB.

    python benchmarks/reduce_many.py [--ranks 1024]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import msgspec
from job_view import SKEW_US, SOURCE, run

from profiler_kit import api
from profiler_kit.analysis.jobs.rank_summary import GroupInfo
from profiler_kit.sources import summary_files

WALL_TARGET_S = 10.0
RSS_TARGET_BYTES = 1 << 30


def build(ranks: int, out: Path) -> int:
    (base,) = api.summarize([SOURCE])
    everyone = tuple(range(ranks))
    groups = tuple(GroupInfo(g.name, everyone, g.description) for g in base.groups) or (
        GroupInfo("0", everyone, "default_pg"),)
    made = []
    for r in range(ranks):
        d = int(r * SKEW_US * 1000)
        calls = tuple(msgspec.structs.replace(
            c, start_ns=c.start_ns + d, end_ns=c.end_ns + d,
            exposed=tuple(v + d for v in c.exposed)) for c in base.calls)
        steps = tuple(msgspec.structs.replace(
            s, start_ns=s.start_ns + d,
            device_start_ns=None if s.device_start_ns is None else s.device_start_ns + d)
            for s in base.steps)
        made.append(msgspec.structs.replace(
            base, path=f"/job/rank{r}.pt.trace.json", label=f"rank{r}", rank=r,
            world_size=ranks, groups=groups, calls=calls, steps=steps,
            window_start_ns=base.window_start_ns + d, window_end_ns=base.window_end_ns + d))
    data = summary_files.dumps(made)
    out.write_bytes(data)
    return len(base.calls)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "summaries.json"
        calls = build(args.ranks, path)
        size = path.stat().st_size
        wall, cpu, tree, largest = run([args.python, "-m", "profiler_kit", "analyze",
                                        str(path), "--json", str(Path(tmp) / "job.json")])
    print(f"{args.ranks} rank summaries ({calls} calls each), {size / 1e6:.1f} MB: reduced "
          f"in {wall:.1f} s wall, {cpu:.1f} s CPU, peak RSS {tree / 2**20:.0f} MiB "
          f"(largest process {largest / 2**20:.0f} MiB)")
    ok = wall < WALL_TARGET_S and tree < RSS_TARGET_BYTES
    print(f"{'PASS' if ok else 'FAIL'}: target < {WALL_TARGET_S:.0f} s and < 1 GiB")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
