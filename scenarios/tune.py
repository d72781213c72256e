"""Scenario ``tune``: the user's own model under the standard speed knobs, one at a time,
then the winners stacked greedily.

Generated from the smallest contract: a function returning a model, a function returning
one batch of inputs for a batch size, and optionally a loss function, which makes the step
a training step (forward, backward, optimizer step). The baseline is checked first
(:func:`check_baseline`: it must run and compute finite values). Every knob is a strategy,
so the runner checks it against the float32 eager baseline and the same run in float64
(outputs, and gradients when training; the float64 rule of
:mod:`profiler_kit.measure.equivalence`) before timing it, times it in rounds with paired
noise verdicts and profiles it once.
Once the single knobs are measured, ``next_strategies`` proposes the greedy stacks
(:mod:`tune_stack`), which the runner checks, times and profiles the same way.
Knobs that need CUDA are strategies that require it: on the CPU they are listed as
skipped with the reason.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
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
from profiler_kit.scenarios import tune_stack
from profiler_kit.scenarios.tune_workload import (
    BASELINE,
    COMPILE_MODES,
    TRAIN_AMP_TOLERANCE,
    TuneWorkload,
    as_list,
    knobs_of,
    threads_knob_count,
)

__all__ = ["BASELINE", "COMPILE_MODES", "KNOBS", "TRAIN_AMP_TOLERANCE", "TuneScenario",
           "TuneWorkload", "UserModel", "check_baseline", "load_user_model", "snippet"]

KNOBS = (
    Strategy(BASELINE, "float32, eager (the baseline)"),
    Strategy("autocast", "torch.autocast: bfloat16 on CPU, float16 on CUDA", amp=True),
    Strategy("autocast_bf16", "torch.autocast with bfloat16 on CUDA (no gradient scaler)",
             amp=True, requires=(CUDA,), options={"amp_dtype": "bfloat16"}),
    Strategy("channels_last", "channels_last memory format for 4-D inputs and weights"),
    Strategy("threads", "torch.set_num_threads: intra-op threads (restored after)"),
    Strategy("compile", "torch.compile(model) with the default mode"),
    Strategy("compile_reduce_overhead", 'torch.compile(model, mode="reduce-overhead")',
             opt_in="full"),
    Strategy("compile_max_autotune", 'torch.compile(model, mode="max-autotune-no-cudagraphs")',
             opt_in="full"),
    Strategy("tf32", "TF32 matmuls and convolutions (restored after)", requires=(CUDA,)),
    Strategy("cudnn_benchmark", "torch.backends.cudnn.benchmark = True (restored after)",
             requires=(CUDA,)),
    Strategy("cuda_graphs", "the step captured in CUDA graphs (torch.cuda.graph)",
             requires=(CUDA,)),
)
SNIPPETS = {
    "autocast": "with torch.autocast(device_type, dtype=torch.bfloat16):  # float16 on CUDA\n"
                "    out = model(x)",
    "autocast_bf16": 'with torch.autocast("cuda", dtype=torch.bfloat16):\n'
                     "    out = model(x)",
    "channels_last": "model = model.to(memory_format=torch.channels_last)\n"
                     "x = x.contiguous(memory_format=torch.channels_last)",
    "threads": "torch.set_num_threads({threads})",
    "compile": "model = torch.compile(model)",
    "compile_reduce_overhead": 'model = torch.compile(model, mode="reduce-overhead")',
    "compile_max_autotune": 'model = torch.compile(model, mode="max-autotune-no-cudagraphs")',
    "tf32": "torch.backends.cuda.matmul.allow_tf32 = True\n"
            "torch.backends.cudnn.allow_tf32 = True",
    "cudnn_benchmark": "torch.backends.cudnn.benchmark = True",
    "cuda_graphs": "graph = torch.cuda.CUDAGraph()  # after 3 warm-up calls on a side stream\n"
                   "with torch.cuda.graph(graph):\n"
                   "    out = model(static_x)\n"
                   "graph.replay()  # each step, after static_x.copy_(x)",
}
# the order a stack's lines are pasted in: settings, then the model's layout, then compile
SNIPPET_ORDER = ("threads", "tf32", "cudnn_benchmark", "channels_last", "compile",
                 "compile_reduce_overhead", "compile_max_autotune", "cuda_graphs",
                 "autocast", "autocast_bf16")


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


class TuneScenario(Scenario):
    name = "tune"
    description = "Your model under every standard speed knob, each against float32 eager"
    params = (Param("batch_size", int, 8, "items per step", cuda_default=64, min_value=1),)
    strategies = KNOBS
    baseline = BASELINE
    item_unit = "items"
    supports_amp = False  # autocast is a knob of its own

    def __init__(self, user: UserModel | None = None,
                 knobs: Sequence[Strategy] | None = None, stack: bool = True) -> None:
        self.user = user
        self.stack = stack  # False: each knob alone only
        if knobs is not None:
            self.strategies = tuple(knobs)

    def skip_reason(self, strategy: Strategy, params: Mapping[str, Any]) -> str | None:
        knobs = knobs_of(strategy.name)
        if "channels_last" in knobs and self.user is not None:
            import torch

            batch = as_list(self.user.inputs(int(params["batch_size"])))
            if not any(isinstance(t, torch.Tensor) and t.dim() == 4 for t in batch):
                return "no 4-D input: channels_last applies to NCHW tensors"
        if "threads" in knobs:
            import torch

            if threads_knob_count() == torch.get_num_threads():
                return "one CPU: no other intra-op thread count to try"
        return None

    def next_strategies(self, done: Sequence[Any], params: Mapping[str, Any]
                        ) -> Sequence[Strategy]:
        """The next greedy stack to measure, if any (see :mod:`tune_stack`)."""
        if not self.stack:
            return []
        _, name, _ = tune_stack.walk(done, self.baseline)
        return [] if name is None else [stacked(name)]

    def build(self, strategy: Strategy, config: RunConfig) -> Workload:
        if self.user is None:
            raise UsageError("tune: no model (run `profkit tune PATH.py`)")
        return TuneWorkload(self.user, strategy.name, config)


def check_baseline(user: UserModel, params: Mapping[str, Any], device: str,
                   seed: int = 0) -> None:
    """The baseline's check, once, before anything is measured: its outputs (and gradients)
    in float32 and in float64. ModelError, one line with the model's own error, when
    float32 eager raises or computes values that are not finite: then no knob can be
    compared with it, and nothing is measured."""
    from profiler_kit.errors import ModelError

    try:
        workload = TuneWorkload(user, BASELINE, RunConfig(params=dict(params), device=device,
                                                          seed=seed))
        try:
            workload.outputs()
        finally:
            workload.close()
    except (UsageError, KeyboardInterrupt):
        raise
    except Exception as exc:  # the user's model: one line, the traceback with --debug
        raise ModelError(baseline_failed(user.origin, one_line(exc))) from exc


def baseline_failed(origin: str, error: str) -> str:
    """The line that says the baseline failed, with the model's error."""
    return f"tune: {origin}: the model fails in float32 eager ({BASELINE}), so no knob " \
           f"can be compared with it: {error}"


def one_line(exc: BaseException) -> str:
    """An exception as ``Type: first line of its message``."""
    text = str(exc).strip().splitlines()
    return (f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__)[:500]


def stacked(name: str) -> Strategy:
    """The strategy applying every knob of ``a+b+...`` (autocast makes it an AMP one)."""
    by_name = {k.name: k for k in KNOBS}
    knobs = [by_name[k] for k in knobs_of(name)]
    options = {k: v for knob in knobs for k, v in knob.options.items()}
    return replace(knobs[0], name=name, help=" + ".join(k.name for k in knobs),
                   amp=any(k.amp for k in knobs), opt_in=None, options=options,
                   requires=tuple(dict.fromkeys(r for k in knobs for r in k.requires)))


def snippet(knobs: Sequence[str]) -> str:
    """The paste-able code that applies ``knobs`` (names, or stacks ``a+b``)."""
    wanted = {k for name in knobs for k in knobs_of(name)}
    lines = [SNIPPETS[k] for k in SNIPPET_ORDER if k in wanted]
    if "threads" in wanted:
        lines = [line.format(threads=threads_knob_count()) if "{threads}" in line else line
                 for line in lines]
    return "\n".join(lines) if lines else "# float32 eager is already the fastest here"
