"""Models of the ``pipeline`` scenario as ordered layer lists, and their split into stages.

A pipeline needs the model as a sequence of layers it can cut anywhere, so each
model here is built as a plain list of modules applied one after another (the
last one produces the logits). Every rank builds the whole list from the same
seed and keeps only its own stages, so the weights of a stage are the same
wherever it lives and the same as in the single-process reference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

MODELS = ("mobilenetv2", "transformer")
PARTITIONS = ("balanced", "ends-on-rank0")
# every strategy trains with SGD at these settings (and the one-process reference too)
LEARNING_RATE = 0.05
MOMENTUM = 0.9


def stages_per_rank(strategy: str) -> int:
    """Stages each rank holds: two in the interleaved schedule, else one."""
    return 2 if strategy == "interleaved-1f1b" else 1


@dataclass(frozen=True)
class ModelSpec:
    """The model and its sizes (only the fields of the chosen model matter)."""

    model: str
    width_mult: float = 0.5  # MobileNetV2 channel multiplier
    image_size: int = 32  # CIFAR-10 shape
    num_classes: int = 10
    layers: int = 4  # transformer encoder layers
    hidden: int = 64  # transformer width
    heads: int = 4
    seq_len: int = 32
    vocab: int = 1000


class ImageHead(nn.Module):
    """MobileNetV2's pooling, flatten and classifier, as one layer."""

    def __init__(self, classifier: nn.Module) -> None:
        super().__init__()
        self.classifier = classifier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        return self.classifier(torch.flatten(x, 1))


class Embeddings(nn.Module):
    """RoBERTa-style token and position embeddings followed by LayerNorm."""

    def __init__(self, vocab: int, hidden: int, seq_len: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(seq_len, hidden)
        self.norm = nn.LayerNorm(hidden)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(ids.shape[1], device=ids.device)
        return self.norm(self.tokens(ids) + self.positions(pos))


class SequenceHead(nn.Module):
    """RoBERTa's classification head: first token, dense, tanh, projection."""

    def __init__(self, hidden: int, num_classes: int) -> None:
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.dense(x[:, 0, :])))


def build_layers(spec: ModelSpec, seed: int) -> list[nn.Module]:
    """The model as a list of layers, randomly initialized from ``seed`` (no dropout)."""
    torch.manual_seed(seed)
    if spec.model == "mobilenetv2":
        from torchvision.models import mobilenet_v2

        net = mobilenet_v2(weights=None, num_classes=spec.num_classes,
                           width_mult=spec.width_mult, dropout=0.0)
        return [*net.features, ImageHead(net.classifier)]
    if spec.model == "transformer":
        encoder = [
            nn.TransformerEncoderLayer(spec.hidden, spec.heads, dim_feedforward=4 * spec.hidden,
                                       dropout=0.0, activation="gelu", batch_first=True)
            for _ in range(spec.layers)
        ]
        return [Embeddings(spec.vocab, spec.hidden, spec.seq_len), *encoder,
                SequenceHead(spec.hidden, spec.num_classes)]
    raise ValueError(f"unknown model {spec.model!r}")


def make_batch(spec: ModelSpec, batch: int, seed: int,
               device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic inputs and class targets, the same on every rank for the same seed."""
    gen = torch.Generator().manual_seed(seed + 1)
    if spec.model == "mobilenetv2":
        x = torch.randn(batch, 3, spec.image_size, spec.image_size, generator=gen)
    else:
        x = torch.randint(0, spec.vocab, (batch, spec.seq_len), generator=gen)
    y = torch.randint(0, spec.num_classes, (batch,), generator=gen)
    return x.to(device), y.to(device)


def layer_costs(layers: Sequence[nn.Module], sample: torch.Tensor) -> list[int]:
    """Forward FLOPs of each layer for one sample (a deterministic cost, the same on every rank).

    Layers without counted FLOPs (embeddings) cost their parameter count, so no
    layer is free.
    """
    from torch.utils.flop_counter import FlopCounterMode

    costs = []
    x = sample
    with torch.no_grad():
        for layer in layers:
            counter = FlopCounterMode(display=False)
            with counter:
                x = layer(x)
            params = sum(p.numel() for p in layer.parameters())
            costs.append(max(int(counter.get_total_flops()), params, 1))
    return costs


def balanced_split(costs: Sequence[int], n_stages: int) -> list[range]:
    """Contiguous split of the layers into ``n_stages`` that minimizes the costliest stage."""
    n = len(costs)
    if n_stages > n:
        raise ValueError(f"{n} layers cannot fill {n_stages} stages")
    prefix = [0]
    for c in costs:
        prefix.append(prefix[-1] + c)
    inf = float("inf")
    # best[s][i]: smallest max-stage cost splitting layers[:i] into s stages; cut[s][i]: start
    best = [[inf] * (n + 1) for _ in range(n_stages + 1)]
    cut = [[0] * (n + 1) for _ in range(n_stages + 1)]
    best[0][0] = 0
    for s in range(1, n_stages + 1):
        for i in range(s, n - (n_stages - s) + 1):
            for j in range(s - 1, i):
                value = max(best[s - 1][j], prefix[i] - prefix[j])
                if value < best[s][i]:
                    best[s][i], cut[s][i] = value, j
    bounds = [n]
    for s in range(n_stages, 0, -1):
        bounds.append(cut[s][bounds[-1]])
    bounds.reverse()
    return [range(bounds[k], bounds[k + 1]) for k in range(n_stages)]


@dataclass(frozen=True)
class Placement:
    """Which layers form each stage and which rank runs it."""

    stages: tuple[range, ...]  # layer indices of stage s
    stage_rank: tuple[int, ...]  # rank of stage s

    def stages_of(self, rank: int) -> list[int]:
        return [s for s, r in enumerate(self.stage_rank) if r == rank]

    @property
    def torch_layout(self) -> bool:
        """True when every rank holds as many stages and stage s runs on rank s % world_size.

        That is the layout torch's ScheduleGPipe, Schedule1F1B and ScheduleInterleaved1F1B assume.
        """
        world = max(self.stage_rank) + 1
        return len(self.stage_rank) % world == 0 and all(
            r == s % world for s, r in enumerate(self.stage_rank))


def placement(costs: Sequence[int], world_size: int, stages_per_rank: int,
              partition: str) -> Placement:
    """Split and place the layers.

    ``balanced``: ``world_size * stages_per_rank`` stages of about equal cost,
    stage s on rank s % world_size (torch's looped layout).
    ``ends-on-rank0``: the first and the last stage on rank 0. With one stage per
    rank this is a loop-back: rank 0, 1, ..., world_size-1, then rank 0 again
    (world_size + 1 stages). With two per rank it is the V layout (0, 1, ..., 1, 0).
    """
    if partition == "balanced":
        n = world_size * stages_per_rank
        return Placement(tuple(balanced_split(costs, n)), tuple(s % world_size for s in range(n)))
    if partition == "ends-on-rank0":
        if stages_per_rank == 1:
            ranks = (*range(world_size), 0)
        elif stages_per_rank == 2:
            ranks = (*range(world_size), *reversed(range(world_size)))
        else:
            raise ValueError("ends-on-rank0 supports one or two stages per rank")
        return Placement(tuple(balanced_split(costs, len(ranks))), tuple(ranks))
    raise ValueError(f"unknown partition {partition!r}")
