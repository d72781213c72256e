"""Does profkit's timing pass agree with torch.utils.benchmark on the same work?

Builds one strategy of the ``concurrent`` scenario, then alternates rounds of
profkit's timing pass (warm-up discarded, every iteration bracketed by a sync of
every device) and ``torch.utils.benchmark.Timer.blocked_autorange`` on the same
``step``; prints both medians and their ratio per round. Agreement within the
noise (the rounds' spread) is the claim. On a shared machine the load changes
between rounds, so a paired pass also alternates single iterations (one profkit
sample, one ``Timer.timeit(1)``) so that both see the same conditions.

    python benchmarks/timing_vs_torch_utils_benchmark.py [--models a,b] [--batch-size N]
"""

from __future__ import annotations

import argparse
import statistics

import torch
from torch.utils import benchmark

from profiler_kit import results
from profiler_kit.measure import devices, timing
from profiler_kit.scenario import RunConfig, builtin


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strategy", default="sequential")
    ap.add_argument("--models", default=None, help="default: the scenario's")
    ap.add_argument("--batch-size", type=int, default=None, help="default: the device's")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--min-run-time", type=float, default=2.0,
                    help="seconds per blocked_autorange")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    device = devices.resolve(args.device)
    scenario = builtin("concurrent")
    params = {p.name: p.default_for(device) for p in scenario.params}
    if args.models:
        params["models"] = args.models
    if args.batch_size:
        params["batch_size"] = args.batch_size
    strategy = next(s for s in scenario.strategies if s.name == args.strategy)
    workload = scenario.build(strategy, RunConfig(params=params, device=device))
    print(f"concurrent/{strategy.name} on {device}: {params}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")

    ratios = []
    try:
        for r in range(args.rounds):
            samples = timing.time_iterations(workload.step, workload.devices, args.iterations,
                                             args.warmup)
            ours = results.stats(samples)
            timer = benchmark.Timer(stmt="step()", globals={"step": workload.step},
                                    num_threads=torch.get_num_threads())
            theirs = timer.blocked_autorange(min_run_time=args.min_run_time)
            ratio = ours.median_ns / (theirs.median * 1e9)
            ratios.append(ratio)
            print(f"round {r + 1}: profkit median {ours.median_ns / 1e6:9.3f} ms "
                  f"(IQR {100 * ours.iqr_fraction:.1f} %, n={ours.n})   "
                  f"torch.utils.benchmark median {theirs.median * 1e3:9.3f} ms "
                  f"(IQR {100 * theirs.iqr / theirs.median:.1f} %, "
                  f"{theirs.number_per_run} per block, {len(theirs.times)} blocks)   "
                  f"ratio {ratio:.3f}")
        ours_paired, theirs_paired = [], []
        timer = benchmark.Timer(stmt="step()", globals={"step": workload.step},
                                num_threads=torch.get_num_threads())
        for _ in range(args.iterations):
            ours_paired += timing.time_iterations(workload.step, workload.devices, 1, 0)
            theirs_paired.append(timer.timeit(1).median * 1e9)
        a, b = statistics.median(ours_paired), statistics.median(theirs_paired)
        print(f"paired: profkit median {a / 1e6:.3f} ms, torch.utils.benchmark median "
              f"{b / 1e6:.3f} ms over {args.iterations} alternating iterations, "
              f"ratio {a / b:.3f}")
    finally:
        workload.close()
    print(f"median ratio of the rounds, profkit / torch.utils.benchmark: "
          f"{statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
