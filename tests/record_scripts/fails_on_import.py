"""A training script run where one of its dependencies is not installed: it imports torch,
then fails on its next import, before its first step (exit status 1, with python's
``ModuleNotFoundError: No module named 'nonexistent_module'``)."""

import torch  # noqa: I001 - torch first: the script fails after importing it
from torch import nn

import nonexistent_module  # noqa: F401


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(64, 32), torch.randn(64, 1)
    for it in range(20):
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        print(f"iteration {it}", flush=True)


if __name__ == "__main__":
    main()
