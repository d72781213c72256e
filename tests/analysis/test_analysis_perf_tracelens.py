"""profkit's per-op FLOPs, bytes and FLOP/s against TraceLens's perf model, on real traces.

TraceLens (AMD-AGI/TraceLens, MIT) is not on PyPI, so its formulas are re-implemented
here from its source, each function naming the class it follows in
``TraceLens/PerfModel/perf_model.py`` (read at commit 01a6eebb; op names mapped as in
``TraceLens/PerfModel/torch_op_mapping.py``, 021be668); its rates follow
``TraceLens/TreePerf/tree_perf.py`` ``compute_perf_metrics`` (0137b7ad): an op's FLOPs over the busy
time (the union) of the kernels, memcpy and memset in its subtree. Each op of the H100 and
MI300X traces that TraceLens models is compared with profkit's number for the same recorded
inputs; where the two differ, the difference is the documented one and is computed here
from the shapes, never written down.
"""

from __future__ import annotations

import ast
import gzip
import json
from collections import defaultdict
from math import prod
from pathlib import Path

import pytest

from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.perf.perf_model import op_cost
from profiler_kit.analysis.perf.roofline import measure
from profiler_kit.trace.loader import load
from profiler_kit.trace.table import OpInputs

DATA = Path(__file__).parents[1] / "data"
TRACES = ("h100_bert_small.json.gz", "h100_vit_image_classification.json.gz",
          "mi300_bert_small.json.gz", "mi300_normalization_layers.json.gz",
          "mi300_resnet_act_checkpoint.json.gz")


# ------------------------------------------------------- TraceLens's formulas, re-implemented

def bpe(name: str) -> int | None:
    """``TraceLens/PerfModel/utils.py`` ``name2bpe`` ("Scalar" arguments count 4 bytes)."""
    return {"double": 8, "long int": 8, "float": 4, "scalar": 4, "int": 4, "c10::half": 2,
            "c10::bfloat16": 2, "unsigned char": 1, "signed char": 1,
            "c10::float8_e4m3fn": 1, "c10::float8_e4m3fnuz": 1}.get(name.lower())


def gemm(m: int, n: int, k: int, bias: bool, b: int, batch: int = 1) -> tuple[int, int]:
    """``GEMM.flops_func`` (2mnk, plus m*n for the bias add) and ``GEMM.bytes_func`` (A, B,
    out, and a bias taken as 1 x n), times the batch (``aten_bmm``, ``aten_baddbmm``)."""
    return (batch * (2 * m * n * k + (m * n if bias else 0)),
            batch * (m * k + k * n + m * n + (n if bias else 0)) * b)


def tl_mm(a: dict) -> tuple[int, int]:
    (m, k), (_, n) = a["Input Dims"][:2]  # aten_mm
    return gemm(m, n, k, False, bpe(a["Input type"][0]))


def tl_addmm(a: dict) -> tuple[int, int]:
    (m, k), (_, n) = a["Input Dims"][1:3]  # aten_addmm
    return gemm(m, n, k, True, bpe(a["Input type"][1]))


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text[1:-1].split(","))  # aten_conv.str_to_tuple


def _conv_params(a: dict, at: int) -> tuple:
    """``aten_conv`` / ``aten_conv_bwd.get_param_details``: stride, padding, dilation,
    transposed, output padding from ``Concrete Inputs`` starting at ``at``."""
    c = a["Concrete Inputs"]
    return (_ints(c[at]), _ints(c[at + 1]), _ints(c[at + 2]), c[at + 3] == "True",
            _ints(c[at + 4]))


def conv_out(x, w, stride, pad, dil, transposed, opad) -> tuple[int, ...]:
    """``CONV.get_output_shape``."""
    if transposed:
        sp = [(x[2 + i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (w[2 + i] - 1) + opad[i] + 1
              for i in range(len(x) - 2)]
        return (x[0], w[1], *sp)
    sp = [int((x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) / stride[i] + 1)
          for i in range(len(x) - 2)]
    return (x[0], w[0], *sp)


def conv_flops(x, w, out, bias: bool, transposed: bool) -> int:
    """``CONV.flops_func``: 2 * prod(w[1:]) per output element (input element when
    transposed), plus one per output element for the bias."""
    return 2 * prod(w[1:]) * prod(x if transposed else out) + (prod(out) if bias else 0)


def conv_bytes(x, w, out, bias: bool, b: int) -> int:
    """``CONV.bytes_func``: x, w, the bias (C_out) read and out written, at x's size."""
    return (prod(x) + prod(w) + (out[1] if bias else 0) + prod(out)) * b


def t(s):
    return (s[1], s[0], *s[2:])  # CONV.t


def tl_convolution(a: dict) -> tuple[int, int]:
    """``aten_conv``: its bias flag is ``len(Input Dims) == 3``, which the 9 recorded
    arguments of ``aten::convolution`` never are."""
    dims = a["Input Dims"]
    x, w, bias = tuple(dims[0]), tuple(dims[1]), len(dims) == 3
    stride, pad, dil, tr, opad = _conv_params(a, 3)
    out = conv_out(x, w, stride, pad, dil, tr, opad)
    return conv_flops(x, w, out, bias, tr), conv_bytes(x, w, out, bias, bpe(a["Input type"][0]))


def tl_convolution_backward(a: dict) -> tuple[int, int]:
    """``aten_conv_bwd`` with ``CONV.flops_bwd_func`` / ``bytes_bwd_func``: both gradients
    always (the output mask is not read), each reading grad_out."""
    dims = a["Input Dims"]
    x, w = tuple(dims[1]), tuple(dims[2])
    bias = bool(len(dims) > 3 and dims[3])
    stride, pad, dil, tr, opad = _conv_params(a, 4)
    out = conv_out(x, w, stride, pad, dil, tr, opad)
    weight_grad = (t(out), t(x), t(w)) if tr else (t(x), t(out), t(w))
    flops = conv_flops(out, w, x, False, not tr) + conv_flops(*weight_grad, False, False) \
        + (prod(out) if bias else 0)
    b = bpe(a["Input type"][1])
    nbytes = conv_bytes(out, w, x, False, b) + conv_bytes(out, x, w, False, b) \
        + ((prod(out) + out[1]) if bias else 0)
    return flops, nbytes


def sdpa(a: dict, bhnd: tuple[int, ...], causal: bool) -> tuple[int, int]:
    """``SDPA.flops_func`` (QK^T and PV, halved when causal) and ``SDPA.bytes_func``
    (q, k, v read and out written at ``bytes_per_element=2``, the default
    ``TreePerf`` calls it with); ``extract_sdpa_cfg`` reads [b, h, s, d] at ``bhnd``."""
    q, k, v = (tuple(a["Input Dims"][i][j] for j in bhnd) for i in range(3))
    (b, h, nq, dqk), (_, hkv, nkv, _), dv = q, k, v[3]
    flops = b * h * 2 * nq * nkv * dqk + b * h * 2 * nq * dv * nkv
    if causal:
        flops //= 2
    return flops, (b * nq * h * dqk + b * nkv * hkv * dqk + b * nkv * hkv * dv
                   + b * nq * h * dv) * 2


def tl_sdpa_flash(a: dict) -> tuple[int, int]:
    """``aten__scaled_dot_product_flash_attention``: is_causal is ``Concrete Inputs[4]``."""
    return sdpa(a, (0, 1, 2, 3), a["Concrete Inputs"][4].lower() == "true")


def tl_sdpa_efficient(a: dict) -> tuple[int, int]:
    """``aten__scaled_dot_product_efficient_attention``: is_causal at 6."""
    return sdpa(a, (0, 1, 2, 3), a["Concrete Inputs"][6].lower() == "true")


def norm_flops(n: int, c: float, training: bool) -> int:
    """``Normalization.flops_func``: 3 per channel, 3 per element for the statistics when
    training, 3 per channel for 1/sqrt(var + eps), 2 per element to apply."""
    return int(3 * c + (3 * n if training else 0) + 3 * c + 2 * n)


def norm_backward_flops(n: int, c: float, training: bool, mask0: bool) -> int:
    """``Normalization.flops_func_bwd`` as written (its ``else`` belongs to ``mask[0]``)."""
    e = n / c
    per = (3 if not training else 0) + 4 * e
    if mask0:
        if training:
            per += 5 * e
    else:
        per += 2 * e
    return int(c * per)


def _mask(text: str) -> list[bool]:
    return [bool(x) for x in ast.literal_eval(text)]  # perf_model.parse_list(..., bool)


def tl_batch_norm(a: dict) -> tuple[int, int, int]:
    """``BatchNorm``: channels dim 1; training is ``bool(Concrete Inputs[5])``, true for
    any recorded string. Returns (FLOPs, bytes, activation bytes: x read, y written)."""
    x = a["Input Dims"][0]
    n, b = prod(x), bpe(a["Input type"][0])
    training = bool(a["Concrete Inputs"][5])
    weights = 2 + 1 + 1 + (2 if training else 0)  # Normalization.bytes_func, affine + bias
    return norm_flops(n, x[1], training), 2 * n * b + weights * x[1] * b, 2 * n * b


def tl_batch_norm_backward(a: dict, name: str) -> tuple[int, int, int]:
    """``BatchNormBwd``: ``native_batch_norm_backward`` reads training from ``Concrete
    Inputs[7]`` (true for any string); the cuDNN/MIOpen ops take training false "by
    assertion" and x at 0. ``Normalization.bytes_func_bwd``."""
    native = name == "aten::native_batch_norm_backward"
    x = a["Input Dims"][1 if native else 0]
    n, c, b = prod(x), x[1], bpe(a["Input type"][1 if native else 0])
    training = bool(a["Concrete Inputs"][7]) if native else False
    act = n * b + n * b * (2 if training else 1)
    nbytes = act + (c * b if training else 0) + c * b + (2 * c * b if training else 0)
    return norm_backward_flops(n, c, training, True), nbytes, act


def tl_layer_norm(a: dict) -> tuple[int, int, int]:
    """``LayerNorm``: channels are the normalized positions, training always."""
    x = a["Input Dims"][0]
    n, c, b = prod(x), prod(ast.literal_eval(a["Concrete Inputs"][1])), bpe(a["Input type"][0])
    return norm_flops(n, c, True), 2 * n * b + 6 * c * b, 2 * n * b


def tl_layer_norm_backward(a: dict) -> tuple[int, int, int]:
    """``LayerNormBwd``: mask from ``Concrete Inputs[7]``; affine = mask[1], bias = mask[2]."""
    x = a["Input Dims"][1]
    n, c, b = prod(x), prod(ast.literal_eval(a["Concrete Inputs"][2])), bpe(a["Input type"][1])
    mask = _mask(a["Concrete Inputs"][7])
    act = n * b + n * b * (2 if mask[0] else 1)
    nbytes = act + c * b + (c * b + c * b * (2 if mask[2] else 1) if mask[1] else 0)
    return norm_backward_flops(n, c, True, mask[0]), nbytes, act


def tl_group_norm(a: dict) -> tuple[int, int, int]:
    """``GroupNorm``: channels dim 1, training always."""
    x = a["Input Dims"][0]
    n, b = prod(x), bpe(a["Input type"][0])
    return norm_flops(n, x[1], True), 2 * n * b + 6 * x[1] * b, 2 * n * b


def tl_group_norm_backward(a: dict) -> tuple[int, int, int]:
    """``GroupNormBwd``: channels dim 1 over the groups (``Concrete Inputs[8]``)."""
    x = a["Input Dims"][1]
    n, b = prod(x), bpe(a["Input type"][1])
    c = x[1] / int(a["Concrete Inputs"][8])
    mask = _mask(a["Concrete Inputs"][9])
    act = n * b + n * b * (2 if mask[0] else 1)
    return norm_backward_flops(n, c, True, mask[0]), int(act + 4 * c * b), act


def tl_rms_norm(a: dict) -> tuple[int, int, int]:
    """``RMSNorm.flops``: rows * (2C + 2) + N * (2 with a weight, else 1); its weight flag
    is ``Input Dims[2] is not None``, true for an absent weight ([]) too."""
    x = a["Input Dims"][0]
    n, c, b = prod(x), prod(ast.literal_eval(a["Concrete Inputs"][1])), bpe(a["Input type"][0])
    affine = a["Input Dims"][2] is not None
    flops = n // c * (2 * c + 2) + n * (2 if affine else 1)
    return flops, 2 * n * b + (c * b if affine else 0), 2 * n * b


def tl_rms_norm_backward(a: dict) -> tuple[int, int, int]:
    """``RMSNormBwd.flops_bwd``; weight flag ``Input Dims[4] is not None`` (always)."""
    x = a["Input Dims"][1]
    n, c, b = prod(x), prod(ast.literal_eval(a["Concrete Inputs"][2])), bpe(a["Input type"][1])
    affine = a["Input Dims"][4] is not None
    mask = _mask(a["Concrete Inputs"][5])
    flops = (n if affine else 0) + n + (6 * n if mask[0] else 0)
    if mask[1] and affine:
        flops += n + (n if n // c > 1 else 0)
    return flops, 3 * n * b + (2 * c * b if affine else 0), 3 * n * b


def tl_unary(a: dict) -> tuple[int, int]:
    """``aten_unary_elementwise``: n of input 0; the output at input 1's dtype when input 1
    has dims, else at input 0's."""
    dims, types = a["Input Dims"], a["Input type"]
    n = prod(dims[0])
    out = bpe(types[1]) if len(dims) > 1 and dims[1] else bpe(types[0])
    return n, n * bpe(types[0]) + n * out


def tl_binary(a: dict) -> tuple[int, int] | None:
    """``aten_binary_elementwise``: the broadcast output; input 2 with dims is the output
    (its dtype), else the larger input size when both are tensors (dims not ``()``)."""
    dims, types = a["Input Dims"], a["Input type"]
    s1, s2 = tuple(dims[0]), tuple(dims[1])
    nd = max(len(s1), len(s2))
    p1, p2 = (1,) * (nd - len(s1)) + s1, (1,) * (nd - len(s2)) + s2
    n_out = prod(max(x, y) for x, y in zip(p1, p2, strict=True))
    b1, b2 = bpe(types[0]), bpe(types[1])
    if b1 is None or b2 is None:
        return None
    out = bpe(types[2]) if len(dims) > 2 and dims[2] else max(b1, b2) if s1 and s2 else b1
    return n_out, prod(s1) * b1 + prod(s2) * b2 + n_out * out


def tl_reduce(a: dict) -> tuple[int, int]:
    """``aten_reduce``: one FLOP per input element; bytes input + output. The reduced
    dims are looked up among typed (int, list, bool) argument values; a trace's
    ``Concrete Inputs`` are strings, so none is found and the output is one element."""
    dims, types = a["Input Dims"], a["Input type"]
    n = prod(dims[0])
    typed = [v for v in a["Concrete Inputs"][1:] if isinstance(v, (int, list, bool))]
    assert not typed
    return n, n * bpe(types[0]) + 1 * bpe(types[0])


UNARY = ("aten::copy_", "aten::clamp_min", "aten::clamp_min_", "aten::clamp_max",
         "aten::clamp_max_", "aten::sigmoid", "aten::rsqrt", "aten::silu", "aten::neg",
         "aten::pow")
BINARY = ("aten::div", "aten::div_", "aten::mul", "aten::mul_", "aten::add", "aten::add_",
          "aten::sigmoid_backward", "aten::threshold_backward")
REDUCE = ("aten::sum", "aten::mean", "aten::amax", "aten::amin")
NORMS = {"aten::native_batch_norm": tl_batch_norm, "aten::miopen_batch_norm": tl_batch_norm,
         "aten::cudnn_batch_norm": tl_batch_norm, "aten::native_layer_norm": tl_layer_norm,
         "aten::native_layer_norm_backward": tl_layer_norm_backward,
         "aten::native_group_norm": tl_group_norm,
         "aten::native_group_norm_backward": tl_group_norm_backward,
         "aten::_fused_rms_norm": tl_rms_norm,
         "aten::_fused_rms_norm_backward": tl_rms_norm_backward}


# ------------------------------------------------------- the traces, read here from the JSON

def events(trace: str) -> list[dict]:
    with gzip.open(DATA / trace) as fh:
        return [e for e in json.load(fh)["traceEvents"] if e.get("ph") == "X"]


def profkit_cost(e: dict):
    a = e["args"]
    return op_cost(e["name"], OpInputs(a["Input Dims"], a["Input type"],
                                       a.get("Input Strides", []), a["Concrete Inputs"]))


def ops(trace: str, names) -> list[dict]:
    return [e for e in events(trace) if e.get("cat") == "cpu_op" and e["name"] in names
            and "Input Dims" in e.get("args", {})]


def busy_us(evs: list[dict], names) -> dict[int, float]:
    """``compute_perf_metrics``' busy kernel time of each cpu_op named in ``names`` (by
    index in ``evs``): the union of the kernels, memcpy and memset whose launch lies in
    its subtree (found here as the runtime call with the kernel's correlation id inside
    the op on its thread)."""
    runtime = {e["args"]["correlation"]: e for e in evs
               if e.get("cat") in ("cuda_runtime", "cuda_driver")
               and "correlation" in e.get("args", {})}
    cpu = [(i, e) for i, e in enumerate(evs) if e.get("cat") == "cpu_op" and e["name"] in names]
    spans: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for k in evs:
        if k.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        r = runtime.get(k["args"].get("correlation"))
        if r is None:
            continue
        for i, o in cpu:
            if o["tid"] == r["tid"] and o["ts"] <= r["ts"] < o["ts"] + o["dur"]:
                spans[i].append((k["ts"], k["ts"] + k["dur"]))
    busy = {}
    for i, s in spans.items():
        total, end = 0.0, float("-inf")
        for a, b in sorted(s):
            if b > end:
                total += b - max(a, end)
                end = b
        busy[i] = total
    return busy


# ------------------------------------------------------- FLOPs and bytes, op by op

@pytest.mark.parametrize("trace", TRACES)
def test_gemms_agree_but_for_the_bias_add(trace: str) -> None:
    """mm: FLOPs and bytes equal. addmm: bytes equal (the bias is 1-D: TraceLens's 1 x n);
    TraceLens adds m*n FLOPs for the bias add, which ``torch.utils.flop_counter`` (profkit's
    FLOP reference) does not count."""
    found = ops(trace, ("aten::mm", "aten::addmm"))
    assert found or trace.startswith("mi300_norm")
    for e in found:
        cost = profkit_cost(e)
        if e["name"] == "aten::mm":
            assert (cost.flops, cost.bytes) == tl_mm(e["args"])
        else:
            flops, nbytes = tl_addmm(e["args"])
            (m, _), (_, n) = e["args"]["Input Dims"][1:3]
            assert len(e["args"]["Input Dims"][0]) == 1
            assert cost.bytes == nbytes and cost.flops == flops - m * n


@pytest.mark.parametrize("trace", ["h100_vit_image_classification.json.gz",
                                   "mi300_resnet_act_checkpoint.json.gz"])
def test_convolutions_agree_but_for_the_bias_read(trace: str) -> None:
    """FLOPs equal. Bytes: profkit reads the bias tensor recorded at input 2; TraceLens's
    bias flag (``len(Input Dims) == 3``) is never set for ``aten::convolution``."""
    found = ops(trace, ("aten::convolution",))
    assert found
    for e in found:
        cost = profkit_cost(e)
        flops, nbytes = tl_convolution(e["args"])
        bias = e["args"]["Input Dims"][2]
        assert cost.flops == flops
        assert cost.bytes == nbytes + prod(bias) * bpe(e["args"]["Input type"][0]) * bool(bias)


def test_convolution_backward_agrees_where_both_gradients_are_asked_for() -> None:
    """FLOPs and bytes equal (grad_out read once per gradient kernel) when the mask asks
    for grad input and grad weight; where it does not ask for grad input (the first conv:
    its input needs no gradient), TraceLens still counts it and profkit does not."""
    found = ops("mi300_resnet_act_checkpoint.json.gz", ("aten::convolution_backward",))
    assert found
    skipped_input_grad = 0
    for e in found:
        cost = profkit_cost(e)
        flops, nbytes = tl_convolution_backward(e["args"])
        mask = _mask(e["args"]["Concrete Inputs"][10])
        assert mask[1] and not mask[2]
        if mask[0]:
            assert (cost.flops, cost.bytes) == (flops, nbytes)
        else:
            skipped_input_grad += 1
            a = e["args"]
            go, x, w = (tuple(d) for d in a["Input Dims"][:3])
            b = bpe(a["Input type"][1])
            assert cost.flops == flops - conv_flops(go, w, x, False, True)
            assert cost.bytes == nbytes - conv_bytes(go, w, x, False, b)
    assert skipped_input_grad < len(found)


@pytest.mark.parametrize("trace", ["h100_bert_small.json.gz",
                                   "h100_vit_image_classification.json.gz",
                                   "mi300_bert_small.json.gz"])
def test_attention_agrees(trace: str) -> None:
    """SDPA (TraceLens models the ``_scaled_dot_product_*`` op, profkit too, and counts
    the ``_flash_attention_forward`` inside it: the same numbers)."""
    found = ops(trace, ("aten::_scaled_dot_product_flash_attention",
                        "aten::_scaled_dot_product_efficient_attention"))
    inner = ops(trace, ("aten::_flash_attention_forward", "aten::_efficient_attention_forward"))
    assert found and len(inner) == len(found)
    for e, i in zip(found, inner, strict=True):
        tl = (tl_sdpa_flash if "flash" in e["name"] else tl_sdpa_efficient)(e["args"])
        cost, inner_cost = profkit_cost(e), profkit_cost(i)
        assert (cost.flops, cost.bytes) == tl == (inner_cost.flops, inner_cost.bytes)
        assert not cost.causal


def test_causal_attention_is_halved_as_tracelens_does() -> None:
    """Causal attention on the BERT shapes: half of the full count, for both."""
    e = ops("h100_bert_small.json.gz", ("aten::_scaled_dot_product_flash_attention",))[0]
    args = dict(e["args"], **{"Concrete Inputs": [*e["args"]["Concrete Inputs"]]})
    args["Concrete Inputs"][4] = "True"
    cost = profkit_cost({"name": e["name"], "args": args})
    assert cost.causal and (cost.flops, cost.bytes) == tl_sdpa_flash(args)
    assert cost.flops * 2 == tl_sdpa_flash(e["args"])[0]


def test_norm_flops_agree_and_activation_bytes_too() -> None:
    """Every norm of the MI300X norm and ResNet traces. FLOPs equal, except where TraceLens
    reads a flag the trace does not say: the MIOpen batch-norm backward, which it takes
    for an eval-mode one (4 per element + 3 per channel; profkit: the training backward,
    9 per element, as it counts ``native_batch_norm_backward``), and the RMS norm without
    a weight, which it takes for one with (an ``[]`` is not None). Bytes: the activations
    (x read, y written; backward grad_out and x read, grad_in written) are equal; the
    per-channel terms differ on purpose: profkit reads the parameters at their recorded
    sizes and writes fp32 statistics per row or group, TraceLens counts 2 to 6 vectors of
    C at the input's size (for a layer norm, C is each normalized position)."""
    checked = defaultdict(int)
    for trace in ("mi300_normalization_layers.json.gz", "mi300_resnet_act_checkpoint.json.gz"):
        for e in ops(trace, set(NORMS) | {"aten::native_batch_norm_backward",
                                          "aten::miopen_batch_norm_backward"}):
            name, a = e["name"], e["args"]
            cost = profkit_cost(e)
            if name.endswith("batch_norm_backward"):
                flops, _, act = tl_batch_norm_backward(a, name)
            else:
                flops, _, act = NORMS[name](a)
            x = a["Input Dims"][0 if name in NORMS and not name.endswith("_backward")
                                or name == "aten::miopen_batch_norm_backward" else 1]
            n = prod(x)
            if name == "aten::miopen_batch_norm_backward":
                assert flops == 4 * n + 3 * x[1] and cost.flops == 9 * n
            elif name.startswith("aten::_fused_rms_norm") and not a["Input Dims"][
                    2 if name == "aten::_fused_rms_norm" else 4]:
                assert cost.flops == flops - n  # TraceLens's weight multiply
            else:
                assert cost.flops == flops, (name, a["Input Dims"])
            backward = name.endswith("_backward")
            size = bpe(a["Input type"][0])
            assert cost.bytes - profkit_side_bytes(name, a) == (3 if backward else 2) * n * size
            if name == "aten::miopen_batch_norm_backward":  # eval mode: x not read
                assert act == 2 * n * size
            else:
                assert act == (3 if backward else 2) * n * size
            checked[name] += 1
    assert len(checked) == 10


# profkit's per-channel terms of a norm (perf_model._norm), by hand: (parameter inputs, read
# once forward and read + gradient written backward; fp32 statistics, per row, group or
# channel)
NORM_SIDES = {
    "aten::native_layer_norm": ((2, 3), lambda a, x: 2 * prod(x[:len(x) - len(
        ast.literal_eval(a["Concrete Inputs"][1]))])),
    "aten::native_group_norm": ((1, 2), lambda a, x: 2 * x[0] * int(a["Concrete Inputs"][6])),
    "aten::native_batch_norm": ((1, 2, 3, 4), lambda a, x: 2 * x[1]),
    "aten::miopen_batch_norm": ((1, 2, 3, 4), lambda a, x: 2 * x[1]),
    "aten::_fused_rms_norm": ((2,), lambda a, x: prod(x[:len(x) - len(
        ast.literal_eval(a["Concrete Inputs"][1]))])),
    "aten::native_layer_norm_backward": ((5, 6), lambda a, x: 2 * prod(x[:len(x) - len(
        ast.literal_eval(a["Concrete Inputs"][2]))])),
    "aten::native_group_norm_backward": ((4,), lambda a, x: 2 * x[0]
                                         * int(a["Concrete Inputs"][8])),
    "aten::native_batch_norm_backward": ((2,), lambda a, x: 2 * x[1]),
    "aten::miopen_batch_norm_backward": ((2,), lambda a, x: 2 * x[1]),
    "aten::_fused_rms_norm_backward": ((4,), lambda a, x: prod(x[:len(x) - len(
        ast.literal_eval(a["Concrete Inputs"][2]))])),
}


def profkit_side_bytes(name: str, a: dict) -> int:
    params, stats = NORM_SIDES[name]
    dims, types = a["Input Dims"], a["Input type"]
    x = dims[0 if name in NORMS and not name.endswith("_backward")
             or name == "aten::miopen_batch_norm_backward" else 1]
    read = sum(prod(dims[i]) * bpe(types[i]) for i in params if dims[i])
    return read * (2 if name.endswith("_backward") else 1) + 4 * stats(a, x)


@pytest.mark.parametrize("trace", TRACES)
def test_elementwise_agree_but_for_python_scalars(trace: str) -> None:
    """Unary and binary ops: FLOPs equal but for ``copy_``, which TraceLens counts as one
    FLOP per element and profkit as none (a copy or cast does no arithmetic); bytes equal
    but for a Python scalar operand (``add(x, 1)``), which TraceLens counts as one 4-byte
    element read and profkit does not (it is passed by value, not read from memory)."""
    found = ops(trace, UNARY + BINARY)
    assert found
    for e in found:
        cost = profkit_cost(e)
        a = e["args"]
        tl = tl_unary(a) if e["name"] in UNARY else tl_binary(a)
        if tl is None:
            continue
        scalar = e["name"] in BINARY and a["Input type"][1] == "Scalar"
        assert cost.flops == (0 if e["name"] == "aten::copy_" else tl[0])
        assert cost.bytes == tl[1] - (4 if scalar else 0), (e["name"], a["Input Dims"])


def test_reductions_agree_but_for_the_reduced_dims() -> None:
    """FLOPs equal (one per input element). Bytes: profkit parses the reduced dims from the
    recorded strings and writes that many outputs; TraceLens finds no typed dims and
    writes one."""
    seen = 0
    for trace in ("mi300_normalization_layers.json.gz", "mi300_resnet_act_checkpoint.json.gz"):
        for e in ops(trace, REDUCE):
            cost = profkit_cost(e)
            flops, nbytes = tl_reduce(e["args"])
            a = e["args"]
            text = a["Concrete Inputs"][1] if len(a["Concrete Inputs"]) > 1 else ""
            x, dims = a["Input Dims"][0], ast.literal_eval(text) if text.startswith("[") else []
            out = prod(s for i, s in enumerate(x) if i not in {d % len(x) for d in dims}) \
                if dims else 1  # keepdim keeps them as 1s: the same count
            assert cost.flops == flops
            assert cost.bytes == nbytes + (out - 1) * bpe(a["Input type"][0])
            seen += 1
    assert seen


# ------------------------------------------------------- FLOP/s per op instance

@pytest.mark.parametrize("trace", TRACES)
def test_per_instance_rates_equal_tracelens(trace: str) -> None:
    """Each counted instance's time is the GPU activity under it, as TraceLens's busy kernel
    time (the ops here run one stream, so profkit's sum equals TraceLens's union, to the
    nanosecond profkit keeps); FLOP/s is FLOPs over it. TraceLens's SDPA instances are
    matched to the flash / efficient op inside them, which profkit counts. One difference
    on purpose: the bias ``aten::add_`` inside a convolution is an elementwise op of its
    own to profkit, with its kernel; TraceLens's convolution time includes it. And where an
    op nests in one of the same name (``aten::div`` > ``aten::div``), TraceLens lists both
    with the same kernels (counting their FLOPs twice); profkit counts the inner one."""
    evs = events(trace)
    table = load(DATA / trace)
    tree = build_op_tree(table)
    model, inst = measure(table, tree, attribute_gpu(table, tree))
    mine: dict[str, list[tuple[int, int, int]]] = defaultdict(list)
    for node, ns, flops in zip(inst.node.tolist(), inst.time_ns.tolist(), inst.flops.tolist(),
                               strict=True):
        name = table.names[int(table.name[tree.row[node]])]
        mine[name].append((int(tree.start_ns[node]), ns, flops))
    alias = {"aten::_scaled_dot_product_flash_attention": "aten::_flash_attention_forward",
             "aten::_scaled_dot_product_efficient_attention":
                 "aten::_efficient_attention_forward"}
    modelled = ("aten::mm", "aten::addmm", "aten::convolution", "aten::convolution_backward",
                *alias, *NORMS, "aten::native_batch_norm_backward",
                "aten::miopen_batch_norm_backward", *UNARY, *BINARY, *REDUCE)
    busy = busy_us(evs, (*modelled, "aten::add_"))
    bias_adds = [(e, busy.get(i, 0.0)) for i, e in enumerate(evs)
                 if e.get("cat") == "cpu_op" and e["name"] == "aten::add_"]

    def own(i: int, e: dict) -> float:
        """TraceLens's busy time of op ``i`` less that of the bias add_ inside a conv."""
        if e["name"] != "aten::convolution":
            return busy[i]
        return busy[i] - sum(us for b, us in bias_adds if b["tid"] == e["tid"]
                             and e["ts"] <= b["ts"] < e["ts"] + e["dur"])

    same: dict[tuple, list[dict]] = defaultdict(list)
    for e in evs:
        if e.get("cat") == "cpu_op" and e["name"] in modelled:
            same[e["name"], e["tid"]].append(e)

    def wraps_itself(e: dict) -> bool:
        return any(o is not e and e["ts"] <= o["ts"] < e["ts"] + e["dur"]
                   for o in same[e["name"], e["tid"]])

    compared = 0
    rates: dict[tuple, list[float]] = defaultdict(list)  # TraceLens's per-instance FLOP/s
    for name in modelled:
        theirs = sorted((e["ts"], own(i, e), e) for i, e in enumerate(evs)
                        if e.get("cat") == "cpu_op" and e["name"] == name and busy.get(i)
                        and not wraps_itself(e))
        ours = sorted(mine.get(alias.get(name, name), []))
        assert len(theirs) == len(ours), name
        for (_, us, e), (_, ns, flops) in zip(theirs, ours, strict=True):
            # profkit keeps whole nanoseconds per activity: within a few ns of the union
            assert ns == pytest.approx(us * 1000, rel=1e-3, abs=2)
            assert flops / (ns * 1e-9) == pytest.approx(flops / (us * 1e-6), rel=2e-3)
            a = e["args"]
            rates[name, json.dumps([a["Input Dims"], a["Input type"], a["Concrete Inputs"]])
                  ].append(flops / (us * 1e-6))
            compared += 1
    assert compared
    # per (op, shapes): TraceLens's summary mean of instance rates is profkit's
    # mean_instance_flops_per_s (its flops_per_s is total FLOPs over total time)
    by_key: dict[tuple, list] = defaultdict(list)
    for g in model.groups:
        by_key[g.op, json.dumps([g.input_dims, g.input_types, g.arguments])].append(g)
    checked = 0
    for key, rs in rates.items():
        gs = by_key.get(key, [])
        if len(gs) == 1 and gs[0].count == len(rs) and gs[0].flops:
            g = gs[0]
            assert g.mean_instance_flops_per_s == pytest.approx(sum(rs) / len(rs), rel=2e-3)
            assert g.flops_per_s == pytest.approx(g.flops * g.count / (g.total_ns * 1e-9))
            checked += 1
    assert checked
