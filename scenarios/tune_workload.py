"""The user's model and batch under a set of knobs (one knob, or a greedy stack of them).

A strategy's name is its knobs joined by ``+`` (``channels_last+compile``); each knob is
applied as the user would apply it by hand, and process-wide settings (TF32, cuDNN
benchmark, intra-op threads) are restored in ``close``.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Sequence
from typing import Any

from profiler_kit.scenario import RunConfig, Workload

BASELINE = "eager_fp32"
# A training step under the float64 rule (profiler_kit.measure.equivalence): float32
# knobs are held as for inference (their error against float64 at most twice the
# baseline's, plus tol / 10), since gradients the baseline computes inaccurately (through
# batch statistics) raise its own error too; reduced precision may add a relative RMSE of
# 0.5, not 0.08, to outputs and gradients alike: one bfloat16 step through a random-weight
# ResNet-18 at batch 4 moves its gradients by up to ~0.5 (loose, and said so)
TRAIN_AMP_TOLERANCE = 0.5
COMPILE_MODES = {"compile": None, "compile_reduce_overhead": "reduce-overhead",
                 "compile_max_autotune": "max-autotune-no-cudagraphs"}
STACK_SEPARATOR = "+"


def knobs_of(name: str) -> list[str]:
    """The knobs a strategy name applies (none for the baseline)."""
    return [k for k in name.split(STACK_SEPARATOR) if k and k != BASELINE]


def threads_knob_count() -> int:
    """The intra-op thread count the ``threads`` knob tries: every logical CPU when torch
    uses fewer (its default is the physical cores), else half of its default (on a shared
    or small machine fewer threads can beat oversubscribed ones)."""
    import torch

    current, logical = torch.get_num_threads(), os.cpu_count() or 1
    return logical if logical > current else max(1, current // 2)


def as_list(x: Any) -> list[Any]:
    return list(x) if isinstance(x, (list, tuple)) else [x]


class NotFinite(ValueError):
    """The baseline computed NaN or infinite values: nothing to compare a knob with."""


def is_out_of_memory(exc: BaseException) -> bool:
    """torch.OutOfMemoryError, or the CPU allocator's RuntimeError when an allocation fails."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and (
        "can't allocate memory" in text or "DefaultCPUAllocator" in text
        or "out of memory" in text.lower())


class TuneWorkload(Workload):
    """The user's model and batch under ``name``'s knobs; training when there is a loss."""

    def __init__(self, user: Any, name: str, config: RunConfig) -> None:
        import torch

        self.torch = torch
        self.knobs = knobs_of(name)
        self.user = user
        self.saved: dict[str, Any] = {}
        device = torch.device(config.device)
        self.device_type = device.type
        self.batch_size = int(config.params["batch_size"])
        self.seed = config.seed
        torch.manual_seed(config.seed)
        model = user.model().to(device)
        torch.manual_seed(config.seed + 1)
        batch = [t.to(device) if isinstance(t, torch.Tensor) else t
                 for t in as_list(user.inputs(self.batch_size))]
        if "channels_last" in self.knobs:
            model = model.to(memory_format=torch.channels_last)
            batch = [t.contiguous(memory_format=torch.channels_last)
                     if isinstance(t, torch.Tensor) and t.dim() == 4 else t for t in batch]
        self.training = user.loss is not None
        if self.training:
            self.amp_tolerance = TRAIN_AMP_TOLERANCE
        model.train(self.training)
        # outputs() computes from the initial weights, on a copy of this model; a copy taken
        # now, since make_graphed_callables (cuda_graphs when training) rebinds the model's
        # forward to its own parameters, so a later copy's would stay unused
        self.reference_model = copy.deepcopy(model) if "cuda_graphs" in self.knobs else model
        self.initial_state = copy.deepcopy(model.state_dict())
        self.batch = batch
        self.amp_dtype = getattr(torch, config.amp_dtype) if config.amp_dtype else None
        self.scaler = (torch.amp.GradScaler("cuda")
                       if self.training and self.amp_dtype == torch.float16 else None)
        self.optimizer = (torch.optim.SGD(model.parameters(), lr=1e-3)
                          if self.training else None)
        self.devices = [device]
        first = next((t for t in batch if isinstance(t, torch.Tensor)), None)
        self.items_per_step = int(first.shape[0]) if first is not None and first.dim() else 1
        self._apply_settings()
        try:
            self._prepare(name, model, batch)
        except BaseException:  # nothing half-built keeps the process's settings changed
            self.close()
            raise

    def _prepare(self, name: str, model: Any, batch: list[Any]) -> None:
        torch = self.torch
        self.base_info = {"param_count": sum(p.numel() for p in model.parameters()),
                          "training": self.training, "knob": name}
        if "threads" in self.knobs:
            self.base_info["threads"] = torch.get_num_threads()
        self.mode = next((k for k in self.knobs if k in COMPILE_MODES), None)
        self.model = model if self.mode is None else torch.compile(
            model, mode=COMPILE_MODES[self.mode])
        self.graphed = None
        if "cuda_graphs" in self.knobs:
            self.graphed = self._graph(model, batch)
        self.frames_outside_steps = 0
        if self.mode is not None:
            self._first_call()

    # ------------------------------------------------------------ settings

    def _apply_settings(self) -> None:
        """Process-wide knobs, saved first so that ``close`` restores them."""
        torch = self.torch
        b = torch.backends
        self.saved = {"matmul_tf32": b.cuda.matmul.allow_tf32, "cudnn_tf32": b.cudnn.allow_tf32,
                      "cudnn_benchmark": b.cudnn.benchmark, "threads": torch.get_num_threads()}
        if "tf32" in self.knobs:
            b.cuda.matmul.allow_tf32 = b.cudnn.allow_tf32 = True
        if "cudnn_benchmark" in self.knobs:
            b.cudnn.benchmark = True
        if "threads" in self.knobs:
            torch.set_num_threads(threads_knob_count())

    def close(self) -> None:
        b = self.torch.backends
        b.cuda.matmul.allow_tf32 = self.saved["matmul_tf32"]
        b.cudnn.allow_tf32 = self.saved["cudnn_tf32"]
        b.cudnn.benchmark = self.saved["cudnn_benchmark"]
        self.torch.set_num_threads(self.saved["threads"])

    # ------------------------------------------------------------ compilation

    def _first_call(self) -> None:
        """The first call compiles: timed here, apart from the step time the runner measures;
        dynamo's counters are cleared first, so the graph breaks are this knob's."""
        from torch._dynamo.utils import counters

        counters.clear()
        start = time.perf_counter()
        self._call(self.model)
        if self.device_type == "cuda":
            self.torch.cuda.synchronize()
        self.compile_s = round(time.perf_counter() - start, 3)
        self.frames_after_compile = _frames_compiled()
        self.compile_info = {"compile_s": self.compile_s,
                             "graph_breaks": sum(counters["graph_break"].values()),
                             "graphs": int(counters["stats"].get("unique_graphs", 0))}

    @property
    def info(self) -> dict[str, Any]:  # read after measuring: recompilations are the steps'
        if self.mode is None:
            return self.base_info
        recompiles = _frames_compiled() - self.frames_after_compile - self.frames_outside_steps
        return {**self.base_info, **self.compile_info, "recompilations": max(0, recompiles)}

    def _call(self, model: Any) -> None:
        if self.training:
            self._forward_loss(model)
        else:
            with self.torch.inference_mode():  # as step() calls it, so nothing recompiles
                self._forward_loss(model)

    # ------------------------------------------------------------ CUDA graphs

    def _graph(self, model: Any, batch: Sequence[Any]) -> Any:
        """Inference: the forward captured in one CUDA graph, replayed per step (the inputs
        stay in their static buffers). Training: forward and backward graphed by
        ``torch.cuda.make_graphed_callables``; the optimizer step stays eager."""
        torch = self.torch
        tensors = tuple(t for t in batch if isinstance(t, torch.Tensor))
        if self.training:
            return torch.cuda.make_graphed_callables(model, tensors)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.inference_mode():
            for _ in range(3):  # warm up outside the capture, as torch.cuda.graph asks
                self._forward_loss(model)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.inference_mode():
            self.static_out, _ = self._forward_loss(model)
        return graph

    # ------------------------------------------------------------ the step

    def _forward_loss(self, model: Any) -> tuple[Any, Any]:
        torch = self.torch
        with torch.profiler.record_function("forward"), torch.autocast(
                self.device_type, dtype=self.amp_dtype or torch.float32,
                enabled=self.amp_dtype is not None,
                cache_enabled=False if "cuda_graphs" in self.knobs else None):
            out = model(*self.batch)
            loss = self.user.loss(out, self.batch) if self.training else None
        return out, loss

    def step(self) -> None:
        torch = self.torch
        if self.graphed is not None and not self.training:
            self.graphed.replay()
            return
        model = self.graphed if self.graphed is not None else self.model
        if not self.training:
            with torch.inference_mode():
                self._forward_loss(model)
            return
        self.optimizer.zero_grad(set_to_none=True)
        _, loss = self._forward_loss(model)
        with torch.profiler.record_function("backward"):
            (self.scaler.scale(loss) if self.scaler else loss).backward()
        with torch.profiler.record_function("optimizer"):
            if self.scaler:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()

    def outputs(self) -> Sequence[Any]:
        """Outputs (and gradients when training) of a fresh copy under the same knobs. The
        baseline's must be finite (else :class:`NotFinite`) and come with the same computed
        in float64 (an ``equivalence.Outputs``): the reference every knob's error is
        measured against."""
        torch = self.torch
        before = _frames_compiled()
        model = copy.deepcopy(self.reference_model)
        model.load_state_dict(self.initial_state)
        if self.mode is not None:
            run_with = torch.compile(model, mode=COMPILE_MODES[self.mode])
        elif self.graphed is not None:
            run_with = self._graph(model, self.batch)
        else:
            run_with = model
        torch.manual_seed(self.seed + 2)  # dropout draws alike under every knob
        try:
            if not self.training:
                if self.graphed is not None:
                    run_with.replay()
                    out = self.static_out
                else:
                    with torch.inference_mode():
                        out, _ = self._forward_loss(run_with)
                tensors = [t.float() for t in as_list(out) if isinstance(t, torch.Tensor)]
            else:
                out, loss = self._forward_loss(run_with)
                loss.float().backward()
                grads = [p.grad.float() for p in model.parameters() if p.grad is not None]
                tensors = ([t.detach().float() for t in as_list(out)
                            if isinstance(t, torch.Tensor)] + grads)
        finally:
            self.frames_outside_steps += _frames_compiled() - before
        if self.knobs:
            return tensors
        from profiler_kit.measure.equivalence import Outputs

        names = self._output_names(out, model)
        for name, t in zip(names, tensors, strict=False):
            bad = int((~torch.isfinite(t)).sum())
            if bad:
                raise NotFinite(f"{name} is not finite ({bad} of {t.numel()} values are NaN "
                                "or infinite)")
        float64, note = self._float64()
        if float64 is not None and len(float64) == len(tensors):
            self.base_info["float64_error"] = max(
                (_relative_rmse(t, r) for t, r in zip(tensors, float64, strict=True)
                 if t.shape == r.shape), default=0.0)
        else:
            self.base_info["float64"] = note or "no float64 result"
        return Outputs(tensors, float64, note, names)

    def _output_names(self, out: Any, model: Any) -> list[str]:
        """``output`` (``output 0``, ``output 1``... for several), then ``gradient of``
        each parameter that has one."""
        n = sum(isinstance(t, self.torch.Tensor) for t in as_list(out))
        names = ["output"] if n == 1 else [f"output {i}" for i in range(n)]
        if self.training:
            names += [f"gradient of {name}" for name, p in model.named_parameters()
                      if p.grad is not None]
        return names

    def _float64(self) -> tuple[list[Any] | None, str]:
        """The baseline's outputs (and gradients) computed in float64 from the same weights
        and inputs; None, and why, when the model does not run in float64."""
        torch = self.torch
        try:
            model = copy.deepcopy(self.reference_model)
            model.load_state_dict(self.initial_state)
            model = model.to(torch.float64)
            batch = [t.to(torch.float64) if isinstance(t, torch.Tensor) and t.is_floating_point()
                     else t for t in self.batch]
            torch.manual_seed(self.seed + 2)
            if not self.training:
                with torch.inference_mode():
                    out = model(*batch)
                return [t.double() for t in as_list(out) if isinstance(t, torch.Tensor)], ""
            out = model(*batch)
            self.user.loss(out, batch).double().backward()
            grads = [p.grad.double() for p in model.parameters() if p.grad is not None]
            return ([t.detach().double() for t in as_list(out) if isinstance(t, torch.Tensor)]
                    + grads), ""
        except Exception as exc:  # noqa: BLE001 - no float64 kernel, no memory: cosine instead
            text = str(exc).strip().splitlines()
            return None, (f"the model does not run in float64: {type(exc).__name__}: "
                          f"{text[0] if text else ''}"[:300])


def _relative_rmse(t: Any, reference: Any) -> float:
    """RMSE of ``t`` against ``reference`` over the RMS of ``reference`` (1 when it is 0)."""
    ref = reference.detach().double().cpu()
    rms = float(ref.square().mean().sqrt()) if ref.numel() else 0.0
    err = t.detach().double().cpu() - ref
    return (float(err.square().mean().sqrt()) if err.numel() else 0.0) / (rms or 1.0)


def _frames_compiled() -> int:
    """Frames dynamo compiled so far in this process (each recompilation is one more)."""
    from torch._dynamo.utils import counters

    return int(counters["frames"].get("ok", 0))
