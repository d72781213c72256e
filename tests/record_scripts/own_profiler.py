"""A training loop that profiles itself with torch.profiler (a schedule and
tensorboard_trace_handler into the folder given as the first argument).

Prints ``iteration N`` after every step (N from 0).
"""

import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


def main() -> None:
    logdir = sys.argv[1]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    x, y = torch.randn(64, 32), torch.randn(64, 1)
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=tensorboard_trace_handler(logdir, worker_name="mine")) as prof:
        for it in range(8):
            opt.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            prof.step()
            print(f"iteration {it}", flush=True)


if __name__ == "__main__":
    main()
