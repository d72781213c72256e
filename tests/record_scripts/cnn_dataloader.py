"""A small CNN trained on synthetic 16x16 images through a DataLoader with worker processes.

Prints ``iteration N`` after every optimizer step (N from 0), and the number of the worker
process that made each batch is checked to be a real worker (not the main process).
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, get_worker_info


class Shapes(Dataset):
    """Images of a bright square whose corner says the class; made on the fly."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        g = torch.Generator().manual_seed(i)
        label = i % 4
        image = torch.rand(1, 16, 16, generator=g) * 0.1
        r, c = divmod(label, 2)
        image[0, r * 8:r * 8 + 6, c * 8:c * 8 + 6] += 1.0
        info = get_worker_info()
        return image, label, -1 if info is None else info.id


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(16 * 4 * 4, 4)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batches", type=int, default=8, help="batches per epoch")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--start", default=None, help="the workers' start method (spawn)")
    parser.add_argument("--device", default="cpu", help="where the model trains (cpu, cuda)")
    args = parser.parse_args()
    torch.manual_seed(0)
    loader = DataLoader(Shapes(args.batches * 16), batch_size=16, shuffle=True,
                        num_workers=args.workers, multiprocessing_context=args.start)
    model = Net().to(args.device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_fn = nn.CrossEntropyLoss()
    it = 0
    for epoch in range(args.epochs):
        for images, labels, workers in loader:
            assert args.workers == 0 or bool((workers >= 0).all()), "a batch not from a worker"
            images, labels = images.to(args.device), labels.to(args.device)
            opt.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            opt.step()
            print(f"iteration {it} epoch {epoch} loss {loss.item():.3f}", flush=True)
            it += 1
    print(f"done {it}", flush=True)


if __name__ == "__main__":
    main()
