"""A small MLP classifier compiled with torch.compile, trained with AdamW and bfloat16
autocast on the CPU, two micro-batches per optimizer step (gradient accumulation).

Prints ``iteration N`` after every optimizer step (N from 0).
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=12)
    parser.add_argument("--accumulate", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10))
    compiled = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64)
    y = torch.randint(0, 10, (32,))
    for it in range(args.iterations):
        for _ in range(args.accumulate):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(compiled(x), y) / args.accumulate
            loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"iteration {it} loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
