"""The models and training step of the ``multimodel`` scenario (imports torch).

Each strategy is a :class:`MultiNet`: the same N linear models in a different
layout. All are built from one set of per-model weights (drawn like ``nn.Linear``
draws them, from the run's seed), take inputs in the per-model layout
``[N, batch, (seq,) d_in]``, return outputs in ``[N, batch, (seq,) d_out]`` and map
their gradients back to per-model ``[N, d_out, d_in]`` / ``[N, d_out]``, so every
strategy can be checked against the ``linear`` baseline.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.profiler import record_function

from profiler_kit.errors import UsageError
from profiler_kit.measure.devices import synchronize
from profiler_kit.scenario import PhaseList, RunConfig, Strategy, Workload

PHASES = ("data", "zero_grad", "forward", "backward", "optimizer")


def initial_weights(n: int, d_in: int, d_out: int, seed: int) -> tuple[Tensor, Tensor]:
    """Per-model weights ``[N, d_out, d_in]`` and biases ``[N, d_out]`` on the CPU.

    Drawn from U(-1/sqrt(d_in), 1/sqrt(d_in)), the distribution ``nn.Linear`` uses by
    default, from a private generator: the same on every device and strategy, and
    without touching the global random state.
    """
    gen = torch.Generator().manual_seed(seed)
    bound = 1.0 / math.sqrt(d_in)
    weight = torch.empty(n, d_out, d_in).uniform_(-bound, bound, generator=gen)
    bias = torch.empty(n, d_out).uniform_(-bound, bound, generator=gen)
    return weight, bias


class MultiNet(nn.Module):
    """N linear models in one strategy's layout."""

    def forward(self, x: Tensor) -> Tensor:  # [N, B, (S,) d_in] -> [N, B, (S,) d_out]
        raise NotImplementedError

    def per_model_grads(self) -> tuple[Tensor, Tensor]:
        """Gradients of weights ``[N, d_out, d_in]`` and biases ``[N, d_out]``."""
        raise NotImplementedError


def _linears(weight: Tensor, bias: Tensor, device: torch.device) -> list[nn.Linear]:
    n, d_out, d_in = weight.shape
    models = [nn.Linear(d_in, d_out, device=device) for _ in range(n)]
    with torch.no_grad():
        for model, w, b in zip(models, weight, bias, strict=True):
            model.weight.copy_(w)
            model.bias.copy_(b)
    return models


def _grad(p: Tensor) -> Tensor:
    if p.grad is None:
        return torch.zeros_like(p)
    return p.grad


class LinearLoop(MultiNet):
    """Baseline: a ModuleList of ``nn.Linear``, one call each, outputs stacked."""

    def __init__(self, weight: Tensor, bias: Tensor, device: torch.device) -> None:
        super().__init__()
        self.models = nn.ModuleList(_linears(weight, bias, device))

    def forward(self, x: Tensor) -> Tensor:
        return torch.stack([model(x[i]) for i, model in enumerate(self.models)])

    def per_model_grads(self) -> tuple[Tensor, Tensor]:
        return (
            torch.stack([_grad(m.weight) for m in self.models]),
            torch.stack([_grad(m.bias) for m in self.models]),
        )


class Conv1dLoop(MultiNet):
    """A ModuleList of ``nn.Conv1d(kernel_size=1)``; features move to the channel axis."""

    def __init__(self, weight: Tensor, bias: Tensor, device: torch.device) -> None:
        super().__init__()
        n, d_out, d_in = weight.shape
        self.models = nn.ModuleList(
            nn.Conv1d(d_in, d_out, kernel_size=1, device=device) for _ in range(n)
        )
        with torch.no_grad():
            for model, w, b in zip(self.models, weight, bias, strict=True):
                model.weight.copy_(w.unsqueeze(-1))
                model.bias.copy_(b)

    def forward(self, x: Tensor) -> Tensor:
        outs = []
        for i, model in enumerate(self.models):
            xi = x[i]
            if xi.dim() == 2:  # [B, d_in] -> [B, d_in, 1]
                outs.append(model(xi.unsqueeze(-1)).squeeze(-1))
            else:  # [B, S, d_in] -> [B, d_in, S]
                outs.append(model(xi.transpose(1, 2)).transpose(1, 2))
        return torch.stack(outs)

    def per_model_grads(self) -> tuple[Tensor, Tensor]:
        return (
            torch.stack([_grad(m.weight).squeeze(-1) for m in self.models]),
            torch.stack([_grad(m.bias) for m in self.models]),
        )


class GroupedConv1d(MultiNet):
    """One ``nn.Conv1d(N*d_in, N*d_out, 1, groups=N)``; group i holds model i.

    The permute/reshape into ``[B, N*d_in, S]`` and back is part of the forward pass
    (and so of the timed step): the models' data arrives in the per-model layout.
    """

    def __init__(self, weight: Tensor, bias: Tensor, device: torch.device) -> None:
        super().__init__()
        n, d_out, d_in = weight.shape
        self.n, self.d_in, self.d_out = n, d_in, d_out
        self.conv = nn.Conv1d(n * d_in, n * d_out, kernel_size=1, groups=n, device=device)
        with torch.no_grad():
            self.conv.weight.copy_(weight.reshape(n * d_out, d_in, 1))
            self.conv.bias.copy_(bias.reshape(n * d_out))

    def forward(self, x: Tensor) -> Tensor:
        n, batch = x.shape[0], x.shape[1]
        seq = x.dim() == 4
        if seq:  # [N, B, S, d_in] -> [B, N, d_in, S]
            grouped = x.permute(1, 0, 3, 2).reshape(batch, n * self.d_in, x.shape[2])
        else:  # [N, B, d_in] -> [B, N, d_in] -> [B, N*d_in, 1]
            grouped = x.permute(1, 0, 2).reshape(batch, n * self.d_in, 1)
        y = self.conv(grouped)  # [B, N*d_out, S]
        y = y.view(batch, n, self.d_out, y.shape[-1])
        if seq:  # [B, N, d_out, S] -> [N, B, S, d_out]
            return y.permute(1, 0, 3, 2)
        return y.squeeze(-1).permute(1, 0, 2)

    def per_model_grads(self) -> tuple[Tensor, Tensor]:
        return (
            _grad(self.conv.weight).view(self.n, self.d_out, self.d_in),
            _grad(self.conv.bias).view(self.n, self.d_out),
        )


class BatchedMatmul(MultiNet):
    """Stacked weights ``[N, d_in, d_out]`` and biases ``[N, 1, d_out]``: one ``baddbmm``."""

    def __init__(self, weight: Tensor, bias: Tensor, device: torch.device) -> None:
        super().__init__()
        self.weight = nn.Parameter(weight.transpose(1, 2).contiguous().to(device))
        self.bias = nn.Parameter(bias.unsqueeze(1).contiguous().to(device))

    def forward(self, x: Tensor) -> Tensor:
        n, d_in = x.shape[0], x.shape[-1]
        flat = x.reshape(n, -1, d_in)  # [N, B*S, d_in]: a view, the layout is per-model already
        y = torch.baddbmm(self.bias, flat, self.weight)
        return y.view(*x.shape[:-1], y.shape[-1])

    def per_model_grads(self) -> tuple[Tensor, Tensor]:
        return _grad(self.weight).transpose(1, 2), _grad(self.bias).squeeze(1)


class Vmapped(MultiNet):
    """N ``nn.Linear`` stacked with ``stack_module_state``, called with ``vmap``."""

    def __init__(self, weight: Tensor, bias: Tensor, device: torch.device) -> None:
        super().__init__()
        models = _linears(weight, bias, device)
        params, _buffers = torch.func.stack_module_state(models)
        self.stacked = nn.ParameterDict({k: nn.Parameter(v) for k, v in params.items()})
        # A stateless template: functional_call supplies its weights. Kept out of the
        # module tree so it adds no parameters.
        self.__dict__["template"] = copy.deepcopy(models[0]).to("meta")
        self._batched = torch.func.vmap(self._one_model)

    def _one_model(self, params: dict[str, Tensor], x: Tensor) -> Tensor:
        return torch.func.functional_call(self.__dict__["template"], params, (x,))

    def forward(self, x: Tensor) -> Tensor:
        return self._batched(dict(self.stacked.items()), x)

    def per_model_grads(self) -> tuple[Tensor, Tensor]:
        return _grad(self.stacked["weight"]), _grad(self.stacked["bias"])


NETS: Mapping[str, Callable[[Tensor, Tensor, torch.device], MultiNet]] = {
    "linear": LinearLoop,
    "conv1d": Conv1dLoop,
    "gconv1d": GroupedConv1d,
    "bmm": BatchedMatmul,
    "vmap": Vmapped,
}


class MultiModelWorkload(Workload):
    """One strategy of ``multimodel``, ready to train: a step is five phases.

    ``data`` draws inputs and targets on the device (a device generator, no host
    copy), ``zero_grad``, ``forward``, ``backward`` (the loss and its backward pass)
    and ``optimizer`` (SGD with momentum). The loss is the sum of the N models'
    mean squared errors, so each model's gradient does not depend on N.
    """

    def __init__(self, strategy: Strategy, config: RunConfig) -> None:
        p = config.params
        self.n = int(p["n_model"])
        self.d_in, self.d_out = int(p["d_in"]), int(p["d_out"])
        self.batch, self.seq_len = int(p["batch"]), int(p["seq_len"])
        for name in ("n_model", "d_in", "d_out", "batch"):
            if int(p[name]) < 1:
                raise UsageError(f"multimodel: --{name.replace('_', '-')} must be at least 1")
        if self.seq_len < 0:
            raise UsageError("multimodel: --seq-len must be 0 (none) or positive")
        if strategy.base_name not in NETS:
            raise UsageError(f"multimodel: unknown strategy {strategy.name!r}")
        self.strategy = strategy
        self.device = torch.device(config.device)
        self.devices = [self.device]
        self.items_per_step = self.n * self.batch
        self.seed = config.seed
        self.amp_dtype = getattr(torch, config.amp_dtype) if config.amp_dtype else None
        self._lr, self._momentum = float(p["lr"]), float(p["momentum"])

        make_net = NETS[strategy.base_name]
        weight, bias = initial_weights(self.n, self.d_in, self.d_out, self.seed)
        # A throwaway one-model net first, so one-time lazy initialization is not
        # charged to whichever strategy happens to be built first.
        make_net(weight[:1, :1, :1], bias[:1, :1], self.device)
        synchronize(self.devices)
        start = time.perf_counter_ns()
        self.net = make_net(weight, bias, self.device)
        synchronize(self.devices)
        build_time_ns = time.perf_counter_ns() - start
        self.optimizer = torch.optim.SGD(
            self.net.parameters(), lr=self._lr, momentum=self._momentum
        )
        self.info: dict[str, Any] = {
            "build_time_ns": build_time_ns,  # the models only: weights laid out on the device
            "param_count": sum(t.numel() for t in self.net.parameters()),
        }
        # GradScaler only matters for float16; disabled it is a plain optimizer.step().
        self.scaler = torch.amp.GradScaler(
            self.device.type, enabled=self.amp_dtype is torch.float16
        )
        self.generator = torch.Generator(device=self.device).manual_seed(self.seed)
        self._x: Tensor | None = None
        self._y: Tensor | None = None
        self._out: Tensor | None = None
        self._phases: PhaseList = (
            ("data", self._data),
            ("zero_grad", self._zero_grad),
            ("forward", self._forward),
            ("backward", self._backward),
            ("optimizer", self._optimizer),
        )

    # -- shapes and pieces shared by step() and outputs() --------------------------

    def shape(self, features: int) -> tuple[int, ...]:
        """The per-model layout: ``[N, batch, (seq,) features]``."""
        if self.seq_len:
            return (self.n, self.batch, self.seq_len, features)
        return (self.n, self.batch, features)

    def _draw(self, generator: torch.Generator) -> tuple[Tensor, Tensor]:
        x = torch.randn(self.shape(self.d_in), generator=generator, device=self.device)
        y = torch.randn(self.shape(self.d_out), generator=generator, device=self.device)
        return x, y

    def _autocast(self) -> AbstractContextManager[Any]:
        return torch.autocast(
            self.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None
        )

    def _loss(self, out: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(out.float(), target) * self.n

    # -- the phases -----------------------------------------------------------------

    def _data(self) -> None:
        with record_function("data"):
            self._x, self._y = self._draw(self.generator)

    def _zero_grad(self) -> None:
        with record_function("zero_grad"):
            self.optimizer.zero_grad(set_to_none=True)

    def _forward(self) -> None:
        with record_function("forward"), self._autocast():
            self._out = self.net(self._x)

    def _backward(self) -> None:
        assert self._out is not None and self._y is not None, "forward runs before backward"
        with record_function("backward"):
            with self._autocast():
                loss = self._loss(self._out, self._y)
            self.scaler.scale(loss).backward()
            self._out = None  # free the activations before the optimizer runs

    def _optimizer(self) -> None:
        with record_function("optimizer"):
            self.scaler.step(self.optimizer)
            self.scaler.update()

    def phases(self) -> PhaseList:
        return self._phases

    def step(self) -> None:
        for _name, phase in self._phases:
            phase()

    def outputs(self) -> list[Tensor]:
        """Forward output and per-model gradients of one loss + backward.

        Computed on a fresh copy of this strategy's net, built from the initial
        weights, with a fixed input: the state ``step`` trains is untouched.
        """
        weight, bias = initial_weights(self.n, self.d_in, self.d_out, self.seed)
        net = NETS[self.strategy.base_name](weight, bias, self.device)
        x, y = self._draw(torch.Generator(device=self.device).manual_seed(self.seed + 1))
        with self._autocast():
            out = net(x)
            loss = self._loss(out, y)
        loss.backward()
        grad_w, grad_b = net.per_model_grads()
        return [out.detach().float(), grad_w.detach().float(), grad_b.detach().float()]

    def close(self) -> None:
        """Drop the batch, gradients and momentum so the next strategy starts with free memory."""
        self._x = self._y = self._out = None
        self.optimizer.zero_grad(set_to_none=True)
        self.optimizer.state.clear()
