"""FLOPs and bytes of one op instance, from the shapes, dtypes and scalars ``record_shapes`` writes.

FLOPs follow ``torch.utils.flop_counter`` wherever it has a formula (GEMMs,
convolutions, attention: ``2*m*n*k`` per matrix product, bias and softmax not
counted); the tests check each against ``FlopCounterMode`` on the same shapes. One
exception: causal attention with equal query and key lengths counts half the products
(the masked half is skipped by the kernels; FlashAttention's benchmarks and TraceLens
count it so, the counter counts it full), and says so in ``Cost.causal``. Ops the
counter gives no FLOPs (normalization, softmax, elementwise, reductions) get the
per-element counts written beside their formulas (normalization as TraceLens counts
it); copies, casts and gathers get none.

Bytes are the minimum traffic: every input tensor read once and every output written
once, at its element size (``Input type``). Caches, re-reads, workspaces and
recomputation are not counted, so achieved TB/s is a lower bound of what the kernels
moved. Outputs are not in the trace: their shapes follow from the inputs here.

An op without a model, or whose recorded inputs do not fit its signature, gets
``None``: it is listed as unmodelled, never guessed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from math import prod
from typing import NamedTuple

from profiler_kit.trace.table import OpInputs

GEMM = "gemm"
CONVOLUTION = "convolution"
ATTENTION = "attention"
NORMALIZATION = "normalization"
SOFTMAX = "softmax"
ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
EMBEDDING = "embedding"
COPY = "copy"
FAMILIES = (GEMM, CONVOLUTION, ATTENTION, NORMALIZATION, SOFTMAX, ELEMENTWISE, REDUCTION,
            EMBEDDING, COPY)
MATRIX_FAMILIES = frozenset({GEMM, CONVOLUTION, ATTENTION})  # run on tensor/matrix cores

# "Input type" strings (c10 type names) -> (short dtype name, bytes per element).
DTYPES: dict[str, tuple[str, int]] = {
    "float": ("fp32", 4), "double": ("fp64", 8), "c10::Half": ("fp16", 2),
    "c10::BFloat16": ("bf16", 2), "c10::Float8_e4m3fn": ("fp8", 1),
    "c10::Float8_e5m2": ("fp8", 1), "c10::Float8_e4m3fnuz": ("fp8", 1),
    "c10::Float8_e5m2fnuz": ("fp8", 1), "c10::Float8_e8m0fnu": ("fp8", 1),
    "long int": ("int64", 8), "int": ("int32", 4), "short int": ("int16", 2),
    "signed char": ("int8", 1), "unsigned char": ("uint8", 1), "bool": ("bool", 1),
    "c10::complex<float>": ("complex64", 8), "c10::complex<double>": ("complex128", 16),
    "c10::complex<c10::Half>": ("complex32", 4),
}
# c10::ScalarType codes, as "Concrete Inputs" writes a dtype argument (``_to_copy``'s).
SCALAR_TYPES: dict[int, tuple[str, int]] = {
    0: ("uint8", 1), 1: ("int8", 1), 2: ("int16", 2), 3: ("int32", 4), 4: ("int64", 8),
    5: ("fp16", 2), 6: ("fp32", 4), 7: ("fp64", 8), 11: ("bool", 1), 15: ("bf16", 2),
    23: ("fp8", 1), 24: ("fp8", 1), 25: ("fp8", 1), 26: ("fp8", 1),
}
FLOATING = frozenset({"fp64", "fp32", "fp16", "bf16", "fp8"})
STATS_BYTES = 4  # mean / rstd / saved statistics of the norms are kept in fp32


class Cost(NamedTuple):
    family: str  # gemm, convolution, attention, normalization, ...
    flops: int
    bytes: int
    dtype: str  # the compute dtype: the first floating-point tensor input's
    causal: bool = False  # causal attention counted at half the full products


class Inputs:
    """Typed access to one op's recorded inputs; every accessor returns None when odd."""

    def __init__(self, recorded: OpInputs) -> None:
        self.r = recorded

    def shape(self, i: int) -> list[int] | None:
        """The shape of tensor input ``i`` (None when it is absent or not a tensor)."""
        dims, types = self.r.dims, self.r.types
        if i >= len(dims) or i >= len(types) or types[i] not in DTYPES:
            return None
        d = dims[i]
        if not isinstance(d, list) or not all(type(x) is int and x >= 0 for x in d):
            return None
        return d

    def dtype(self, i: int) -> tuple[str, int] | None:
        types = self.r.types
        return DTYPES.get(types[i]) if i < len(types) and isinstance(types[i], str) else None

    def nbytes(self, i: int) -> int:
        """Bytes of tensor input ``i`` (0 when absent)."""
        s, t = self.shape(i), self.dtype(i)
        return prod(s) * t[1] if s is not None and t is not None else 0

    def tensor_list(self, i: int) -> list[list[int]] | None:
        """The shapes of a TensorList input (``aten::cat``)."""
        dims = self.r.dims
        if i >= len(dims) or not isinstance(dims[i], list):
            return None
        shapes = dims[i]
        if not all(isinstance(s, list) and all(type(x) is int for x in s) for s in shapes):
            return None
        return shapes

    def concrete(self, i: int) -> str | None:
        c = self.r.concrete
        return c[i] if i < len(c) and isinstance(c[i], str) and c[i] != "" else None

    def ints(self, i: int) -> list[int] | None:
        """An int or int list scalar argument (``"[16, 16]"``, ``"1"``)."""
        text = self.concrete(i)
        if text is None:
            return None
        parts = text.strip("[]").split(",") if text.strip("[]").strip() else []
        try:
            return [int(p) for p in parts]
        except ValueError:
            return None

    def integer(self, i: int) -> int | None:
        """A plain int scalar argument (not a list)."""
        text = self.concrete(i)
        try:
            return int(text) if text is not None else None
        except ValueError:
            return None

    def flag(self, i: int) -> bool | None:
        text = self.concrete(i)
        return {"True": True, "False": False, "1": True, "0": False}.get(text) if text else None

    def bools(self, i: int) -> list[bool] | None:
        text = self.concrete(i)
        if text is None:
            return None
        parts = [p.strip() for p in text.strip("[]").split(",") if p.strip()]
        if not all(p in ("True", "False") for p in parts):
            return None
        return [p == "True" for p in parts]

    def compute_dtype(self) -> tuple[str, int] | None:
        """The first floating-point tensor input's dtype, else the first tensor's."""
        first = None
        for i in range(len(self.r.types)):
            t = self.dtype(i)
            if t is None or self.shape(i) is None:
                continue
            if t[0] in FLOATING:
                return t
            first = first or t
        return first


Model = Callable[[Inputs], Cost | None]


def _cost(family: str, flops: int, nbytes: int, a: Inputs, causal: bool = False
          ) -> Cost | None:
    t = a.compute_dtype()
    return Cost(family, int(flops), int(nbytes), t[0], causal) if t else None


def _size(a: Inputs, i: int) -> int:
    t = a.dtype(i)
    return t[1] if t else 0


# ---------------------------------------------------------------- GEMMs

def _mm_shapes(a: Inputs, i: int, j: int) -> tuple[int, int, int] | None:
    x, w = a.shape(i), a.shape(j)
    if x is None or w is None or len(x) != 2 or len(w) != 2 or x[1] != w[0]:
        return None
    return x[0], x[1], w[1]


def mm(a: Inputs) -> Cost | None:
    """``mm(a[m,k], b[k,n])``: 2mnk FLOPs; bytes a + b + out[m,n]."""
    s = _mm_shapes(a, 0, 1)
    if s is None:
        return None
    m, k, n = s
    return _cost(GEMM, 2 * m * n * k, a.nbytes(0) + a.nbytes(1) + m * n * _size(a, 0), a)


def addmm(a: Inputs) -> Cost | None:
    """``addmm(bias, a[m,k], b[k,n])``: 2mnk (the bias add is not counted, as in
    flop_counter); bytes bias + a + b + out[m,n]."""
    s = _mm_shapes(a, 1, 2)
    if s is None:
        return None
    m, k, n = s
    return _cost(GEMM, 2 * m * n * k,
                 a.nbytes(0) + a.nbytes(1) + a.nbytes(2) + m * n * _size(a, 1), a)


def _bmm_shapes(a: Inputs, i: int, j: int) -> tuple[int, int, int, int] | None:
    x, w = a.shape(i), a.shape(j)
    if x is None or w is None or len(x) != 3 or len(w) != 3 or x[0] != w[0] or x[2] != w[1]:
        return None
    return x[0], x[1], x[2], w[2]


def bmm(a: Inputs) -> Cost | None:
    """``bmm(a[b,m,k], b[b,k,n])``: 2bmnk; bytes a + b + out[b,m,n]."""
    s = _bmm_shapes(a, 0, 1)
    if s is None:
        return None
    b, m, k, n = s
    return _cost(GEMM, 2 * b * m * n * k, a.nbytes(0) + a.nbytes(1) + b * m * n * _size(a, 0), a)


def baddbmm(a: Inputs) -> Cost | None:
    """``baddbmm(self, a[b,m,k], b[b,k,n])``: 2bmnk; bytes self + a + b + out."""
    s = _bmm_shapes(a, 1, 2)
    if s is None:
        return None
    b, m, k, n = s
    return _cost(GEMM, 2 * b * m * n * k,
                 a.nbytes(0) + a.nbytes(1) + a.nbytes(2) + b * m * n * _size(a, 1), a)


def _broadcast(*shapes: list[int]) -> list[int] | None:
    """NumPy/PyTorch broadcasting of shapes (None when they do not broadcast)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        sizes = {s[len(s) - ndim + axis] for s in shapes if len(s) - ndim + axis >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            return None
        out.append(sizes.pop() if sizes else 1)
    return out


def matmul(a: Inputs) -> Cost | None:
    """``matmul(x, y)`` for operands of 2 or more dims (1-D operands go to mv/dot, which
    flop_counter does not count: no model): 2 * batch * m * n * k over the broadcast
    batch; bytes x + y + out."""
    x, y = a.shape(0), a.shape(1)
    if x is None or y is None or len(x) < 2 or len(y) < 2 or x[-1] != y[-2]:
        return None
    batch = _broadcast(x[:-2], y[:-2])
    if batch is None:
        return None
    m, k, n = x[-2], x[-1], y[-1]
    out = prod(batch) * m * n
    return _cost(GEMM, 2 * out * k, a.nbytes(0) + a.nbytes(1) + out * _size(a, 0), a)


def linear(a: Inputs) -> Cost | None:
    """``linear(x[..., k], w[n, k], bias)``: 2 * rows * n * k; bytes x + w + bias + out."""
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None or len(x) < 1 or len(w) != 2 or x[-1] != w[1]:
        return None
    rows, n = prod(x[:-1]), w[0]
    return _cost(GEMM, 2 * rows * n * w[1],
                 a.nbytes(0) + a.nbytes(1) + a.nbytes(2) + rows * n * _size(a, 0), a)


def scaled_mm(a: Inputs) -> Cost | None:
    """``_scaled_mm(a[m,k], b[k,n], scale_a, scale_b, bias, scale_result, out_dtype, ...)``
    (fp8): 2mnk; bytes a + b + scales + bias + out at ``out_dtype`` (a's when not given)."""
    s = _mm_shapes(a, 0, 1)
    if s is None:
        return None
    m, k, n = s
    code = a.integer(6)
    out_size = SCALAR_TYPES.get(code, a.dtype(0) or ("", 0))[1] if code is not None \
        else _size(a, 0)
    read = sum(a.nbytes(i) for i in range(6))
    return _cost(GEMM, 2 * m * n * k, read + m * n * out_size, a)


# ---------------------------------------------------------------- convolutions

def _conv_out(x: list[int], w: list[int], stride: list[int], padding: list[int],
              dilation: list[int], transposed: bool, output_padding: list[int],
              groups: int) -> list[int] | None:
    """Output shape of a convolution (PyTorch's formulas for both directions)."""
    nd = len(x) - 2
    if nd < 1 or len(w) != len(x):
        return None

    def per_dim(v: list[int], default: int) -> list[int] | None:
        if not v:
            return [default] * nd
        if len(v) == 1:
            return v * nd
        return v if len(v) == nd else None

    st, pad, dil, opad = (per_dim(stride, 1), per_dim(padding, 0), per_dim(dilation, 1),
                          per_dim(output_padding, 0))
    if st is None or pad is None or dil is None or opad is None:
        return None
    if transposed:
        spatial = [(x[2 + d] - 1) * st[d] - 2 * pad[d] + dil[d] * (w[2 + d] - 1) + opad[d] + 1
                   for d in range(nd)]
        c_out = w[1] * groups
    else:
        spatial = [(x[2 + d] + 2 * pad[d] - dil[d] * (w[2 + d] - 1) - 1) // st[d] + 1
                   for d in range(nd)]
        c_out = w[0]
    if any(s <= 0 for s in spatial):
        return None
    return [x[0], c_out, *spatial]


def _conv_flops(x: list[int], w: list[int], out: list[int], transposed: bool) -> int:
    """flop_counter's conv_flop_count: 2 * N * C_out * C_in/groups * prod(kernel) *
    prod(spatial), the spatial size being the output's (the input's when transposed)."""
    c_out, c_in_per_group, *kernel = w
    spatial = (x if transposed else out)[2:]
    return 2 * x[0] * c_out * c_in_per_group * prod(kernel) * prod(spatial)


def _conv(a: Inputs, stride: int, padding: int, dilation: int, transposed: bool | int,
          output_padding: int | None, groups: int) -> Cost | None:
    x, w = a.shape(0), a.shape(1)
    if x is None or w is None:
        return None
    is_t = transposed if isinstance(transposed, bool) else a.flag(transposed)
    g = a.integer(groups) if groups >= 0 else 1
    dil = a.ints(dilation) if dilation >= 0 else []  # -1: the op has no dilation
    pad = _padding(a, padding, x, w, dil or [])
    st = a.ints(stride)
    opad = a.ints(output_padding) if output_padding is not None else []
    if is_t is None or g is None or pad is None or st is None or dil is None or opad is None:
        return None
    out = _conv_out(x, w, st, pad, dil, is_t, opad, g)
    if out is None:
        return None
    flops = _conv_flops(x, w, out, is_t)
    return _cost(CONVOLUTION, flops, a.nbytes(0) + a.nbytes(1) + a.nbytes(2)
                 + prod(out) * _size(a, 0), a)


def _padding(a: Inputs, i: int, x: list[int], w: list[int], dil: list[int]) -> list[int] | None:
    """Padding as ints; ``"valid"`` is 0 and ``"same"`` keeps the size (stride 1)."""
    text = a.concrete(i)
    if text in ("valid", "'valid'"):
        return [0]
    if text in ("same", "'same'"):
        nd = len(x) - 2
        d = dil if len(dil) == nd else (dil * nd if len(dil) == 1 else [1] * nd)
        return [d[k] * (w[2 + k] - 1) // 2 for k in range(nd)]  # symmetric part
    return a.ints(i)


def convolution(a: Inputs) -> Cost | None:
    """``convolution(x, w, bias, stride, padding, dilation, transposed, output_padding,
    groups)`` (also ``_convolution``, which adds backend flags after these): FLOPs as
    flop_counter (bias not counted); bytes x + w + bias + out."""
    return _conv(a, 3, 4, 5, 6, 7, 8)


def conv_nd(a: Inputs) -> Cost | None:
    """``conv1d/2d/3d(x, w, bias, stride, padding, dilation, groups)``."""
    return _conv(a, 3, 4, 5, False, None, 6)


def conv_transpose_nd(a: Inputs) -> Cost | None:
    """``conv_transpose1d/2d/3d(x, w, bias, stride, padding, output_padding, groups,
    dilation)``."""
    return _conv(a, 3, 4, 7, True, 5, 6)


def cudnn_convolution(a: Inputs) -> Cost | None:
    """``cudnn_convolution(x, w, padding, stride, dilation, groups, benchmark,
    deterministic, allow_tf32)``, the backend op under ``_convolution`` (PyTorch 1.8 on;
    up to 1.7 a bias came third: a 1-D third input). Note padding before stride."""
    if _is_bias(a, 2):
        return biased_convolution(a)
    return _conv(a, 3, 2, 4, False, None, 5)


def biased_convolution(a: Inputs) -> Cost | None:
    """``mkldnn_convolution`` / ``miopen_convolution(x, w, bias, padding, stride,
    dilation, groups, ...)``: the backend ops that keep a bias slot."""
    return _conv(a, 4, 3, 5, False, None, 6)


def backend_convolution_transpose(a: Inputs) -> Cost | None:
    """``cudnn_convolution_transpose(x, w, padding, output_padding, stride, dilation,
    groups, ...)`` (up to 1.7, and ``miopen_convolution_transpose``: a bias third)."""
    if _is_bias(a, 2):
        return _conv(a, 5, 3, 6, True, 4, 7)
    return _conv(a, 4, 2, 5, True, 3, 6)


def thnn_conv2d(a: Inputs) -> Cost | None:
    """``thnn_conv2d`` / ``_slow_conv2d_forward(x, w, kernel_size, bias, stride, padding)``:
    no dilation, no groups."""
    return _conv(a, 4, 5, -1, False, None, -1)


def _is_bias(a: Inputs, i: int) -> bool:
    shape = a.shape(i)
    return shape is not None and len(shape) == 1


def backend_convolution_backward(mask_at: int) -> Model:
    """``cudnn_convolution_backward(x, grad_out, w, padding, stride, dilation, groups,
    benchmark, deterministic, allow_tf32, output_mask)`` (PyTorch up to 1.10; also
    ``miopen_convolution_backward(x, grad_out, w, padding, stride, dilation, groups,
    benchmark, deterministic, output_mask)``): counted as ``convolution_backward`` with the
    same tensors and mask. A trace that recorded no ``output_mask`` (no Concrete Inputs:
    releases before 2.0) is counted with both gradients: the first layer's grad input,
    which autograd skips when the input needs no gradient, is then counted too."""
    def model(a: Inputs) -> Cost | None:
        mask = a.bools(mask_at) or [True, True]
        return convolution_backward(_reordered(a, (1, 0, 2), mask))
    return model


def backend_convolution_backward_input(a: Inputs) -> Cost | None:
    """``cudnn_convolution_backward_input(input_size, grad_out, w, padding, stride,
    dilation, groups, ...)`` (PyTorch up to 1.10): grad_out convolved with w, as
    ``convolution_backward`` counts its grad input; reads both, writes the gradient (its
    size from Concrete Inputs when recorded)."""
    go, w = a.shape(1), a.shape(2)
    if go is None or w is None or len(go) < 3 or len(w) != len(go):
        return None
    size = _size(a, 1)
    out = a.ints(0)
    written = prod(out) * size if out and len(out) == len(go) else 0
    return _cost(CONVOLUTION, _conv_flops(go, w, go, True),
                 a.nbytes(1) + a.nbytes(2) + written, a)


def backend_convolution_backward_weight(a: Inputs) -> Cost | None:
    """``cudnn_convolution_backward_weight(weight_size, grad_out, x, padding, stride,
    dilation, groups, ...)`` (PyTorch up to 1.10): ``convolution_backward``'s grad weight.
    Needs ``weight_size`` from Concrete Inputs (the weight is not an input); without it
    the parent ``cudnn_convolution_backward`` counts the work."""
    w, go, x = a.ints(0), a.shape(1), a.shape(2)
    if not w or go is None or x is None or len(go) < 3 or len(w) != len(go):
        return None
    t = _swap01
    return _cost(CONVOLUTION, _conv_flops(t(x), t(go), t(w), False),
                 a.nbytes(1) + a.nbytes(2) + prod(w) * _size(a, 1), a)


def _swap01(s: list[int]) -> list[int]:
    return [s[1], s[0], *s[2:]]


def _reordered(a: Inputs, tensors: tuple[int, int, int], mask: list[bool]) -> Inputs:
    """An older backend op's inputs as ``convolution_backward(grad_out, x, w, bias_sizes,
    stride, padding, dilation, transposed, output_padding, groups, output_mask)`` takes
    them: the three tensors taken from ``tensors``; only the mask is read past them."""
    r = a.r

    def pick(values: list, i: int, default: object) -> object:
        return values[i] if i < len(values) else default

    dims = [pick(r.dims, i, []) for i in tensors] + [[]] * 8
    types = [pick(r.types, i, "") for i in tensors] + [""] * 8
    concrete = ["", "", "", "", "", "", "", "False", "", "",
                "[" + ", ".join(str(m) for m in mask) + "]"]
    return Inputs(OpInputs(dims, types, [], concrete))


def convolution_backward(a: Inputs) -> Cost | None:
    """``convolution_backward(grad_out, x, w, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask)``: flop_counter's formula, grad
    input as a (transposed) convolution of grad_out with w, grad weight as one of x with
    grad_out, each when asked for in ``output_mask``. Bytes per gradient asked for, each
    its own kernel (as TraceLens counts them): grad input reads grad_out and w, grad
    weight reads grad_out and x, grad bias reads grad_out; each writes its gradient."""
    go, x, w = a.shape(0), a.shape(1), a.shape(2)
    mask = a.bools(10)
    is_t = a.flag(7)
    if go is None or x is None or w is None or mask is None or len(mask) < 2 or is_t is None:
        return None

    t = _swap01
    flops = 0
    size = _size(a, 0)
    nbytes = 0
    if mask[0]:
        flops += _conv_flops(go, w, x, not is_t)
        nbytes += a.nbytes(0) + a.nbytes(2) + prod(x) * size
    if mask[1]:
        if is_t:
            flops += _conv_flops(t(go), t(x), t(w), False)
        else:
            flops += _conv_flops(t(x), t(go), t(w), False)
        nbytes += a.nbytes(0) + a.nbytes(1) + prod(w) * size
    if len(mask) > 2 and mask[2]:
        nbytes += a.nbytes(0) + go[1] * size  # grad bias: one value per output channel
    return _cost(CONVOLUTION, flops, nbytes, a)


# ---------------------------------------------------------------- attention

def _sdpa_flops(q: list[int], k: list[int], v: list[int]) -> int | None:
    """flop_counter's sdpa_flop_count for [b, h, s, d]: Q @ K^T and P @ V (grouped-query
    heads included); softmax and scaling are not counted (causal masks: see _attention)."""
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        return None
    b, h, sq, dq = q
    _, h_kv, sk, _ = k
    dv = v[3]
    if h_kv == 0 or h % h_kv:
        return None
    return 2 * b * h * sq * dq * sk + 2 * b * h * sq * sk * dv


def _sdpa_bwd_flops(q: list[int], k: list[int], v: list[int]) -> int | None:
    """flop_counter's sdpa_backward_flop_count: the scores recomputed, then four products
    for the gradients of V, the scores, Q and K."""
    if len(q) != 4 or len(k) != 4 or len(v) != 4:
        return None
    b, h, sq, dq = q
    sk, dv = k[2], v[3]
    return 2 * b * h * (sq * dq * sk + sq * dv * sk + sk * sq * dv + sq * sk * dq + dq * sq * sk)


def _bshd(s: list[int] | None) -> list[int] | None:
    """[b, s, h, d] (the flash / efficient kernels' layout) as [b, h, s, d]."""
    return [s[0], s[2], s[1], s[3]] if s is not None and len(s) == 4 else None


def _attention(a: Inputs, q: list[int] | None, k: list[int] | None, v: list[int] | None,
               backward: bool, extra_read: int = 0, causal: bool | None = False
               ) -> Cost | None:
    """A causal mask over equal query and key lengths halves the FLOPs (the kernels skip
    the masked blocks); other lengths keep the full count, as TraceLens has none."""
    if q is None or k is None or v is None or causal is None:
        return None
    flops = (_sdpa_bwd_flops if backward else _sdpa_flops)(q, k, v)
    if flops is None:
        return None
    halved = causal and q[2] == k[2]
    if halved:
        flops //= 2  # an even count: every term is 2 * ...
    size = _size(a, 0)
    qkv = a.nbytes(0) + a.nbytes(1) + a.nbytes(2)
    out = q[0] * q[1] * q[2] * v[3] * size
    if backward:  # read grad_out, q, k, v, out; write dq, dk, dv (extra: logsumexp)
        nbytes = out + qkv + out + qkv + extra_read
    else:  # read q, k, v; write out (extra: mask / bias)
        nbytes = qkv + out + extra_read
    return _cost(ATTENTION, flops, nbytes, a, halved)


def _flag_at(at: int) -> Callable[[Inputs], bool | None]:
    """``is_causal`` at position ``at`` (False when not recorded)."""
    return lambda a: a.flag(at) if a.concrete(at) is not None else False


def _mask_type_at(at: int) -> Callable[[Inputs], bool | None]:
    """``custom_mask_type`` of the efficient kernels: 0 none, 1 and 2 causal."""
    return lambda a: (a.integer(at) or 0) != 0


def sdpa(is_causal: Callable[[Inputs], bool | None]) -> Model:
    """``scaled_dot_product_attention(q, k, v, attn_mask, ...)`` and its flash / efficient
    / cuDNN / CPU variants ([b, h, s, d]): FLOPs as flop_counter (causal: half); bytes
    q + k + v + mask + out (the mask is input 3 where the op has one)."""
    return lambda a: _attention(a, a.shape(0), a.shape(1), a.shape(2), False, a.nbytes(3),
                                is_causal(a))


def sdpa_backward(is_causal: Callable[[Inputs], bool | None]) -> Model:
    """``_scaled_dot_product_{flash,efficient,cudnn}_attention_backward(grad_out, q, k, v,
    ...)``: FLOPs as flop_counter (causal: half); bytes grad_out + q + k + v + out read,
    dq + dk + dv written."""
    return lambda a: _attention(_shift(a, 1), a.shape(1), a.shape(2), a.shape(3), True,
                                causal=is_causal(a))


def flash_forward(a: Inputs) -> Cost | None:
    """``_flash_attention_forward(q, k, v, cum_seq_q, cum_seq_k, ...)`` in [b, s, h, d];
    variable-length batches (``cum_seq_q`` given) need the offsets' values: no model."""
    if a.shape(3) is not None:
        return None
    return _attention(a, _bshd(a.shape(0)), _bshd(a.shape(1)), _bshd(a.shape(2)), False,
                      causal=_flag_at(8)(a))


def efficient_forward(a: Inputs) -> Cost | None:
    """``_efficient_attention_forward(q, k, v, bias, cu_seqlens_q, ...)`` in [b, s, h, d].

    flop_counter reads these shapes as [b, h, s, d] (swapping heads and sequence), so its
    count differs wherever the two differ; this model uses the kernel's real layout.
    """
    if a.shape(4) is not None:
        return None
    return _attention(a, _bshd(a.shape(0)), _bshd(a.shape(1)), _bshd(a.shape(2)), False,
                      a.nbytes(3), _mask_type_at(9)(a))


def flash_backward(a: Inputs) -> Cost | None:
    """``_flash_attention_backward(grad_out, q, k, v, out, logsumexp, cum_seq_q, ...)``."""
    if a.shape(6) is not None:
        return None
    return _attention(_shift(a, 1), _bshd(a.shape(1)), _bshd(a.shape(2)), _bshd(a.shape(3)),
                      True, a.nbytes(5), _flag_at(11)(a))


def efficient_backward(a: Inputs) -> Cost | None:
    """``_efficient_attention_backward(grad_out, q, k, v, bias, out, cu_seqlens_q, ...)``."""
    if a.shape(6) is not None:
        return None
    return _attention(_shift(a, 1), _bshd(a.shape(1)), _bshd(a.shape(2)), _bshd(a.shape(3)),
                      True, a.nbytes(4), _mask_type_at(14)(a))


def _shift(a: Inputs, by: int) -> Inputs:
    """The inputs from position ``by`` on (so q is input 0 of a backward)."""
    r = a.r
    return Inputs(OpInputs(r.dims[by:], r.types[by:], r.strides[by:], r.concrete[by:]))


# ---------------------------------------------------------------- normalization, softmax

# FLOPs as TraceLens counts them (TraceLens/PerfModel/perf_model.py, ``Normalization``,
# ``RMSNorm``, ``RMSNormBwd``), with the training flag, gradient mask and weight read from
# the recorded arguments. Forward, per element: 3 for the statistics (training only) and
# 2 to apply them (x * alpha + beta, the affine folded in); per channel (batch and group
# norm: dim 1; layer norm: each normalized position): 3 to fold the parameters and 3 for
# 1 / sqrt(var + eps). Backward, per element: 4 for the dot products, then grad input
# 5 (batch statistics) or 2 (running statistics: dy * invstd * w, plus 3 per channel).
NORM_STATS_FLOPS = 3
NORM_APPLY_FLOPS = 2
NORM_CHANNEL_FLOPS = 6
NORM_BWD_DOT_FLOPS = 4
NORM_BWD_INPUT_FLOPS = 5
NORM_BWD_EVAL_INPUT_FLOPS = 2


def norm_flops(n: int, channels: int, training: bool) -> int:
    return NORM_APPLY_FLOPS * n + (NORM_STATS_FLOPS * n if training else 0) \
        + NORM_CHANNEL_FLOPS * channels


def norm_backward_flops(n: int, channels: int, training: bool, grad_input: bool) -> int:
    flops = NORM_BWD_DOT_FLOPS * n
    if grad_input:
        flops += NORM_BWD_INPUT_FLOPS * n if training else \
            NORM_BWD_EVAL_INPUT_FLOPS * n + 3 * channels
    return flops


def rms_norm_flops(n: int, rows: int, affine: bool) -> int:
    """Per row a sum of squares and rsqrt (2 per element + 2), then the scaling (1 per
    element, 2 with a weight)."""
    return 2 * n + 2 * rows + n * (2 if affine else 1)


def rms_norm_backward_flops(n: int, rows: int, affine: bool, mask: list[bool]) -> int:
    """x_hat (1), the weight (1), grad input (6: dot product and combination), grad
    weight (1, and 1 to accumulate over rows)."""
    flops = n + (n if affine else 0)
    if mask[0]:
        flops += 6 * n
    if len(mask) > 1 and mask[1] and affine:
        flops += n + (n if rows > 1 else 0)
    return flops


def _norm(a: Inputs, x: int, params: tuple[int, ...], stats: int, backward: bool,
          flops: int) -> Cost | None:
    """A norm over input ``x`` with weight/bias inputs ``params`` and ``stats`` fp32
    statistics written (forward) or read (backward). Bytes: x read and y written
    (backward: grad_out and x read, grad_in written), the parameters at their dtypes."""
    shape = a.shape(x)
    if shape is None:
        return None
    n = prod(shape)
    param_bytes = sum(a.nbytes(p) for p in params)
    size = _size(a, x)
    if backward:  # read grad_out and x, params and stats; write grad_in (and param grads)
        return _cost(NORMALIZATION, flops, 3 * n * size + 2 * param_bytes
                     + stats * STATS_BYTES, a)
    return _cost(NORMALIZATION, flops, 2 * n * size + param_bytes + stats * STATS_BYTES, a)


def _rows(shape: list[int], normalized: list[int] | None) -> int | None:
    """Rows of a layer/RMS norm: the elements outside the normalized trailing dims."""
    if normalized is None or len(normalized) > len(shape):
        return None
    return prod(shape[: len(shape) - len(normalized)])


def _grad_input(a: Inputs, at: int) -> bool:
    """Whether the backward's ``output_mask`` at ``at`` asks for grad input (yes if absent)."""
    mask = a.bools(at)
    return mask[0] if mask else True


def layer_norm(a: Inputs) -> Cost | None:
    """``native_layer_norm(x, normalized_shape, w, b, eps)`` (and ``layer_norm``): writes
    mean and rstd per row."""
    shape = a.shape(0)
    rows = _rows(shape, a.ints(1)) if shape is not None else None
    if shape is None or rows is None:
        return None
    n = prod(shape)
    return _norm(a, 0, (2, 3), 2 * rows, False, norm_flops(n, n // max(rows, 1), True))


def layer_norm_backward(a: Inputs) -> Cost | None:
    """``native_layer_norm_backward(grad_out, x, normalized_shape, mean, rstd, w, b, mask)``."""
    shape = a.shape(1)
    rows = _rows(shape, a.ints(2)) if shape is not None else None
    if shape is None or rows is None:
        return None
    n = prod(shape)
    flops = norm_backward_flops(n, n // max(rows, 1), True, _grad_input(a, 7))
    return _norm(_shift(a, 1), 0, (4, 5), 2 * rows, True, flops)


def rms_norm(a: Inputs) -> Cost | None:
    """``_fused_rms_norm(x, normalized_shape, w, eps)`` (and ``rms_norm``): no mean to
    subtract; writes rstd per row."""
    shape = a.shape(0)
    rows = _rows(shape, a.ints(1)) if shape is not None else None
    if shape is None or rows is None:
        return None
    flops = rms_norm_flops(prod(shape), rows, a.shape(2) is not None)
    return _norm(a, 0, (2,), rows, False, flops)


def rms_norm_backward(a: Inputs) -> Cost | None:
    """``_fused_rms_norm_backward(grad_out, x, normalized_shape, rstd, w, mask)``."""
    shape = a.shape(1)
    rows = _rows(shape, a.ints(2)) if shape is not None else None
    if shape is None or rows is None:
        return None
    flops = rms_norm_backward_flops(prod(shape), rows, a.shape(4) is not None,
                                    a.bools(5) or [True, True])
    return _norm(_shift(a, 1), 0, (3,), rows, True, flops)


def _training(a: Inputs, at: int) -> bool:
    """The batch norm ``training`` flag (batch statistics); True when not recorded."""
    flag = a.flag(at)
    return True if flag is None else flag


def batch_norm(a: Inputs) -> Cost | None:
    """``native_batch_norm(x, w, b, running_mean, running_var, training, momentum, eps)``
    (also ``batch_norm``, ``cudnn_batch_norm``, ``miopen_batch_norm``, ``_batch_norm_impl_index``):
    per-channel statistics, two per channel written."""
    shape = a.shape(0)
    if shape is None or len(shape) < 2:
        return None
    flops = norm_flops(prod(shape), shape[1], _training(a, 5))
    return _norm(a, 0, (1, 2, 3, 4), 2 * shape[1], False, flops)


def native_batch_norm_backward(a: Inputs) -> Cost | None:
    """``native_batch_norm_backward(grad_out, x, w, running_mean, running_var, save_mean,
    save_invstd, train, eps, mask)``."""
    shape = a.shape(1)
    if shape is None or len(shape) < 2:
        return None
    flops = norm_backward_flops(prod(shape), shape[1], _training(a, 7), _grad_input(a, 9))
    return _norm(_shift(a, 1), 0, (1,), 2 * shape[1], True, flops)


def cudnn_batch_norm_backward(a: Inputs) -> Cost | None:
    """``cudnn_batch_norm_backward`` / ``miopen_batch_norm_backward(x, grad_out, w, ...)``:
    the backward of a training-mode forward (it reads the saved batch statistics)."""
    shape = a.shape(0)
    if shape is None or len(shape) < 2:
        return None
    flops = norm_backward_flops(prod(shape), shape[1], True, True)
    return _norm(a, 0, (2,), 2 * shape[1], True, flops)


def group_norm(a: Inputs) -> Cost | None:
    """``native_group_norm(x, w, b, N, C, HxW, group, eps)``: two statistics per group."""
    return _group_norm(a, groups_at=6, params=(1, 2))


def group_norm_user(a: Inputs) -> Cost | None:
    """``group_norm(x, num_groups, w, b, eps, cudnn_enabled)``."""
    return _group_norm(a, groups_at=1, params=(2, 3))


def _group_norm(a: Inputs, groups_at: int, params: tuple[int, ...]) -> Cost | None:
    shape, groups = a.shape(0), a.integer(groups_at)
    if shape is None or groups is None or len(shape) < 2:
        return None
    flops = norm_flops(prod(shape), shape[1], True)
    return _norm(a, 0, params, 2 * shape[0] * groups, False, flops)


def group_norm_backward(a: Inputs) -> Cost | None:
    """``native_group_norm_backward(grad_out, x, mean, rstd, w, N, C, HxW, group, mask)``."""
    shape, groups = a.shape(1), a.integer(8)
    if shape is None or groups is None or len(shape) < 2:
        return None
    flops = norm_backward_flops(prod(shape), shape[1], True, _grad_input(a, 9))
    return _norm(_shift(a, 1), 0, (3,), 2 * shape[0] * groups, True, flops)


# Softmax per element: max, subtract, exp, sum, divide (5); backward y * (g - sum(g * y)):
# multiply, sum, subtract, multiply (4).
SOFTMAX_FLOPS = 5
SOFTMAX_BACKWARD_FLOPS = 4


def softmax(a: Inputs) -> Cost | None:
    """``_softmax(x, dim, half_to_float)`` / ``softmax`` / ``_log_softmax``: read x, write y
    (in fp32 when ``half_to_float``)."""
    shape = a.shape(0)
    if shape is None:
        return None
    n = prod(shape)
    out_size = 4 if a.flag(2) else _size(a, 0)
    return _cost(SOFTMAX, SOFTMAX_FLOPS * n, n * _size(a, 0) + n * out_size, a)


def softmax_backward(a: Inputs) -> Cost | None:
    """``_softmax_backward_data(grad_out, out, dim, input_dtype)``: read both, write grad_in."""
    shape = a.shape(0)
    if shape is None:
        return None
    n = prod(shape)
    return _cost(SOFTMAX, SOFTMAX_BACKWARD_FLOPS * n, a.nbytes(0) + a.nbytes(1)
                 + n * _size(a, 0), a)


# ---------------------------------------------------------------- elementwise, reductions

def _tensors(a: Inputs) -> list[int]:
    return [i for i in range(len(a.r.dims)) if a.shape(i) is not None]


def _promoted_size(a: Inputs, idx: list[int]) -> int:
    """Bytes per element of a result by type promotion: the widest floating tensor input
    of one or more dims (0-dim tensors promote like scalars), else the widest such one,
    else the first input's (as TraceLens: the larger of two tensor inputs)."""
    ranked = [a.dtype(i) for i in idx if a.shape(i)]
    floating = [t[1] for t in ranked if t is not None and t[0] in FLOATING]
    sizes = floating or [t[1] for t in ranked if t is not None]
    return max(sizes) if sizes else _size(a, idx[0])


def elementwise(flops_per_element: int, arity: int, out_bool: bool = False,
                in_place: bool = False) -> Model:
    """An elementwise op of ``arity`` operands: the output is their broadcast shape;
    ``flops_per_element`` per output element (1 for arithmetic and activations); bytes
    every tensor operand read, the output written at the promoted dtype (in place: the
    first operand's). A tensor after the operands is an ``out=`` tensor: written only,
    at its own dtype."""

    def model(a: Inputs) -> Cost | None:
        tensors = _tensors(a)
        idx = [i for i in tensors if i < arity]
        if not idx:
            return None
        out = _broadcast(*[a.shape(i) for i in idx])
        if out is None:
            return None
        n = prod(out)
        given = [i for i in tensors if i >= arity]
        out_size = 1 if out_bool else _size(a, given[0]) if given else \
            _size(a, idx[0]) if in_place else _promoted_size(a, idx)
        read = sum(a.nbytes(i) for i in idx)
        return _cost(ELEMENTWISE, flops_per_element * n, read + n * out_size, a)

    return model


def dropout(a: Inputs) -> Cost | None:
    """``native_dropout(x, p, train)``: a multiply per element; writes out and a bool mask."""
    shape = a.shape(0)
    if shape is None:
        return None
    n = prod(shape)
    return _cost(ELEMENTWISE, n, 2 * n * _size(a, 0) + n, a)


def reduction(flops_per_element: int, dims_at: int | None, keepdim_at: int | None) -> Model:
    """A reduction over the dims given at ``dims_at`` (all when absent or empty):
    ``flops_per_element`` per input element; bytes input read, output written."""

    def model(a: Inputs) -> Cost | None:
        shape = a.shape(0)
        if shape is None:
            return None
        dims = a.ints(dims_at) if dims_at is not None else None
        if dims:
            nd = max(len(shape), 1)
            reduced = {d % nd for d in dims}
            out = prod(s for i, s in enumerate(shape) if i not in reduced)
        else:
            out = 1
        n = prod(shape)
        return _cost(REDUCTION, flops_per_element * n, n * _size(a, 0) + out * _size(a, 0), a)

    return model


def mse_loss(a: Inputs) -> Cost | None:
    """``mse_loss(x, y, reduction)``: subtract, square, sum (3 per element); reads both."""
    shape = a.shape(0)
    if shape is None:
        return None
    n = prod(shape)
    return _cost(REDUCTION, 3 * n, a.nbytes(0) + a.nbytes(1) + _size(a, 0), a)


# ---------------------------------------------------------------- embedding, copies

def embedding(a: Inputs) -> Cost | None:
    """``embedding(weight[V, D], indices)``: a gather, no FLOPs; bytes indices read, one
    weight row read and one output row written per index."""
    w, idx = a.shape(0), a.shape(1)
    if w is None or idx is None or len(w) != 2:
        return None
    rows = prod(idx)
    return _cost(EMBEDDING, 0, a.nbytes(1) + 2 * rows * w[1] * _size(a, 0), a)


def index_select(a: Inputs) -> Cost | None:
    """``index_select(x, dim, index)``: a gather; bytes index read, the selected slices
    read and written."""
    x, idx, dim = a.shape(0), a.shape(2), a.integer(1)
    if x is None or idx is None or dim is None or not x:
        return None
    d = dim % len(x)
    out = prod(x) // x[d] * prod(idx) if x[d] else 0
    return _cost(EMBEDDING, 0, a.nbytes(2) + 2 * out * _size(a, 0), a)


def embedding_backward(a: Inputs) -> Cost | None:
    """``embedding_dense_backward(grad_out, indices, num_weights, padding_idx, scale)``:
    one add per gradient element; bytes grad_out and indices read, the weight gradient
    ([num_weights, D]) written."""
    g, num = a.shape(0), a.integer(2)
    if g is None or num is None or not g:
        return None
    return _cost(EMBEDDING, prod(g), a.nbytes(0) + a.nbytes(1) + num * g[-1] * _size(a, 0), a)


def copy_(a: Inputs) -> Cost | None:
    """``copy_(dst, src)``: no FLOPs; bytes src read at its dtype, dst written at its dtype
    (a cast when they differ)."""
    dst, src = a.shape(0), a.shape(1)
    if dst is None or src is None:
        return None
    n = prod(dst)
    return _cost(COPY, 0, n * _size(a, 1) + n * _size(a, 0), a)


def to_copy(a: Inputs) -> Cost | None:
    """``_to_copy(x, dtype, ...)``: read x, write it at ``dtype`` (x's when not given)."""
    x = a.shape(0)
    if x is None:
        return None
    n = prod(x)
    code = a.integer(1)
    out = SCALAR_TYPES[code][1] if code in SCALAR_TYPES else _size(a, 0)
    return _cost(COPY, 0, n * _size(a, 0) + n * out, a)


def clone(a: Inputs) -> Cost | None:
    """``clone`` / ``contiguous``: read and write every element."""
    x = a.shape(0)
    return _cost(COPY, 0, 2 * a.nbytes(0), a) if x is not None else None


def cat(a: Inputs) -> Cost | None:
    """``cat(tensors, dim)``: every input read, the output (their sum) written."""
    shapes = a.tensor_list(0)
    types = a.r.types
    if not shapes:
        return None
    # a TensorList has no per-tensor dtype in the trace: take the op's own, else 2 bytes
    n = sum(prod(s) for s in shapes)
    size = next((DTYPES[t][1] for t in types if t in DTYPES), None)
    if size is None:
        return None
    return Cost(COPY, 0, 2 * n * size, next(DTYPES[t][0] for t in types if t in DTYPES))


def fill(a: Inputs) -> Cost | None:
    """``fill_`` / ``zero_``: every element written."""
    return _cost(COPY, 0, a.nbytes(0), a) if a.shape(0) is not None else None


# ---------------------------------------------------------------- the table

_BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "remainder", "fmod",
           "atan2", "hypot", "bitwise_and", "bitwise_or", "logical_and", "logical_or")
_UNARY = ("relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "neg", "sqrt", "rsqrt",
          "abs", "sign", "reciprocal", "sin", "cos", "erf", "hardtanh", "leaky_relu", "elu",
          "mish", "hardswish", "hardsigmoid", "clamp", "clamp_min", "clamp_max", "softplus",
          "log1p", "expm1", "floor", "ceil", "round", "trunc", "square", "threshold")
_BACKWARD = ("gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
             "threshold_backward", "hardtanh_backward", "leaky_relu_backward",
             "elu_backward", "mish_backward", "hardswish_backward", "softplus_backward")
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "logical_not")
_TERNARY = ("where", "addcmul", "addcdiv", "lerp", "masked_fill")

MODELS: dict[str, Model] = {
    "aten::mm": mm, "aten::addmm": addmm, "aten::bmm": bmm, "aten::baddbmm": baddbmm,
    "aten::matmul": matmul, "aten::linear": linear, "aten::_scaled_mm": scaled_mm,
    "aten::convolution": convolution, "aten::conv1d": conv_nd, "aten::conv2d": conv_nd,
    "aten::conv3d": conv_nd, "aten::conv_transpose1d": conv_transpose_nd,
    "aten::conv_transpose2d": conv_transpose_nd, "aten::conv_transpose3d": conv_transpose_nd,
    "aten::convolution_backward": convolution_backward,
    # backend ops of today and of older releases (cuDNN, MIOpen, oneDNN, the slow path)
    "aten::cudnn_convolution": cudnn_convolution,
    "aten::miopen_convolution": biased_convolution,
    "aten::mkldnn_convolution": biased_convolution,
    "aten::cudnn_convolution_transpose": backend_convolution_transpose,
    "aten::miopen_convolution_transpose": backend_convolution_transpose,
    "aten::thnn_conv2d": thnn_conv2d, "aten::_slow_conv2d_forward": thnn_conv2d,
    "aten::thnn_conv2d_forward": thnn_conv2d,
    "aten::cudnn_convolution_backward": backend_convolution_backward(10),
    "aten::miopen_convolution_backward": backend_convolution_backward(9),
    "aten::cudnn_convolution_backward_input": backend_convolution_backward_input,
    "aten::miopen_convolution_backward_input": backend_convolution_backward_input,
    "aten::cudnn_convolution_backward_weight": backend_convolution_backward_weight,
    "aten::miopen_convolution_backward_weight": backend_convolution_backward_weight,
    "aten::scaled_dot_product_attention": sdpa(_flag_at(5)),
    "aten::_scaled_dot_product_flash_attention": sdpa(_flag_at(4)),
    "aten::_scaled_dot_product_efficient_attention": sdpa(_flag_at(6)),
    "aten::_scaled_dot_product_cudnn_attention": sdpa(_flag_at(6)),
    "aten::_scaled_dot_product_flash_attention_for_cpu": sdpa(_flag_at(4)),
    "aten::_scaled_dot_product_flash_attention_backward": sdpa_backward(_flag_at(11)),
    "aten::_scaled_dot_product_efficient_attention_backward": sdpa_backward(_flag_at(11)),
    "aten::_scaled_dot_product_cudnn_attention_backward": sdpa_backward(_flag_at(14)),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": sdpa_backward(_flag_at(7)),
    "aten::_flash_attention_forward": flash_forward,
    "aten::_flash_attention_backward": flash_backward,
    "aten::_efficient_attention_forward": efficient_forward,
    "aten::_efficient_attention_backward": efficient_backward,
    "aten::layer_norm": layer_norm, "aten::native_layer_norm": layer_norm,
    "aten::native_layer_norm_backward": layer_norm_backward,
    "aten::rms_norm": rms_norm, "aten::_fused_rms_norm": rms_norm,
    "aten::_fused_rms_norm_backward": rms_norm_backward,
    "aten::batch_norm": batch_norm, "aten::_batch_norm_impl_index": batch_norm,
    "aten::native_batch_norm": batch_norm, "aten::cudnn_batch_norm": batch_norm,
    "aten::miopen_batch_norm": batch_norm, "aten::_native_batch_norm_legit": batch_norm,
    "aten::native_batch_norm_backward": native_batch_norm_backward,
    "aten::cudnn_batch_norm_backward": cudnn_batch_norm_backward,
    "aten::miopen_batch_norm_backward": cudnn_batch_norm_backward,
    "aten::group_norm": group_norm_user, "aten::native_group_norm": group_norm,
    "aten::native_group_norm_backward": group_norm_backward,
    "aten::softmax": softmax, "aten::_softmax": softmax, "aten::_log_softmax": softmax,
    "aten::_softmax_backward_data": softmax_backward,
    "aten::_log_softmax_backward_data": softmax_backward,
    "aten::native_dropout": dropout,
    "aten::sum": reduction(1, 1, 2), "aten::mean": reduction(1, 1, 2),
    "aten::amax": reduction(1, 1, 2), "aten::amin": reduction(1, 1, 2),
    "aten::prod": reduction(1, None, None), "aten::all": reduction(1, None, None),
    "aten::any": reduction(1, None, None), "aten::mse_loss": mse_loss,
    "aten::embedding": embedding, "aten::index_select": index_select,
    "aten::embedding_dense_backward": embedding_backward,
    "aten::copy_": copy_, "aten::_to_copy": to_copy, "aten::clone": clone,
    "aten::contiguous": clone, "aten::cat": cat, "aten::fill_": fill, "aten::zero_": fill,
}
# backend ops that count only where no modelled op of their family above them does (an
# old release's trace without the arguments its public op needs)
BACKEND_MODELS = frozenset(n for n in MODELS if n.startswith(
    ("aten::cudnn_convolution", "aten::miopen_convolution", "aten::mkldnn_convolution",
     "aten::thnn_conv2d", "aten::_slow_conv2d")))
for _names, _arity in ((_UNARY, 1), (_BINARY, 2), (_BACKWARD, 2), (_TERNARY, 3)):
    for _name in _names:
        MODELS[f"aten::{_name}"] = elementwise(1, _arity)
        MODELS[f"aten::{_name}_"] = elementwise(1, _arity, in_place=True)
for _name in _COMPARE:
    MODELS[f"aten::{_name}"] = elementwise(1, 2, out_bool=True)

_GEMM_OPERANDS = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1),
                  "aten::baddbmm": (1, 2), "aten::matmul": (0, 1), "aten::_scaled_mm": (0, 1)}


def gemm_mnk(name: str, recorded: OpInputs) -> tuple[int, int, int] | None:
    """(m, n, k) of a GEMM instance: the sizes whose alignment decides tensor-core tiling."""
    a = Inputs(recorded)
    if name == "aten::linear":
        x, w = a.shape(0), a.shape(1)
        return (prod(x[:-1]), w[0], w[1]) if x and w and len(w) == 2 else None
    operands = _GEMM_OPERANDS.get(name)
    if operands is None:
        return None
    x, w = a.shape(operands[0]), a.shape(operands[1])
    if x is None or w is None or len(x) < 2 or len(w) < 2:
        return None
    return x[-2], w[-1], x[-1]


# Forward convolutions that are never transposed, (input, weight) at 0 and 1: where a
# bias may be (when that input is 1-D).
PLAIN_FORWARD_CONVOLUTIONS = {
    "aten::conv1d": 2, "aten::conv2d": 2, "aten::conv3d": 2, "aten::cudnn_convolution": 2,
    "aten::miopen_convolution": 2, "aten::mkldnn_convolution": 2, "aten::thnn_conv2d": 3,
    "aten::_slow_conv2d_forward": 3}
# Backward convolutions with (x, grad_out, w) recorded as tensors: their positions.
BACKWARD_CONVOLUTION_TENSORS = {"aten::convolution_backward": (1, 0, 2),
                     "aten::cudnn_convolution_backward": (0, 1, 2),
                     "aten::miopen_convolution_backward": (0, 1, 2)}


def convolution_outputs(ops: Iterable[tuple[str, OpInputs]]
                        ) -> dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]]:
    """Output shapes of forward convolutions as their backward ops record them: (input
    shape, weight shape) -> grad_out's shape, kept only where every backward op of that
    input and weight agrees on it.

    Traces before PyTorch 2.0 record no Concrete Inputs, so a forward convolution's
    stride and padding are unknown, but the backward op of the same convolution records
    grad_out, whose shape is the forward's output."""
    seen: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int] | None] = {}
    for name, recorded in ops:
        at = BACKWARD_CONVOLUTION_TENSORS.get(name)
        if at is None:
            continue
        a = Inputs(recorded)
        x, go, w = a.shape(at[0]), a.shape(at[1]), a.shape(at[2])
        if x is None or go is None or w is None or not (len(x) == len(go) == len(w) >= 3):
            continue
        if go[0] != x[0] or go[1] != w[0]:
            continue  # transposed: not the output of a plain convolution of x by w
        key = (tuple(x), tuple(w))
        if seen.setdefault(key, go) != go:
            seen[key] = None  # two convolutions of these shapes differ: nothing to infer
    return {k: v for k, v in seen.items() if v is not None}


def convolution_with_output(name: str, recorded: OpInputs,
                            outputs: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]]
                            ) -> Cost | None:
    """A forward convolution whose stride or padding was not recorded, counted with the
    output shape its backward op recorded (see :func:`convolution_outputs`)."""
    bias_at = PLAIN_FORWARD_CONVOLUTIONS.get(name)
    if bias_at is None:
        return None
    a = Inputs(recorded)
    x, w = a.shape(0), a.shape(1)
    out = outputs.get((tuple(x), tuple(w))) if x is not None and w is not None else None
    if out is None:
        return None
    bias = a.nbytes(bias_at) if _is_bias(a, bias_at) else 0
    return _cost(CONVOLUTION, _conv_flops(x, w, out, False),
                 a.nbytes(0) + a.nbytes(1) + bias + prod(out) * _size(a, 0), a)


def op_cost(name: str, recorded: OpInputs | None) -> Cost | None:
    """FLOPs and bytes of one instance of op ``name``; None without a model or shapes."""
    model = MODELS.get(name)
    if model is None or recorded is None:
        return None
    try:
        return model(Inputs(recorded))
    except (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, AttributeError):
        return None  # recorded inputs that do not fit the op's signature
