"""What recording memory by category costs in the profiled pass, on a small CPU model.

Side by side, best of ``--rounds``: the profiled pass as a run makes it by default
(no stacks), with ``with_stack`` only, and with stacks plus the categories
(``memory_categories.handler``). Run: ``python benchmarks/memory_categories_overhead.py``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

from profiler_kit.measure import memory_categories


def _pass(with_stack: bool, categories: bool, steps: int, out: Path) -> float:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(8)])
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(64, 256)
    ready = tensorboard_trace_handler(str(out), worker_name="w")
    if categories:
        ready = memory_categories.handler(ready, out, "w", ["cpu"])
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU], on_trace_ready=ready,
                 schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
                 record_shapes=True, profile_memory=True, with_stack=with_stack) as prof:
        for _ in range(steps + 1):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
            prof.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    configs = (("default (no stacks)", False, False), ("with_stack", True, False),
               ("with_stack + categories", True, True))
    _pass(False, False, 1, Path(tempfile.mkdtemp()))  # the profiler's first start is slow
    best = {label: float("inf") for label, _, _ in configs}
    for _ in range(args.rounds):  # interleaved, so drift hits every configuration alike
        for label, stack, cats in configs:
            best[label] = min(best[label], _pass(stack, cats, args.steps, Path(tempfile.mkdtemp())))
    for label, seconds in best.items():
        print(f"{label:26s} {seconds * 1000:8.1f} ms  (profiled pass, {args.steps} active steps)")

if __name__ == "__main__":
    main()
