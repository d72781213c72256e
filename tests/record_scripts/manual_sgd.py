"""Logistic regression on two blobs, trained with hand-written SGD: no optimizer, the
parameters updated under ``torch.no_grad()`` after each ``backward()``.

Prints ``iteration N`` after every update (N from 0).
"""

import argparse
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--pause-ms", type=float, default=0.0,
                        help="sleep this long after each update (a paced loop)")
    args = parser.parse_args()
    g = torch.Generator().manual_seed(0)
    n, d = 512, 32
    x = torch.cat([torch.randn(n, d, generator=g) + 1, torch.randn(n, d, generator=g) - 1])
    y = torch.cat([torch.ones(n), torch.zeros(n)])
    w1 = (torch.randn(d, 64, generator=g) * 0.1).requires_grad_()
    b1 = torch.zeros(64, requires_grad=True)
    w2 = (torch.randn(64, 1, generator=g) * 0.1).requires_grad_()
    params = [w1, b1, w2]
    for it in range(args.iterations):
        logits = (torch.tanh(x @ w1 + b1) @ w2).squeeze(1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= 0.5 * p.grad
                p.grad = None
        print(f"iteration {it} loss {loss.item():.4f}", flush=True)
        if args.pause_ms:
            time.sleep(args.pause_ms / 1e3)


if __name__ == "__main__":
    main()
