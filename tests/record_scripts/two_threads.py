"""Two threads, each training its own small model with its own Adam optimizer: the optimizer
steps of one thread run while the other's are under way."""

import threading
import time

import torch
from torch import nn


def train(seed: int, steps: int) -> None:
    torch.manual_seed(seed)
    model = nn.Linear(256, 256)
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(32, 256)
    for _ in range(steps):
        opt.zero_grad()
        model(x).square().mean().backward()
        time.sleep(0.01)
        opt.step()


def main() -> None:
    threads = [threading.Thread(target=train, args=(i, 60)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("done", flush=True)


if __name__ == "__main__":
    main()
