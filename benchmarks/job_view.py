"""The job view of many ranks: 64 rank traces of about 10 MB each, on this machine's cores.

The folder is built once into ``benchmarks/.cache/`` from a real trace
(``tests/data/a100_ddp_nccl_rank0.json.gz``, 9.8 MB of JSON, 21 NCCL collectives):
each copy gets its own ``distributedInfo.rank`` in a world of N ranks whose default
process group holds them all, and its collectives' ``Group size`` and ``Process Group
Ranks`` say so. Rank r's events are shifted by r x 50 µs, so the ranks arrive at each
collective at different times and the matching has waits to compute.

Measured, each in a fresh process (wall time, CPU time, and the peak RSS of the whole
process tree, sampled every 20 ms, beside the largest single process from ``wait4``):

* anchor: loading every trace into its event table, one forked worker per core, and
  nothing else (``profiler_kit.trace.loader.load``), the floor for anything that reads them;
* ``profkit analyze --summary-only DIR --json OUT``: the per-rank summaries;
* ``profkit analyze OUT``: the job view from the summaries alone (the reduction);
* ``profkit analyze DIR --json``: every rank's full analysis plus the job view.

Targets: the summaries of 64 ranks in under 60 s with under 1 GB of peak RSS.

    python benchmarks/job_view.py [--ranks 64] [--repeat 3] [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
SOURCE = ROOT / "tests" / "data" / "a100_ddp_nccl_rank0.json.gz"
WALL_TARGET_S = 60.0
RSS_TARGET_BYTES = 1 << 30
SKEW_US = 50.0  # rank r's clock events shifted by r x this

LOAD_ALL = """
import sys
from pathlib import Path
from profiler_kit.sources.trace_files import _map
from profiler_kit.trace.loader import find_traces, load

def one(task):
    path, parts = task
    return len(load(path, jobs=parts))

files = find_traces(sys.argv[1])
print(sum(_map(one, [(f,) for f in files], None)))
"""


def build(ranks: int, compress: bool) -> Path:
    folder = CACHE / f"job_x{ranks}{'_gz' if compress else ''}"
    done = folder / ".complete"
    if done.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(SOURCE, "rt") as fh:
        doc = json.load(fh)
    everyone = list(range(ranks))
    for rank in everyone:
        shift = rank * SKEW_US
        events = []
        for e in doc["traceEvents"]:
            e = dict(e)
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] = e["ts"] + shift
            args = e.get("args")
            if isinstance(args, dict) and "Collective name" in args:
                e["args"] = {**args, "Group size": ranks, "Process Group Ranks": str(everyone)}
            events.append(e)
        out = {**doc, "traceEvents": events,
               "distributedInfo": {**doc["distributedInfo"], "rank": rank, "world_size": ranks,
                                   "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                                                  "backend_config": "cuda:nccl",
                                                  "pg_size": ranks, "ranks": everyone}]}}
        name = folder / f"rank{rank}.pt.trace.json{'.gz' if compress else ''}"
        opener = gzip.open if compress else open
        with opener(name, "wt") as fh:
            json.dump(out, fh)
    done.touch()
    return folder


def _tree_rss(root: int) -> int:
    """RSS of ``root`` and every descendant, from /proc (0 for gone processes)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            continue
    return total


def run(cmd: list[str]) -> tuple[float, float, int, int]:
    """Wall s, CPU s, peak RSS of the process tree (sampled), largest process (wait4)."""
    peak = [0]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise RuntimeError(f"{' '.join(cmd)} failed ({code}):\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, peak[0], usage.ru_maxrss * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gzip", action="store_true", help="write the rank traces gzipped")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    folder = build(args.ranks, args.gzip)
    size = sum(f.stat().st_size for f in folder.glob("rank*"))
    print(f"{args.ranks} rank traces, {size / 1e6:,.0f} MB in all, in {folder}; "
          f"{os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        summaries = Path(tmp) / "summaries.json"
        py = args.python
        cases = {
            "anchor: load every trace": [py, "-c", LOAD_ALL, str(folder)],
            "summaries (--summary-only)": [py, "-m", "profiler_kit", "analyze", "--summary-only",
                                           str(folder), "--json", str(summaries)],
            "job view from summaries": [py, "-m", "profiler_kit", "analyze", str(summaries),
                                        "--json"],
            "full analysis + job view": [py, "-m", "profiler_kit", "analyze", str(folder),
                                         "--json"],
        }
        results: dict[str, list[tuple[float, float, int, int]]] = {k: [] for k in cases}
        for _ in range(args.repeat):
            for label, cmd in cases.items():  # taking turns: a drifting machine hits all alike
                results[label].append(run(cmd))
        print(f"summaries file: {summaries.stat().st_size / 1e6:.2f} MB")
    print(f"{'':28} {'wall':>8} {'CPU':>8} {'RSS tree':>10} {'largest':>10}   (medians of "
          f"{args.repeat})")
    for label, rs in results.items():
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[1] for r in rs)
        tree = statistics.median(r[2] for r in rs)
        largest = statistics.median(r[3] for r in rs)
        print(f"{label:28} {wall:7.1f}s {cpu:7.1f}s {tree / 2**20:7.0f} MiB "
              f"{largest / 2**20:7.0f} MiB")
    summ = results["summaries (--summary-only)"]
    wall = statistics.median(r[0] for r in summ)
    tree = statistics.median(r[2] for r in summ)
    ok = wall < WALL_TARGET_S and tree < RSS_TARGET_BYTES
    print(f"{'PASS' if ok else 'FAIL'}: summaries of {args.ranks} ranks in {wall:.1f} s "
          f"(target < {WALL_TARGET_S:.0f} s), peak RSS {tree / 2**20:.0f} MiB (target < 1 GiB)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
