"""A small MLP fitted to noisy random data with L-BFGS: each ``optimizer.step(closure)``
calls the closure, and so ``backward()``, up to ``max_iter`` times (and more with the
line search), all inside the one optimizer step.

Prints ``iteration N evals K`` after every optimizer step (N from 0; K: the closure's
calls in that step).
"""

import argparse

import torch
from torch import nn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--max-iter", type=int, default=20)
    args = parser.parse_args()
    torch.manual_seed(0)
    x = torch.randn(256, 16)
    y = torch.sin(x @ torch.randn(16, 1)) + 0.3 * torch.randn(256, 1)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=args.max_iter,
                            history_size=10)
    evals = 0

    def closure() -> torch.Tensor:
        nonlocal evals
        evals += 1
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    for it in range(args.iterations):
        evals = 0
        loss = opt.step(closure)
        print(f"iteration {it} evals {evals} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
