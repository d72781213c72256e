"""Inference-like numeric work that never steps: no optimizer, no backward(), no
DataLoader; matrix products and reductions in a loop for ``--seconds``."""

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    a = torch.randn(128, 128)
    end = time.monotonic() + args.seconds
    rounds = 0
    while time.monotonic() < end:
        with torch.no_grad():
            b = torch.softmax(a @ a.T, dim=1)
            a = (b @ a) / b.sum()
        rounds += 1
    print(f"rounds {rounds}", flush=True)


if __name__ == "__main__":
    main()
