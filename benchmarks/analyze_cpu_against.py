"""CPU time of whole ``profkit analyze`` commands: this checkout against another revision,
in turns, so that a change said to keep analyze no slower is measured, not assumed.

Each round runs both checkouts' ``profkit analyze TRACE`` (console, and ``--json`` to a
file) in fresh processes, in alternating order; user + system CPU time of each child
(``os.wait4``) and wall time. Prints the medians and the median of the paired ratios.

    python benchmarks/analyze_cpu_against.py --base REV [TRACE ...] [--rounds 11]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.measure import run_once  # noqa: E402
from benchmarks.perf_model_overhead import DEFAULT, base_checkout, git  # noqa: E402


def command(checkout: Path, trace: Path, out: Path | None) -> tuple[list[str], dict[str, str]]:
    argv = [sys.executable, "-m", "profiler_kit", "analyze", str(trace)]
    if out is not None:
        argv += ["--json", str(out), "--force"]
    return argv, {**os.environ, "PYTHONPATH": str(checkout), "COLUMNS": "120"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("traces", nargs="*", type=Path, default=DEFAULT)
    p.add_argument("--base", required=True, help="git revision of the anchor")
    p.add_argument("--rounds", type=int, default=11)
    args = p.parse_args(argv)
    base = base_checkout(args.base)
    for checkout in (ROOT, base):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "profiler_kit")],
                       check=True)
    print(f"this checkout: {git('log', '-1', '--format=%h')} (and its uncommitted changes); "
          f"anchor: {args.base}")
    with tempfile.TemporaryDirectory() as tmp:
        for trace in args.traces:
            for as_json in (False, True):
                out = Path(tmp) / "a.json" if as_json else None
                cpu: dict[Path, list[float]] = {ROOT: [], base: []}
                wall: dict[Path, list[float]] = {ROOT: [], base: []}
                order = [ROOT, base]
                for checkout in order:  # warm the page cache
                    run_once(*command(checkout, trace, out))
                for i in range(args.rounds):
                    for checkout in (order if i % 2 == 0 else order[::-1]):
                        r = run_once(*command(checkout, trace, out))
                        cpu[checkout].append(r.cpu_s)
                        wall[checkout].append(r.wall_s)
                ratios = [a / b for a, b in zip(cpu[ROOT], cpu[base], strict=True)]
                print(f"{trace.name}{' --json' if as_json else ''}: CPU "
                      f"{statistics.median(cpu[ROOT]):.3f} s against "
                      f"{statistics.median(cpu[base]):.3f} s (wall "
                      f"{statistics.median(wall[ROOT]):.3f} / "
                      f"{statistics.median(wall[base]):.3f} s); paired CPU ratio "
                      f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max "
                      f"{max(ratios):.3f}, {args.rounds} rounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
