"""Scenario ``tune``: the user's own model under the standard speed knobs, one at a time.

Generated from the smallest contract: a function returning a model, a function returning
one batch of inputs for a batch size, and optionally a loss function, which makes the step
a training step (forward, backward, optimizer step). Every knob is a strategy, so the
runner checks it against the float32 eager baseline (outputs, and gradients when training)
before timing it, times it in rounds with paired noise verdicts and profiles it once.
Knobs that need CUDA are strategies that require it: on the CPU they are listed as
skipped with the reason.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from profiler_kit.errors import UsageError
from profiler_kit.scenario import (
    CUDA,
    Param,
    RunConfig,
    Scenario,
    Strategy,
    Workload,
    import_file,
)

BASELINE = "eager_fp32"
# a training step's gradients, as a relative error of norm: float32 kernels that sum in
# another order (channels_last, compiled) move them by ~1e-3 through batch statistics;
# one bfloat16 step through a random-weight ResNet moves them by ~0.4, so reduced
# precision is held to 0.5 when training (outputs and gradients alike; loose, and said so)
TRAIN_FLOAT32_TOLERANCE = 1e-2
TRAIN_AMP_TOLERANCE = 0.5
KNOBS = (
    Strategy(BASELINE, "float32, eager (the baseline)"),
    Strategy("autocast", "torch.autocast: bfloat16 on CPU, float16 on CUDA", amp=True),
    Strategy("channels_last", "channels_last memory format for 4-D inputs and weights"),
    Strategy("compile", "torch.compile(model) with the default mode"),
    Strategy("compile_reduce_overhead", 'torch.compile(model, mode="reduce-overhead")',
             opt_in="full"),
    Strategy("compile_max_autotune", 'torch.compile(model, mode="max-autotune-no-cudagraphs")',
             opt_in="full"),
    Strategy("tf32", "TF32 matmuls and convolutions (restored after)", requires=(CUDA,)),
    Strategy("cudnn_benchmark", "torch.backends.cudnn.benchmark = True (restored after)",
             requires=(CUDA,)),
)
COMPILE_MODES = {"compile": None, "compile_reduce_overhead": "reduce-overhead",
                 "compile_max_autotune": "max-autotune-no-cudagraphs"}
SNIPPETS = {
    "autocast": "with torch.autocast(device_type, dtype=torch.bfloat16):  # float16 on CUDA\n"
                "    out = model(x)",
    "channels_last": "model = model.to(memory_format=torch.channels_last)\n"
                     "x = x.contiguous(memory_format=torch.channels_last)",
    "compile": "model = torch.compile(model)",
    "compile_reduce_overhead": 'model = torch.compile(model, mode="reduce-overhead")',
    "compile_max_autotune": 'model = torch.compile(model, mode="max-autotune-no-cudagraphs")',
    "tf32": "torch.backends.cuda.matmul.allow_tf32 = True\n"
            "torch.backends.cudnn.allow_tf32 = True",
    "cudnn_benchmark": "torch.backends.cudnn.benchmark = True",
}


class UserModel:
    """The user's functions: ``model()``, ``inputs(batch_size)`` and optional ``loss``."""

    def __init__(self, model: Callable[[], Any], inputs: Callable[[int], Any],
                 loss: Callable[[Any, Any], Any] | None, origin: str) -> None:
        self.model, self.inputs, self.loss, self.origin = model, inputs, loss, origin


def load_user_model(spec: str) -> UserModel:
    """``path.py`` or ``package.module:function`` (the model function; ``inputs`` and
    ``loss`` are looked up beside it). UsageError, one line, when something is missing."""
    model_name = "model"
    if spec.endswith(".py") or "/" in spec:
        path = Path(spec)
        if not path.is_file():
            raise UsageError(f"tune: {spec!r} does not exist")
        try:
            module = import_file(path, f"profkit_tune_{path.stem}")
        except UsageError:
            raise
        except Exception as exc:  # the user's file: one line, not a traceback
            raise UsageError(f"tune: {spec} failed to import: {exc!r}") from None
    else:
        module_name, _, model_name = spec.partition(":")
        model_name = model_name or "model"
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise UsageError(f"tune: cannot import {module_name!r}: {exc}") from None
    model = getattr(module, model_name, None)
    inputs = getattr(module, "inputs", None)
    missing = [n for n, f in ((model_name, model), ("inputs", inputs)) if not callable(f)]
    if missing:
        raise UsageError(f"tune: {spec} defines no {' or '.join(missing)}() (a function "
                         "returning the model and inputs(batch_size) returning one batch)")
    loss = getattr(module, "loss", None)
    return UserModel(model, inputs, loss if callable(loss) else None, spec)


def _as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class TuneWorkload(Workload):
    """The user's model and batch under one knob; training when there is a loss."""

    def __init__(self, user: UserModel, knob: str, config: RunConfig) -> None:
        import torch

        self.torch = torch
        self.knob, self.user = knob, user
        device = torch.device(config.device)
        torch.manual_seed(config.seed)
        model = user.model().to(device)
        torch.manual_seed(config.seed + 1)
        batch = [t.to(device) if isinstance(t, torch.Tensor) else t
                 for t in _as_list(user.inputs(int(config.params["batch_size"])))]
        if knob == "channels_last":
            model = model.to(memory_format=torch.channels_last)
            batch = [t.contiguous(memory_format=torch.channels_last)
                     if isinstance(t, torch.Tensor) and t.dim() == 4 else t for t in batch]
        self.training = user.loss is not None
        if self.training:
            self.float32_tolerance = TRAIN_FLOAT32_TOLERANCE
            self.amp_tolerance = TRAIN_AMP_TOLERANCE
        model.train(self.training)
        self.reference_model = model  # outputs() computes from the initial weights
        self.initial_state = copy.deepcopy(model.state_dict())
        self.model = model
        if knob in COMPILE_MODES:
            self.model = torch.compile(model, mode=COMPILE_MODES[knob])
        self.batch = batch
        self.amp_dtype = getattr(torch, config.amp_dtype) if config.amp_dtype else None
        self.device_type = device.type
        self.scaler = (torch.amp.GradScaler("cuda")
                       if self.training and self.amp_dtype == torch.float16 else None)
        self.optimizer = (torch.optim.SGD(model.parameters(), lr=1e-3)
                          if self.training else None)
        self.devices = [device]
        first = next((t for t in batch if isinstance(t, torch.Tensor)), None)
        self.items_per_step = int(first.shape[0]) if first is not None and first.dim() else 1
        self.saved_flags = self._apply_flags(knob)
        self.info = {"param_count": sum(p.numel() for p in model.parameters()),
                     "training": self.training, "knob": knob}
        if knob in COMPILE_MODES:
            # the first call compiles: timed here, apart from the step time the runner measures
            from torch._dynamo.utils import counters

            counters.clear()
            start = time.perf_counter()
            if self.training:
                self._forward_loss(self.model)
            else:
                with torch.inference_mode():  # as step() calls it, so nothing recompiles
                    self._forward_loss(self.model)
            torch.cuda.synchronize() if device.type == "cuda" else None
            self.info = {**self.info, "compile_s": round(time.perf_counter() - start, 3),
                         "graph_breaks": sum(counters["graph_break"].values()),
                         "graphs": int(counters["stats"].get("unique_graphs", 0))}

    def _apply_flags(self, knob: str) -> dict[str, bool]:
        b = self.torch.backends
        saved = {"matmul_tf32": b.cuda.matmul.allow_tf32, "cudnn_tf32": b.cudnn.allow_tf32,
                 "cudnn_benchmark": b.cudnn.benchmark}
        if knob == "tf32":
            b.cuda.matmul.allow_tf32 = b.cudnn.allow_tf32 = True
        if knob == "cudnn_benchmark":
            b.cudnn.benchmark = True
        return saved

    def _forward_loss(self, model: Any) -> tuple[Any, Any]:
        torch = self.torch
        with torch.profiler.record_function("forward"), torch.autocast(
                self.device_type, dtype=self.amp_dtype or torch.float32,
                enabled=self.amp_dtype is not None):
            out = model(*self.batch)
            loss = self.user.loss(out, self.batch) if self.training else None
        return out, loss

    def step(self) -> None:
        torch = self.torch
        if not self.training:
            with torch.inference_mode():
                self._forward_loss(self.model)
            return
        self.optimizer.zero_grad(set_to_none=True)
        _, loss = self._forward_loss(self.model)
        with torch.profiler.record_function("backward"):
            (self.scaler.scale(loss) if self.scaler else loss).backward()
        with torch.profiler.record_function("optimizer"):
            if self.scaler:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()

    def outputs(self) -> Sequence[Any]:
        torch = self.torch
        model = copy.deepcopy(self.reference_model)
        model.load_state_dict(self.initial_state)
        compiled = torch.compile(model, mode=COMPILE_MODES[self.knob]) \
            if self.knob in COMPILE_MODES else model
        if not self.training:
            with torch.inference_mode():
                out, _ = self._forward_loss(compiled)
            return [t.float() for t in _as_list(out) if isinstance(t, torch.Tensor)]
        out, loss = self._forward_loss(compiled)
        loss.float().backward()
        grads = [p.grad.float() for p in model.parameters() if p.grad is not None]
        return [t.detach().float() for t in _as_list(out) if isinstance(t, torch.Tensor)] + grads

    def close(self) -> None:
        b = self.torch.backends
        b.cuda.matmul.allow_tf32 = self.saved_flags["matmul_tf32"]
        b.cudnn.allow_tf32 = self.saved_flags["cudnn_tf32"]
        b.cudnn.benchmark = self.saved_flags["cudnn_benchmark"]


class TuneScenario(Scenario):
    name = "tune"
    description = "Your model under every standard speed knob, each against float32 eager"
    params = (Param("batch_size", int, 8, "items per step", cuda_default=64, min_value=1),)
    strategies = KNOBS
    baseline = BASELINE
    item_unit = "items"
    supports_amp = False  # autocast is a knob of its own

    def __init__(self, user: UserModel | None = None,
                 knobs: Sequence[Strategy] | None = None) -> None:
        self.user = user
        if knobs is not None:
            self.strategies = tuple(knobs)

    def skip_reason(self, strategy: Strategy, params: Mapping[str, Any]) -> str | None:
        if strategy.name == "channels_last" and self.user is not None:
            import torch

            batch = _as_list(self.user.inputs(int(params["batch_size"])))
            if not any(isinstance(t, torch.Tensor) and t.dim() == 4 for t in batch):
                return "no 4-D input: channels_last applies to NCHW tensors"
        return None

    def build(self, strategy: Strategy, config: RunConfig) -> Workload:
        if self.user is None:
            raise UsageError("tune: no model (run `profkit tune PATH.py`)")
        return TuneWorkload(self.user, strategy.name, config)


def snippet(knobs: Sequence[str]) -> str:
    """The paste-able code that applies ``knobs``."""
    lines = [SNIPPETS[k] for k in knobs if k in SNIPPETS]
    return "\n".join(lines) if lines else "# float32 eager is already the fastest here"
