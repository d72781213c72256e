"""A small MLP trained from a DataLoader whose samples take a millisecond each to load (as
reading a file would): with no workers the step waits for its batch; with enough workers
it does not. Prints ``iteration N`` after every optimizer step (N from 0)."""

import argparse
import time

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __init__(self, n: int, load_s: float) -> None:
        self.n, self.load_s = n, load_s

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        time.sleep(self.load_s)  # the read: the process waits, no core is busy
        g = torch.Generator().manual_seed(i)
        return torch.randn(256, generator=g), i % 10


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--load-ms", type=float, default=1.0)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    loader = DataLoader(Slow(32 * args.iterations, args.load_ms / 1e3), batch_size=32,
                        num_workers=args.workers, prefetch_factor=4 if args.workers else None)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    for it, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"iteration {it} loss {loss.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
