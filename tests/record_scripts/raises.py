"""Trains a small MLP and fails at iteration ``--fail-at`` with a ValueError, as a real
script does on bad data. Prints ``iteration N`` after every optimizer step (N from 0)."""

import argparse

import torch
from torch import nn


def check(batch: torch.Tensor, it: int, fail_at: int) -> None:
    if it == fail_at:
        raise ValueError(f"bad batch at iteration {it}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-at", type=int, default=4)
    args = parser.parse_args()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(64, 32), torch.randn(64, 1)
    for it in range(100):
        check(x, it, args.fail_at)
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        print(f"iteration {it}", flush=True)


if __name__ == "__main__":
    main()
