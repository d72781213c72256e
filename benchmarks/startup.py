"""Start-up of the data-only commands: whole-process time of ``profkit analyze`` on a tiny
trace (where start-up is nearly all of it) and of ``profkit diff``, beside two anchors
measured in the same turns: a bare Python and Python importing numpy, msgspec and rich.

Also lists the heavy modules each command imported (``-X importtime``), so a dependency
that only one command needs (scipy for ``diff``) is seen to stay out of the others.

    python benchmarks/startup.py [--repeat 21]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.measure import measure_alternating, paired_ratio  # noqa: E402

TRACE = ROOT / "tests" / "data" / "a100_triton_kernel.json.gz"
WATCHED = ("scipy", "torch", "pandas", "numpy", "msgspec", "rich")


def _diff_input(folder: Path) -> Path:
    """A small PyTorch-schema DDP report to diff against itself."""
    import json
    import random

    rng = random.Random(0)
    report = {"pytorch_version": "2", "cuda_version": None, "distributed_backend": "gloo",
              "bucket_size": 25, "benchmark_results": [{
                  "model": "resnet18", "batch_size": 8,
                  "result": [{"ranks": list(range(w)),
                              "measurements": [rng.gauss(0.1, 0.005) for _ in range(30)]}
                             for w in (1, 1, 2)]}]}
    path = folder / "report.json"
    path.write_text(json.dumps(report))
    return path


def imported(cmd: list[str]) -> list[str]:
    """The watched top-level packages that ``cmd`` (a Python command line) imported."""
    done = subprocess.run([cmd[0], "-X", "importtime", *cmd[1:]], capture_output=True,
                          text=True, check=True)
    names = {line.rsplit("|", 1)[-1].strip().split(".")[0]
             for line in done.stderr.splitlines() if line.startswith("import time:")}
    return [w for w in WATCHED if w in names]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        report = _diff_input(Path(tmp))
        commands = {
            "python -c pass": [py, "-c", "pass"],
            "import numpy, msgspec, rich": [py, "-c", "import numpy, msgspec, rich"],
            "profkit analyze (tiny trace)": [py, "-m", "profiler_kit", "analyze", str(TRACE),
                                             "--json", "-"],
            "profkit diff (30 samples)": [py, "-m", "profiler_kit", "diff", str(report),
                                          str(report), "--json", "-"],
        }
        for cmd in commands.values():  # cache bytecode before measuring
            subprocess.run(cmd, capture_output=True, check=True)
        found = {label: imported(cmd) for label, cmd in commands.items()}
        summaries = measure_alternating(commands, args.repeat)
    anchor = summaries[1]
    print(f"medians of {args.repeat} turns; 'x numpy' is the paired ratio to the numpy anchor")
    print(f"{'command':32} {'wall':>8} {'cpu':>8} {'x numpy':>8}  imports")
    for s in summaries:
        print(f"{s.label:32} {s.wall_s * 1000:6.0f}ms {s.cpu_s * 1000:6.0f}ms "
              f"{paired_ratio(s, anchor):8.2f}  {', '.join(found[s.label]) or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
