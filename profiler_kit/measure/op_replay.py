"""Each hot op of a trace rebuilt from its recorded shapes and timed on this machine, as
recorded and under an alternative: what a what-if replays instead of a datasheet ratio.

The inputs are random tensors of the recorded shapes, dtypes and strides (integer inputs
in [0, 2): valid indices for any table, masks for any mask), the scalar arguments the
trace recorded. The alternatives:

- ``bf16`` / ``fp16``: the op under ``torch.autocast`` in that dtype. Its activations (the
  first tensor input, and every other of the same shape) enter in the low dtype, as they
  would from the op before it under autocast; its other float inputs (weights) enter as
  recorded, so the casts autocast adds to them each forward are timed too. A backward op
  gets every float input in the low dtype (what the autocast forward saved).
- ``channels_last``: 4-D float inputs in channels_last, as after ``model.to(memory_format=
  torch.channels_last)`` and channels_last inputs.
- ``compile``: a chain of elementwise ops (:class:`~.hot_ops.OpChain`), each on the one
  before's result, called one op at a time against ``torch.compile`` of the whole chain
  (one fused kernel); the compile itself is timed apart and not counted.
- ``tf32``: float32 matmuls and convolutions allowed TF32 (both ``allow_tf32`` flags set
  for the call, restored after); as recorded, the flags are PyTorch's defaults. NVIDIA
  GPUs only: elsewhere each op says so, unmeasured.

On a GPU the host's time to issue each call is timed too, apart: autocast's casts cost
host time that a host-bound step pays in full.

Timed by ``torch.utils.benchmark`` (which synchronizes CUDA) in rounds: a block of calls
as recorded and a block under the alternative, taking turns, until the per-round ratios'
interquartile range is under a tenth of their median or the op's time budget is spent;
the ratio is the median of the rounds' (a busy machine slows both sides of a round).
Run in a fresh process (``python -m profiler_kit.measure.op_replay``), never inside a
profiled run.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import torch
import torch.utils.benchmark as benchmark

from profiler_kit.analysis.whatif.hot_ops import TENSOR_TYPES, OpChain, OpGroup
from profiler_kit.sources.measured_ops import MeasuredOp, OpMeasurements

ALTERNATIVES = ("bf16", "fp16", "channels_last", "tf32", "compile")
# fused inference fast paths that nn.TransformerEncoder(Layer) and nn.MultiheadAttention
# take only when autocast is off: under autocast the model runs its separate ops instead,
# which the trace does not show, so timing the fused op in low precision would mislead
AUTOCAST_LEAVES = {"aten::_transformer_encoder_layer_fwd", "aten::_native_multi_head_attention"}
LEFT_UNDER_AUTOCAST = ("under autocast the model leaves this fused fast path for its "
                       "separate ops (nn.TransformerEncoderLayer and nn.MultiheadAttention "
                       "take it only with autocast off), which the trace does not show")
NO_TF32 = "TF32 exists only on NVIDIA GPUs (Ampere and newer); this op ran elsewhere"
LOW = {"bf16": torch.bfloat16, "fp16": torch.float16}
IQR_TARGET = 0.1  # stop once the per-round ratios' IQR is under this share of their median
MAX_RUN_S = 0.5  # per op group, both sides
BLOCK_S = 0.005  # one side's block of calls in a round
MIN_ROUNDS, MAX_ROUNDS = 5, 41
HOST_CALLS = 20  # calls a block of the host's issue time holds (far below the queue)


class Unbuildable(Exception):
    """The op cannot be rebuilt from what the trace recorded."""


def _number(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text else value


def _scalar(kind: str, text: str) -> Any:
    if text == "":
        raise Unbuildable(f"a {kind} argument whose value the trace did not record")
    if kind == "bool":
        return text == "True"
    if kind in ("ScalarList", "GenericList"):
        try:  # Python literals: "[True, True, False]" (a backward's output mask)
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise Unbuildable(f"a {kind} argument {text!r} it cannot read") from None
    if text in ("True", "False"):
        return text == "True"
    try:
        return _number(text)
    except ValueError:
        raise Unbuildable(f"a {kind} argument {text!r} it cannot read") from None


def _tensor(dims: Sequence[int], kind: str, strides: Any, device: torch.device) -> Any:
    dtype = getattr(torch, TENSOR_TYPES[kind])
    shape = [int(d) for d in dims]
    if dtype.is_floating_point:
        make = lambda n: torch.randn(n, dtype=dtype, device=device)  # noqa: E731
    elif dtype == torch.bool:
        make = lambda n: torch.rand(n, device=device) < 0.5  # noqa: E731
    else:
        make = lambda n: torch.randint(0, 2, (n,), dtype=dtype, device=device)  # noqa: E731
    if isinstance(strides, list) and len(strides) == len(shape) and shape and \
            all(isinstance(s, int) for s in strides):
        size = 1 + sum((d - 1) * s for d, s in zip(shape, strides, strict=True) if d > 0)
        return make(max(size, 1)).as_strided(shape, strides)
    return make(max(1, int(torch.tensor(shape).prod())) if shape else 1).reshape(shape)


def build_args(g: OpGroup, device: torch.device) -> list[Any]:
    """The op's positional arguments, rebuilt."""
    args: list[Any] = []
    for i, kind in enumerate(g.types):
        dims = g.dims[i] if i < len(g.dims) else []
        text = g.concrete[i] if i < len(g.concrete) else ""
        strides = g.strides[i] if i < len(g.strides) else []
        if kind in TENSOR_TYPES and isinstance(dims, list):
            args.append(_tensor(dims, kind, strides, device))
        elif kind == "TensorList":
            args.append([_tensor(d, "float", None, device) for d in dims])
        elif kind == "":
            args.append(None)
        else:
            args.append(_scalar(kind, text))
    return args


def _op(name: str) -> Any:
    try:
        return getattr(torch.ops.aten, name.split("::", 1)[1])
    except (AttributeError, RuntimeError):
        raise Unbuildable(f"{name} is not an operator of this torch") from None


def _alternative_args(args: list[Any], alternative: str, name: str) -> list[Any]:
    """The arguments under the alternative. In low precision a forward op's activations
    (the first tensor, and those of its shape) arrive in the low dtype; a backward op
    (``..._backward``, which autocast does not reach) gets every float input in it, as the
    autocast forward saved them."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    first = tensors[0] if tensors else None
    backward = name.endswith("_backward")

    def change(a: Any) -> Any:
        if not isinstance(a, torch.Tensor) or not a.is_floating_point():
            return a
        if alternative in LOW and (backward or (first is not None and a.shape == first.shape)):
            return a.to(LOW[alternative])
        if alternative == "channels_last" and a.dim() == 4:
            return a.contiguous(memory_format=torch.channels_last)
        return a

    return [[change(x) for x in a] if isinstance(a, list) else change(a) for a in args]


def _bind(op: Any, args: list[Any]) -> tuple[Callable[..., Any], list[Any]]:
    """The overload of ``op`` that takes ``args`` as the trace recorded them (every
    argument in order, keyword-only ones too: ``alpha`` of ``aten::add``), as a function
    of those args, and the args it takes: trailing arguments the trace recorded without a
    value (a string: ``approximate`` of ``aten::gelu``) are left to their defaults."""
    first: Exception | None = None
    tries = [args]
    while tries[-1] and tries[-1][-1] is None:
        tries.append(tries[-1][:-1])
    for given in tries:
        try:
            op(*given)
            return op, given
        except (RuntimeError, TypeError) as e:
            first = first or e
        for name in op.overloads():
            overload = getattr(op, name)
            params = overload._schema.arguments
            if len(given) > len(params):
                continue
            keyword = {i: p.name for i, p in enumerate(params[:len(given)]) if p.kwarg_only}

            def call(*a: Any, overload: Any = overload, keyword: dict[int, str] = keyword
                     ) -> Any:
                pos = [x for i, x in enumerate(a) if i not in keyword]
                return overload(*pos, **{keyword[i]: x for i, x in enumerate(a)
                                         if i in keyword})
            try:
                call(*given)
                return call, given
            except (RuntimeError, TypeError):
                continue
    message = str(first).strip().splitlines()[0] if first and str(first).strip() else ""
    raise Unbuildable(f"no overload of it takes the recorded arguments ({message[:200]})")


def _nothing() -> contextlib.AbstractContextManager[None]:
    return contextlib.nullcontext()


def _recorded_under_autocast(args: list[Any]) -> str | None:
    """The low dtype the trace's call ran under autocast in, where its float inputs mix
    float32 with it (a weight beside a cast activation), else None."""
    floats = {a.dtype for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()}
    if torch.float32 not in floats:
        return None
    return next((k for k, v in LOW.items() if v in floats), None)


def _call(op: Callable[..., Any], args: list[Any], alternative: str | None,
          device: torch.device) -> Callable[[], Any]:
    if alternative in LOW:
        dtype = LOW[alternative]

        def run() -> Any:
            with torch.autocast(device.type, dtype=dtype):
                return op(*args)
        return run
    if alternative == "tf32":
        def tf32() -> Any:
            with _tf32_allowed():
                return op(*args)
        return tf32
    return lambda: op(*args)


def _changed(op: Callable[..., Any], args: list[Any], alternative: str, under: str | None,
             device: torch.device) -> Callable[[], Any]:
    """The call under ``alternative``: a layout or math-mode change keeps the autocast the
    trace ran under (TF32 has no say in a low-precision op's math)."""
    if alternative in LOW:
        return _call(op, args, alternative, device)
    return _call(op, args, "tf32" if alternative == "tf32" and not under else under, device)


@contextlib.contextmanager
def _tf32_allowed() -> Any:
    """TF32 for float32 matmuls and cuDNN's convolutions, the flags restored after."""
    matmul = torch.backends.cuda.matmul
    saved = matmul.allow_tf32
    matmul.allow_tf32 = True
    try:
        with torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled,
                                        allow_tf32=True):
            yield
    finally:
        matmul.allow_tf32 = saved


def _paired(recorded: Callable[[], Any], changed: Callable[[], Any],
            max_run_s: float) -> tuple[list[float], list[float]]:
    """Per-call times of both, in blocks that take turns (the order swapped each round),
    so a burst of other work on the machine lands on both sides of a round alike."""
    def block(fn: Callable[[], Any], number: int) -> float:
        return benchmark.Timer(stmt="fn()", globals={"fn": fn}).timeit(number).median * 1e9

    once = max(block(recorded, 1), block(changed, 1), 1.0)
    number = max(1, int(BLOCK_S * 1e9 / once))
    base: list[float] = []
    alt: list[float] = []
    start = time.perf_counter()
    while len(base) < MIN_ROUNDS or (time.perf_counter() - start < max_run_s
                                     and len(base) < MAX_ROUNDS and _spread(base, alt)):
        first, second = (recorded, changed) if len(base) % 2 == 0 else (changed, recorded)
        x, y = block(first, number), block(second, number)
        b, a = (x, y) if first is recorded else (y, x)
        base.append(b)
        alt.append(a)
    return base, alt


def _spread(base: list[float], alt: list[float]) -> bool:
    """Whether the per-round ratios still spread wider than the target."""
    ratios = sorted(a / b for a, b in zip(alt, base, strict=True))
    q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
    return (q3 - q1) > IQR_TARGET * statistics.median(ratios)


def _iqr(values: list[float]) -> float:
    v = sorted(values)
    return v[(3 * len(v)) // 4] - v[len(v) // 4]


def measure_group(g: OpGroup, alternative: str, device: torch.device,
                  max_run_s: float = MAX_RUN_S) -> MeasuredOp:
    """Time one group as recorded and under ``alternative``; the reason where it cannot."""
    base = dict(key=g.key, name=g.name, count=g.count)
    if g.reason:
        return MeasuredOp(**base, reason=g.reason)
    if alternative in LOW and g.name in AUTOCAST_LEAVES:
        return MeasuredOp(**base, reason=LEFT_UNDER_AUTOCAST)
    try:
        op = _op(g.name)
        args = build_args(g, device)
        under = _recorded_under_autocast(args)
        with torch.autocast(device.type, dtype=LOW[under]) if under else _nothing():
            fn, args = _bind(op, args)
        alt_args = _alternative_args(args, alternative, g.name)
        recorded = _call(fn, args, under, device)
        changed = _changed(fn, alt_args, alternative, under, device)
        recorded(), changed()  # the first call of each: kernels chosen, caches filled
        bs, alts = _paired(recorded, changed, max_run_s)
    except Unbuildable as e:
        return MeasuredOp(**base, reason=str(e))
    except Exception as e:  # noqa: BLE001 - the op refused the rebuilt inputs
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return MeasuredOp(**base, reason=f"it refused the rebuilt inputs: {first[:200]}")
    ratio = statistics.median(a / b for a, b in zip(alts, bs, strict=True))
    b = statistics.median(bs)
    host = (_host_ns(recorded), _host_ns(changed)) if device.type == "cuda" else (None, None)
    return MeasuredOp(**base, base_ns=b, alt_ns=b * ratio, base_iqr_ns=_iqr(bs),
                      alt_iqr_ns=_iqr(alts), rounds=len(bs), host_base_ns=host[0],
                      host_alt_ns=host[1])


def _host_ns(fn: Callable[[], Any], calls: int = HOST_CALLS) -> float:
    """On a GPU: the host's time to issue one call (the queue emptied first, and too few
    calls to fill it again), the median of five blocks."""
    times = []
    for _ in range(5):
        torch.cuda.synchronize()
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        times.append((time.perf_counter_ns() - start) / calls)
    torch.cuda.synchronize()
    return statistics.median(times)


def chain_name(chain: OpChain) -> str:
    return " → ".join(m.name for m in chain.members)


def measure_chain(chain: OpChain, device: torch.device,
                  max_run_s: float = MAX_RUN_S) -> MeasuredOp:
    """Time one chain called op by op against ``torch.compile`` of it; the reason where
    it cannot be."""
    base = dict(key=chain.key, name=chain_name(chain), count=chain.count)
    if chain.reason:
        return MeasuredOp(**base, reason=chain.reason)
    try:
        links = []
        for m in chain.members:
            fn, args = _bind(_op(m.name), build_args(m, device))
            links.append((fn, args[1:]))
        first = build_args(chain.members[0], device)[0]

        def run(x: Any) -> Any:
            for fn, rest in links:  # each op on the result of the one before
                x = fn(x, *rest)
            return x

        with torch.no_grad():
            compiled = torch.compile(run, dynamic=False)
            start = time.perf_counter()
            compiled(first)  # compiles: not part of any step
            compile_s = time.perf_counter() - start
            recorded, changed = (lambda: run(first)), (lambda: compiled(first))
            recorded()
            bs, alts = _paired(recorded, changed, max_run_s)
            host = (_host_ns(recorded), _host_ns(changed)) if device.type == "cuda" \
                else (None, None)
    except Unbuildable as e:
        return MeasuredOp(**base, reason=str(e))
    except Exception as e:  # noqa: BLE001 - the chain did not run or did not compile
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return MeasuredOp(**base, reason=f"it did not run or compile: {first_line[:200]}")
    ratio = statistics.median(a / b for a, b in zip(alts, bs, strict=True))
    b = statistics.median(bs)
    return MeasuredOp(**base, base_ns=b, alt_ns=b * ratio, base_iqr_ns=_iqr(bs),
                      alt_iqr_ns=_iqr(alts), rounds=len(bs), host_base_ns=host[0],
                      host_alt_ns=host[1], compile_s=round(compile_s, 3))


def measure_chains(chains: Sequence[OpChain], device: str) -> OpMeasurements:
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise Unbuildable("the trace ran on a GPU: timing its ops needs one here, and torch "
                          "sees none")
    torch.manual_seed(0)
    return OpMeasurements("compile", str(dev), str(torch.__version__),
                          [measure_chain(c, dev) for c in chains])


def measure(groups: Sequence[OpGroup], alternative: str, device: str) -> OpMeasurements:
    if alternative not in ALTERNATIVES or alternative == "compile":
        raise ValueError(f"unknown alternative {alternative!r} for single ops (one of "
                         f"{ALTERNATIVES[:-1]}; compile times chains: measure_chains)")
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise Unbuildable("the trace ran on a GPU: timing its ops needs one here, and torch "
                          "sees none (leave out --measure for the peak-ratio prediction)")
    torch.manual_seed(0)
    if alternative == "tf32" and dev.type != "cuda":
        return OpMeasurements(alternative, str(dev), str(torch.__version__),
                              [MeasuredOp(key=g.key, name=g.name, count=g.count, reason=NO_TF32)
                               for g in groups])
    ops = [measure_group(g, alternative, dev) for g in groups]
    return OpMeasurements(alternative, str(dev), str(torch.__version__), ops)


_REPRO_MAIN = '''

def main():
    torch.manual_seed(0)
    device = torch.device(DEVICE if torch.cuda.is_available() or DEVICE == "cpu" else "cpu")
    if device.type != DEVICE:
        print(f"note: the trace ran on {DEVICE}; this machine has none: timed on the CPU")
    op = getattr(torch.ops.aten, NAME.split("::", 1)[1])
    args = build_args(GROUP, device)
    under = _recorded_under_autocast(args)
    with torch.autocast(device.type, dtype=LOW[under]) if under else _nothing():
        fn, args = _bind(op, args)
    recorded = _call(fn, args, under, device)
    changed = _changed(fn, _alternative_args(args, ALTERNATIVE, NAME), ALTERNATIVE, under,
                       device)
    for label, run in (("as recorded", recorded), (ALTERNATIVE, changed)):
        run()
        m = benchmark.Timer(stmt="run()", globals={"run": run}).adaptive_autorange()
        print(f"{NAME} {label}: {m.median * 1e6:.1f} us per call (IQR {m.iqr * 1e6:.1f} us)")


if __name__ == "__main__":
    main()
'''


def repro_script(g: OpGroup, alternative: str, device: str) -> str:
    """A standalone script (torch alone) that rebuilds ``g``'s inputs as the trace recorded
    them and times the op as recorded and under ``alternative``: for a bug report."""
    import inspect

    parts = [f'"""{g.name}: {g.count} calls in the trace, rebuilt from its recorded inputs '
             f'and timed as recorded and with {alternative} (written by profkit whatif '
             f'--repro)."""',
             "from __future__ import annotations\n\nimport ast\nimport contextlib\n"
             "import types\n\n"
             "import torch\nimport torch.utils.benchmark as "
             "benchmark\nfrom typing import Any, Callable, Sequence",
             f"NAME = {g.name!r}\nALTERNATIVE = {alternative!r}\nDEVICE = {device!r}",
             f"TENSOR_TYPES = {TENSOR_TYPES!r}",
             'LOW = {"bf16": torch.bfloat16, "fp16": torch.float16}',
             f"GROUP = types.SimpleNamespace(dims={g.dims!r}, types={g.types!r},\n"
             f"    strides={g.strides!r}, concrete={g.concrete!r})",
             inspect.getsource(Unbuildable)]
    parts += [inspect.getsource(f) for f in (_number, _scalar, _tensor, build_args, _bind,
                                               _nothing, _recorded_under_autocast,
                                               _alternative_args, _call, _changed,
                                               _tf32_allowed)]
    return "\n\n".join(p.strip("\n") for p in parts) + "\n" + _REPRO_MAIN


def write_repros(groups: Sequence[OpGroup], alternative: str, device: str,
                 folder: str) -> list[str]:
    """One script per group that can be rebuilt, named by rank and op; their paths."""
    import os

    rebuilt = [x for x in groups if not x.reason]
    if rebuilt:
        os.makedirs(folder, exist_ok=True)
    written = []
    for i, g in enumerate(rebuilt):
        path = os.path.join(folder, f"op{i + 1:02d}_{g.name.split('::')[-1]}.py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(repro_script(g, alternative, device))
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m profiler_kit.measure.op_replay GROUPS.json ALTERNATIVE DEVICE OUT.json``:
    the groups as :class:`OpGroup` JSON, the measurements written to OUT."""
    p = argparse.ArgumentParser(prog="python -m profiler_kit.measure.op_replay")
    p.add_argument("groups")
    p.add_argument("alternative", choices=ALTERNATIVES)
    p.add_argument("device")
    p.add_argument("out", help="the measurements' JSON file (with --repro: the folder of "
                                "the scripts, nothing timed)")
    p.add_argument("--repro", action="store_true")
    a = p.parse_args(argv)
    with open(a.groups, "rb") as fh:
        raw = fh.read()
    if a.alternative == "compile":  # chains of ops, not ops
        if a.repro:
            print("profkit: --repro writes one op at a time, not compiled chains",
                  file=sys.stderr)
            return 2
        chains = msgspec.json.decode(raw, type=list[OpChain])

        def timed() -> OpMeasurements:
            return measure_chains(chains, a.device)
    else:
        groups = msgspec.json.decode(raw, type=list[OpGroup])
        if a.repro:
            print("\n".join(write_repros(groups, a.alternative, a.device, a.out)))
            return 0

        def timed() -> OpMeasurements:
            return measure(groups, a.alternative, a.device)
    try:
        result = timed()
    except Unbuildable as e:
        print(f"profkit: {e}", file=sys.stderr)
        return 2
    with open(a.out, "wb") as fh:
        fh.write(msgspec.json.encode(result))
    return 0

if __name__ == "__main__":
    sys.exit(main())
