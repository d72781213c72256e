"""A GAN on a 2-D ring of Gaussians: a discriminator and a generator, each with its own
Adam, each stepping once per iteration (``--critic K``: the discriminator K times).

Prints ``iteration N`` after the generator's step (N from 0).
"""

import argparse
import math

import torch
from torch import nn


def real_batch(n: int, g: torch.Generator) -> torch.Tensor:
    k = torch.randint(0, 8, (n,), generator=g).float()
    centers = torch.stack([torch.cos(k * math.pi / 4), torch.sin(k * math.pi / 4)], 1) * 2
    return centers + 0.05 * torch.randn(n, 2, generator=g)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--critic", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    gen = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                        nn.Linear(64, 2))
    disc = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64),
                         nn.LeakyReLU(0.2), nn.Linear(64, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3, betas=(0.5, 0.999))
    bce = nn.BCEWithLogitsLoss()
    batch = 128
    ones, zeros = torch.ones(batch, 1), torch.zeros(batch, 1)
    for it in range(args.iterations):
        for _ in range(args.critic):
            opt_d.zero_grad()
            fake = gen(torch.randn(batch, 8, generator=g)).detach()
            loss_d = bce(disc(real_batch(batch, g)), ones) + bce(disc(fake), zeros)
            loss_d.backward()
            opt_d.step()
        opt_g.zero_grad()
        loss_g = bce(disc(gen(torch.randn(batch, 8, generator=g))), ones)
        loss_g.backward()
        opt_g.step()
        print(f"iteration {it} d {loss_d.item():.3f} g {loss_g.item():.3f}", flush=True)


if __name__ == "__main__":
    main()
