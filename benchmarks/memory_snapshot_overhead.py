"""What ``--memory-snapshot`` costs on CUDA: steps timed with and without the allocator's
history recorded (``memory_snapshot.recording``, as ``profkit run`` uses it), plus the
dump of the snapshot at the end, on a torchvision ResNet-18 training step.

Interleaved rounds, median step time of each; the overhead is the difference of the
medians against the plain step (the anchor, in the same run). On the CPU it stops with one
line: there is no caching allocator to record.

Run: ``python benchmarks/memory_snapshot_overhead.py [--batch-size 64] [--rounds 5]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torchvision

from profiler_kit.measure import memory_snapshot


def _steps(model: torch.nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor,
           y: torch.Tensor, n: int) -> list[float]:
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("memory_snapshot_overhead: needs CUDA (the CPU has no caching allocator)",
              file=sys.stderr)
        return 2
    dev = torch.device("cuda")
    model = torchvision.models.resnet18(num_classes=100).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(args.batch_size, 3, 224, 224, device=dev)
    y = torch.randint(0, 100, (args.batch_size,), device=dev)
    _steps(model, opt, x, y, 5)  # warm-up: cuDNN's choices, the allocator's segments
    plain: list[float] = []
    recorded: list[float] = []
    dumps: list[float] = []
    sizes: list[int] = []
    for _ in range(args.rounds):  # interleaved, so drift hits both alike
        plain += _steps(model, opt, x, y, args.steps)
        out = Path(tempfile.mkdtemp())
        with memory_snapshot.recording([dev], out, "w"):
            recorded += _steps(model, opt, x, y, args.steps)
            dumped_from = time.perf_counter()
        dumps.append(time.perf_counter() - dumped_from)
        sizes.append(memory_snapshot.path_for(out, "w").stat().st_size)
    base, rec = statistics.median(plain), statistics.median(recorded)
    print(f"{torch.cuda.get_device_name(0)}, resnet18 batch {args.batch_size}, "
          f"{args.rounds} rounds x {args.steps} steps")
    print(f"plain step (anchor)       {base * 1e3:8.2f} ms")
    print(f"recording history         {rec * 1e3:8.2f} ms  ({(rec - base) / base:+.1%})")
    print(f"snapshot dump at the end  {statistics.median(dumps) * 1e3:8.1f} ms, "
          f"{statistics.median(sizes) / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
