"""On a CUDA GPU: a few training steps of a small CNN recorded by PyTorch's
``cupti_monitor`` backend with the GPU counters sampled, exported both ways, for
``benchmarks/gpu_check.sh``'s ``counters`` step:

    python benchmarks/gpu_counters_trace.py OUT

writes ``OUT/counters.json.gz`` and ``OUT/counters.pftrace`` (one recording each where
the backend exports a window once: each format then has a recording of its own) and
prints what each export did. Exit 2 where the counters cannot be sampled here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile, schedule

from profiler_kit.measure.gpu_counters import experimental_config, why_not


def record(out: Path, name: str) -> None:
    model = torchvision.models.resnet18().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 3, 224, 224, device="cuda")
    y = torch.randint(0, 1000, (64,), device="cuda")

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):  # cuDNN's autotuning and the allocator's first blocks
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 schedule=schedule(wait=0, warmup=1, active=3), record_shapes=True,
                 **experimental_config(True, False)) as prof:
        for _ in range(4):
            step()
            torch.cuda.synchronize()
            prof.step()
    for suffix in (".pftrace", ".json.gz"):
        path = out / f"{name}{suffix}"
        try:
            prof.export_chrome_trace(str(path))
            wait = getattr(prof, "wait_for_exports", None)
            if wait is not None:
                wait()
            print(f"{path}: {path.stat().st_size:,} bytes" if path.exists()
                  else f"{path}: not written")
        except Exception as e:  # noqa: BLE001 - said, and the other format still tried
            print(f"{path}: export failed: {type(e).__name__}: {e}")


def main() -> int:
    out = Path(sys.argv[1])
    why = why_not(torch.cuda.is_available())
    if why:
        print(f"GPU counters cannot be sampled here: {why}")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    record(out, "counters")
    if not (out / "counters.json.gz").exists():  # one export per window: record again
        record(out, "counters_json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
