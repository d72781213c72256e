"""What the perf model (shapes kept by the loader, FLOPs/bytes per op, roofline, its rules)
adds to ``profkit analyze``: this checkout against a checkout without it, in turns.

The anchor is the files of ``--base`` under ``benchmarks/.cache/`` (default: the commit
before the loader kept shapes, the perf model's first commit; run this on the commit
right after the perf model's, or pass ``--base``, so no other change is measured).
Each round starts one process per checkout, in alternating order, so both see the same
machine load; each process loads, analyzes and renders the trace (what ``profkit
analyze`` does, less the interpreter's start-up, the same for both) ``--repeats`` times
and keeps its best time. The overhead is the median of the per-round ratios (and the
ratio of the medians). ``--whole`` times whole ``profkit analyze`` commands instead.

    python benchmarks/perf_model_overhead.py [TRACE ...] [--rounds 15] [--repeats 3] [--whole]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
DEFAULT = [DATA / "h100_vit_image_classification.json.gz",  # shapes, 5 k events
           DATA / "mi300_resnet_act_checkpoint.json.gz",  # shapes, 56 k events
           DATA / "a100_ddp_nccl_rank0.json.gz"]  # no shapes, 41 k events


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def base_checkout(rev: str | None) -> Path:
    """A worktree at ``rev`` (default: the parent of the commit that added the perf model)."""
    if rev is None:  # the first commit with RecordedInputs (the loader keeping shapes)
        added = git("log", "--format=%H", "-S", "class RecordedInputs", "--",
                    "profiler_kit/trace/table.py").split()[-1]
        rev = git("rev-parse", f"{added}^")
    rev = git("rev-parse", rev)
    path = ROOT / "benchmarks" / ".cache" / f"base-{rev[:12]}"
    if not path.exists():  # the files of ``rev`` (git archive: no worktree to clean up)
        tmp = path.with_name(path.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive, check=True)
        tmp.rename(path)
    return path


# In each checkout's own process: load, analyze and render to a null console, best of
# REPEATS warm runs (what ``profkit analyze`` does, without the interpreter's start-up).
SNIPPET = """
import sys, time, io
from rich.console import Console
from profiler_kit.trace.loader import load
from profiler_kit.analysis.trace_analysis import analyze_table
from profiler_kit.render.console.analysis import render
best = float("inf")
for _ in range({repeats}):
    start = time.perf_counter()
    a = analyze_table(load(sys.argv[1]))
    render(Console(file=io.StringIO(), width=120), [a])
    best = min(best, time.perf_counter() - start)
print(best)
"""


def run(checkout: Path, trace: Path, repeats: int, whole: bool = False) -> float:
    """Best in-process seconds of ``repeats`` analyses of ``trace`` by ``checkout``; with
    ``whole``, the wall time of one ``profkit analyze`` command, start-up included."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    if whole:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "profiler_kit", "analyze", str(trace)], env=env,
                       check=True, capture_output=True, cwd=checkout)
        return time.perf_counter() - start
    out = subprocess.run([sys.executable, "-c", SNIPPET.format(repeats=repeats), str(trace)],
                         env=env, check=True, capture_output=True, text=True, cwd=checkout)
    return float(out.stdout.split()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="*", type=Path, default=DEFAULT)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--repeats", type=int, default=3, help="warm analyses per process")
    p.add_argument("--whole", action="store_true",
                   help="time whole `profkit analyze` commands (interpreter start-up included)")
    p.add_argument("--base", help="git revision of the anchor (default: before the perf model)")
    args = p.parse_args(argv)
    base = base_checkout(args.base)
    for checkout in (ROOT, base):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "profiler_kit")],
                       check=True)
    print(f"this checkout: {ROOT} ({git('log', '-1', '--format=%h')})\nanchor: {base}")
    for trace in args.traces:
        for checkout in (ROOT, base):  # warm the page cache
            run(checkout, trace, 1, args.whole)
        new, old, ratios = [], [], []
        for i in range(args.rounds):
            pair = [(ROOT, new), (base, old)]
            if i % 2:
                pair.reverse()
            times = {}
            for checkout, out in pair:
                t = run(checkout, trace, args.repeats, args.whole)
                out.append(t)
                times[checkout] = t
            ratios.append(times[ROOT] / times[base])
        print(f"{trace.name}: with the perf model {statistics.median(new):.3f} s, without "
              f"{statistics.median(old):.3f} s (medians of {args.rounds}); overhead: median "
              f"of paired ratios {100 * (statistics.median(ratios) - 1):+.1f} %, ratio of "
              f"medians {100 * (statistics.median(new) / statistics.median(old) - 1):+.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
