"""Scenario ``concurrent``: two (or more) independent models, run one after another,
in Python threads, on CUDA streams or on separate GPUs.

The experiment people run by hand: DenseNet-121 and ResNet-101 from torchvision with
random weights (nothing is downloaded) on N×3×32×32 inputs. Every strategy gets its
own copy of the same initial weights and the same inputs, so their outputs must match.
torch is imported only when a workload is built, so ``profkit list`` stays light.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

from profiler_kit.errors import UsageError
from profiler_kit.scenario import (
    CUDA,
    MULTI_GPU,
    Param,
    RunConfig,
    Scenario,
    Strategy,
    Workload,
)

NUM_CLASSES = 1000
# Gradients through a hundred layers in bfloat16/float16 differ from float32 more than
# the logits do, so an AMP twin's training outputs get a looser bound.
TRAIN_AMP_TOLERANCE = 0.25
# halvings of the gradient scale the float16 check may try (65536 down to 2**-8)
MAX_SCALE_BACKOFFS = 24


def model_names(text: str) -> list[str]:
    return [n.strip() for n in str(text).split(",") if n.strip()]


class Concurrent(Scenario):
    name = "concurrent"
    description = (
        "Independent models (DenseNet-121 and ResNet-101 by default) run sequentially, "
        "in threads, on CUDA streams or one per GPU"
    )
    params = (
        Param("batch_size", int, 2, "images per model per step", cuda_default=200,
              min_value=1),
        Param("image_size", int, 32, "height and width of the N×3×H×W input", min_value=8),
        Param("models", str, "densenet121,resnet101",
              "torchvision classification models, comma-separated (two or more)"),
        Param("train", bool, False,
              "forward + backward + SGD step instead of inference-mode forward"),
    )
    strategies = (
        Strategy("sequential", "one model after the other, in the main thread"),
        Strategy("threads", "one Python thread per model, joined every step"),
        Strategy("streams", "one CUDA stream per model", requires=(CUDA,), opt_in="streams"),
        Strategy("devices", "one model per GPU", requires=(CUDA, MULTI_GPU)),
    )
    baseline = "sequential"
    item_unit = "images"

    def __init__(self) -> None:
        self._templates: dict[tuple[str, int], Any] = {}

    def validate(self, params: Mapping[str, Any]) -> None:
        """Unknown or too few model names are the user's mistake: say so before running."""
        names = model_names(params["models"])
        if len(names) < 2:
            raise UsageError(f"--models needs two or more model names, got {params['models']!r}")
        import torchvision

        known = set(torchvision.models.list_models(module=torchvision.models))
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(
                f"--models: unknown torchvision classification model(s) {', '.join(unknown)} "
                f"(e.g. resnet18, resnet50, densenet121, mobilenet_v3_small)"
            )

    def _template(self, name: str, seed: int) -> Any:
        """The model with its initial weights, built once per run and copied per strategy."""
        key = (name, seed)
        if key not in self._templates:
            import torch
            import torchvision

            torch.manual_seed(seed)
            self._templates[key] = torchvision.models.get_model(
                name, weights=None, num_classes=NUM_CLASSES
            )
        return self._templates[key]

    def build(self, strategy: Strategy, config: RunConfig) -> ConcurrentWorkload:
        self.validate(config.params)
        names = model_names(config.params["models"])
        return ConcurrentWorkload(
            [self._template(n, config.seed + i) for i, n in enumerate(names)],
            strategy, config,
        )


class ConcurrentWorkload(Workload):
    """One strategy's models, inputs and way of running them."""

    def __init__(self, templates: Sequence[Any], strategy: Strategy, config: RunConfig) -> None:
        import torch

        self._torch = torch
        p = config.params
        self.train = bool(p["train"])
        self.strategy = strategy.base_name
        self.amp_dtype = getattr(torch, config.amp_dtype) if config.amp_dtype else None
        main = torch.device(config.device)
        if main.type == "cuda" and main.index is None:
            main = torch.device("cuda", torch.cuda.current_device())
        n = len(templates)
        if self.strategy == "devices":
            count = torch.cuda.device_count()
            self.model_devices = [torch.device("cuda", i % count) for i in range(n)]
        else:
            self.model_devices = [main] * n
        self.devices = sorted(set(self.model_devices), key=str)
        self.device_type = main.type
        self.items_per_step = p["batch_size"] * n

        gen = torch.Generator().manual_seed(config.seed)
        shape = (p["batch_size"], 3, p["image_size"], p["image_size"])
        x = torch.randn(shape, generator=gen)
        y = torch.randint(0, NUM_CLASSES, (p["batch_size"],), generator=gen)
        self.models = [copy.deepcopy(t).to(d) for t, d in zip(templates, self.model_devices,
                                                                strict=True)]
        for m in self.models:
            m.train(self.train)
        self.inputs = [x.to(d) for d in self.model_devices]
        self.targets = [y.to(d) for d in self.model_devices]
        self.optimizers = [torch.optim.SGD(m.parameters(), lr=0.01) for m in self.models]
        use_scaler = self.train and self.amp_dtype == torch.float16 and main.type == "cuda"
        self.scalers = [torch.amp.GradScaler("cuda", enabled=use_scaler) for _ in self.models]
        self.streams = ([torch.cuda.Stream(device=d) for d in self.model_devices]
                        if self.strategy == "streams" else [])
        self.threaded = self.strategy == "threads"  # the profiler must follow every thread
        self.pool = (ThreadPoolExecutor(max_workers=n, thread_name_prefix="profkit-model")
                     if self.strategy == "threads" else None)
        params = sum(sum(t.numel() for t in m.parameters()) for m in self.models)
        self.info = {"models": [type(m).__name__ for m in self.models], "param_count": params}
        self.last: list[Any] = [None] * n
        self.amp_tolerance = TRAIN_AMP_TOLERANCE if self.train else None

    # -- one model's work -------------------------------------------------

    def _autocast(self, device: Any) -> Any:
        if self.amp_dtype is None:
            return contextlib.nullcontext()
        return self._torch.autocast(device_type=device.type, dtype=self.amp_dtype)

    def _work(self, i: int, models: Sequence[Any], optimizers: Sequence[Any] | None) -> Any:
        """Forward (and backward + SGD step when training) of model ``i``; its logits."""
        torch = self._torch
        model, x, device = models[i], self.inputs[i], self.model_devices[i]
        rf = torch.profiler.record_function
        if not self.train:
            with torch.inference_mode(), self._autocast(device), rf("forward"):
                return model(x)
        with self._autocast(device), rf("forward"):
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits, self.targets[i])
        scaler = self.scalers[i]
        with rf("backward"):
            scaler.scale(loss).backward()
        if optimizers is not None:
            with rf("optimizer"):
                scaler.step(optimizers[i])
                scaler.update()
                optimizers[i].zero_grad(set_to_none=True)
        return logits.detach()

    # -- the strategies ---------------------------------------------------

    def _run_all(self, models: Sequence[Any], optimizers: Sequence[Any] | None) -> list[Any]:
        n = len(models)
        work: Callable[[int], Any] = lambda i: self._work(i, models, optimizers)  # noqa: E731
        if self.strategy == "threads":
            assert self.pool is not None
            futures = [self.pool.submit(work, i) for i in range(n)]
            wait(futures)  # join every thread before anything else, then raise the first error
            return [f.result() for f in futures]
        if self.strategy == "streams":
            torch = self._torch
            current = torch.cuda.current_stream(self.model_devices[0])
            out = []
            for i, stream in enumerate(self.streams):
                stream.wait_stream(current)
                with torch.cuda.stream(stream):
                    out.append(work(i))
            for stream in self.streams:
                current.wait_stream(stream)
            return out
        if self.strategy == "devices":
            out = []
            for i, d in enumerate(self.model_devices):
                with self._torch.cuda.device(d):
                    out.append(work(i))
            return out
        return [work(i) for i in range(n)]

    def step(self) -> None:
        self.last = self._run_all(self.models, self.optimizers)

    def outputs(self) -> list[Any]:
        """Logits from the initial weights (and, when training, every gradient), computed
        the strategy's own way on copies, so the timed models stay untouched."""
        if not self.train:
            return [t.detach().float() for t in self._run_all(self.models, None)]
        scales = [s.get_scale() for s in self.scalers]
        for _ in range(MAX_SCALE_BACKOFFS):
            out, overflowed = self._train_outputs()
            if not overflowed:
                break
            # what GradScaler does when a step's gradients overflow: skip it and halve the
            # scale (float16 gradients of random weights overflow at its first, 65536)
            for i in overflowed:
                self.scalers[i].update(self.scalers[i].get_scale() / 2)
        else:
            raise RuntimeError(f"float16 gradients overflow at every scale GradScaler would "
                               f"try ({MAX_SCALE_BACKOFFS} halvings)")
        # the timed steps start from the scale they would have started from
        for scaler, scale in zip(self.scalers, scales, strict=True):
            scaler.update(float(scale))  # a no-op where the scaler is disabled
        return out

    def _train_outputs(self) -> tuple[list[Any], list[int]]:
        """Logits and unscaled gradients of copies of the models; and which models' scaled
        gradients overflowed."""
        torch = self._torch
        models = [copy.deepcopy(m) for m in self.models]
        # Compared in eval mode: batch statistics of a tiny batch are chaotic (BatchNorm
        # over two values at 1×1 is a sign function, so rounding flips outputs), and
        # dropout draws from a global RNG that threads consume in any order.
        for m in models:
            m.eval()
        out = [t.detach().float() for t in self._run_all(models, None)]
        overflowed = []
        for i, (m, scaler) in enumerate(zip(models, self.scalers, strict=True)):
            grads = [p.grad.detach().float().flatten() for p in m.parameters()
                     if p.grad is not None]
            flat = torch.cat(grads) if grads else torch.zeros(0)
            if scaler.is_enabled():
                if not bool(torch.isfinite(flat).all()):
                    overflowed.append(i)
                flat = flat / scaler.get_scale()
            out.append(flat)
        return out, overflowed

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        self.models = []
        self.last = []
