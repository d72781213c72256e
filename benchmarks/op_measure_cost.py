"""What measuring a trace's hot ops costs: a ResNet-50 training step recorded on this
machine with shapes (torchvision, random weights), then its hot ops timed as recorded and
in bf16 autocast (``profkit whatif --measure --precision bf16``), beside the recorded
step's own time as the anchor.

    python benchmarks/op_measure_cost.py [--batch 8] [--size 224]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def record(folder: Path, batch: int, size: int) -> tuple[Path, float]:
    """One profiled training step after one warm-up; the trace and the step's seconds."""
    import torch
    import torchvision

    model = torchvision.models.resnet50()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(batch, 3, size, size), torch.randint(0, 1000, (batch,))

    def step() -> None:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    start = time.perf_counter()
    step()
    plain = time.perf_counter() - start
    with torch.profiler.profile(record_shapes=True) as prof:
        with torch.profiler.record_function("ProfilerStep#1"):
            step()
    path = folder / "resnet50_train.pt.trace.json"
    prof.export_chrome_trace(str(path))
    return path, plain


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--size", type=int, default=224)
    a = p.parse_args()
    from profiler_kit.analysis.core.op_tree import build_op_tree
    from profiler_kit.analysis.whatif.hot_ops import hot_ops
    from profiler_kit.sources.measured_ops import measure_tables
    from profiler_kit.trace.loader import load

    with tempfile.TemporaryDirectory() as tmp:
        trace, step_s = record(Path(tmp), a.batch, a.size)
        table = load(trace)
        hot = hot_ops(table, build_op_tree(table), None)
        start = time.perf_counter()
        change = measure_tables([table], "bf16")
        took = time.perf_counter() - start
    rebuilt = sum(1 for g in hot.groups if not g.reason)
    print(f"ResNet-50 training step, batch {a.batch} at {a.size}x{a.size}: {step_s:.2f} s "
          f"unprofiled (the anchor)")
    held = sum(hot.weight(g) for g in hot.groups if not g.reason) / hot.total_ns
    print(f"hot op groups: {len(hot.groups)} (90 % of the op time), {rebuilt} rebuildable "
          f"({held:.0%} of the op time), {len(change.effects)} timed")
    print(f"measuring them (a fresh process, torch import included): {took:.1f} s "
          f"= {took / step_s:.1f} training steps")


if __name__ == "__main__":
    main()
