"""DistributedDataParallel with gloo on the CPU, started by torchrun: a small MLP regression,
each rank on its own shard of a synthetic data set, SGD with momentum.

Prints ``rank R iteration N`` after every optimizer step (N from 0).
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert int(os.environ["LOCAL_RANK"]) == rank % int(os.environ["LOCAL_WORLD_SIZE"])
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(64, 32, generator=g)
    y = x.sum(1, keepdim=True)
    for it in range(args.iterations):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        print(f"rank {rank} iteration {it} loss {loss.item():.3f}", flush=True)
    dist.destroy_process_group()
    print(f"rank {rank} of {world} done", flush=True)


if __name__ == "__main__":
    main()
