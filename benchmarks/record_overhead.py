"""What ``profkit record``'s hooks cost outside the recorded steps, beside plain ``python``.

The same training script runs as ``python train.py`` and as profkit record runs it
(through the bootstrap, its hooks in, the capture never reached: ``--wait`` beyond the
last step), taking turns for ``--rounds`` rounds. Each run times itself:

* its training step (a small MLP fed by a DataLoader, Adam, ``backward()``): the median
  of the steps after the first ``--skip``; small on purpose, so that a hook's cost
  weighs the most;
* in the hooked run, each hooked call against the same call unhooked, taking turns in one
  process (precise where the step-time change is within a busy machine's noise): the
  model's optimizer step, ``backward()`` of a scalar, ``next()`` of a DataLoader.

It prints, per round, both step times and their ratio, then the medians: the step-time
change (target: under 1 %) and the cost per hooked call (hooked minus plain). Run from the
repository root: ``python benchmarks/record_overhead.py [--rounds 7] [--steps 400]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from profiler_kit.record import ENV_CONFIG, ENV_DIR, ENV_HOME  # noqa: E402
from profiler_kit.record.command_line import BOOTSTRAP  # noqa: E402

WORKLOAD = r'''
import json, sys, time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

steps, skip, width = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
torch.set_num_threads(1)
data = TensorDataset(torch.randn(steps * 32, 64), torch.randint(0, 10, (steps * 32,)))
loader = DataLoader(data, batch_size=32)
model = nn.Sequential(nn.Linear(64, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                      nn.Linear(width, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
times = []
t = time.perf_counter_ns()
for x, y in loader:
    opt.zero_grad()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()
    now = time.perf_counter_ns()
    times.append(now - t)
    t = now

out = {"step_ns": sorted(times[skip:])[len(times[skip:]) // 2]}
if hasattr(torch.autograd.backward, "__wrapped__"):  # hooked: each hook against the original
    def paired(hooked, original, n):
        """Median over ``n`` pairs of one hooked call less one original call: a pair that
        the scheduler interrupts is one outlier, not a block's worth."""
        diffs = []
        clock = time.perf_counter_ns
        for i in range(n):
            if i % 2:
                t0 = clock(); original(); t1 = clock(); hooked(); t2 = clock()
                diffs.append((t2 - t1) - (t1 - t0))
            else:
                t0 = clock(); hooked(); t1 = clock(); original(); t2 = clock()
                diffs.append((t1 - t0) - (t2 - t1))
        return sorted(diffs)[n // 2]

    step = type(opt).step
    out["optimizer_step"] = paired(lambda: step(opt), lambda: step.__wrapped__(opt), 3000)
    w = torch.zeros((), requires_grad=True)
    bw = torch.autograd.backward
    out["backward"] = paired(lambda: bw(w * 1.0), lambda: bw.__wrapped__(w * 1.0), 5000)
    batches = iter(DataLoader(TensorDataset(torch.zeros(10 ** 6)), batch_size=1))
    nx = type(batches).__next__
    out["next"] = paired(lambda: nx(batches), lambda: nx.__wrapped__(batches), 5000)
print(json.dumps(out))
'''


def run(script: Path, hooked: bool, args: argparse.Namespace, out: Path) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, str(script), str(args.steps), str(args.skip), str(args.width)]
    if hooked:
        env[ENV_DIR] = str(out)
        env[ENV_CONFIG] = json.dumps({"wait": 10 ** 9, "warmup": 1, "active": 1,
                                      "window_after": -1})
        env[ENV_HOME] = str(ROOT)
        cmd = [sys.executable, BOOTSTRAP, *cmd[1:]]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--skip", type=int, default=50, help="first steps left out")
    parser.add_argument("--width", type=int, default=128, help="the MLP's hidden width")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="record-overhead-"))
    script = tmp / "train.py"
    script.write_text(WORKLOAD)
    rows = []
    for i in range(args.rounds):  # taking turns: drift of a shared machine hits both alike
        order = (False, True) if i % 2 == 0 else (True, False)
        got = {hooked: run(script, hooked, args, tmp / f"r{i}") for hooked in order}
        plain, hooked = got[False], got[True]
        ratio = hooked["step_ns"] / plain["step_ns"]
        rows.append((plain, hooked, ratio))
        print(f"round {i + 1}: step {plain['step_ns'] / 1e3:8.1f} µs plain, "
              f"{hooked['step_ns'] / 1e3:8.1f} µs hooked ({(ratio - 1) * 100:+.2f} %)",
              flush=True)
    change = (statistics.median(r for _p, _h, r in rows) - 1) * 100
    step_us = statistics.median(p["step_ns"] for p, _h, _r in rows) / 1e3
    print(f"\nstep: {step_us:.1f} µs plain; median change hooked: {change:+.2f} % "
          f"(target: under 1 %) -> {'PASS' if change < 1 else 'FAIL'}")
    total = 0.0
    for key, label in (("optimizer_step", "optimizer step"), ("backward", "backward()"),
                       ("next", "DataLoader next()")):
        cost = statistics.median(h[key] for _p, h, _r in rows)
        total += cost
        print(f"{label:>18}: hook {cost / 1e3:+6.2f} µs a call (median of pairs of it and "
              "the same call unhooked, in one process)")
    print(f"hooks per step (one of each): {total / 1e3:+.2f} µs = "
          f"{total / 1e3 / step_us * 100:+.3f} % of this {step_us:.0f} µs step")


if __name__ == "__main__":
    main()
