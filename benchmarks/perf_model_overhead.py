"""What the perf model (shapes kept by the loader, FLOPs/bytes per op, roofline, its rules)
adds to ``profkit analyze``: this checkout against a checkout without it, in turns.

The anchor is the files of ``--base`` (default: the commit before the perf model
was added) under ``benchmarks/.cache/``. Each round runs ``python -m profiler_kit analyze
TRACE`` once from each checkout, in alternating order, so both see the same machine load;
the overhead is the median of the per-round ratios (and the ratio of the medians).
Bytecode is compiled in both checkouts first.

    python benchmarks/perf_model_overhead.py [TRACE ...] [--rounds 15] [--base REV]
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
    if rev is None:
        added = git("log", "--diff-filter=A", "--format=%H", "-1", "--",
                    "profiler_kit/analysis/perf_model.py")
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


def run(checkout: Path, trace: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "profiler_kit", "analyze", str(trace)], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=checkout)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="*", type=Path, default=DEFAULT)
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--base", help="git revision of the anchor (default: before the perf model)")
    args = p.parse_args(argv)
    base = base_checkout(args.base)
    for checkout in (ROOT, base):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "profiler_kit")],
                       check=True)
    print(f"this checkout: {ROOT} ({git('log', '-1', '--format=%h')})\nanchor: {base}")
    for trace in args.traces:
        for checkout in (ROOT, base):  # warm the page cache and the interpreter
            run(checkout, trace)
        new, old, ratios = [], [], []
        for i in range(args.rounds):
            pair = [(ROOT, new), (base, old)]
            if i % 2:
                pair.reverse()
            times = {}
            for checkout, out in pair:
                t = run(checkout, trace)
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
