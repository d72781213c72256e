"""FLOP formulas against ``torch.utils.flop_counter.FlopCounterMode``; bytes by hand.

Each case runs one op on the meta device (shapes only: CUDA-only attention kernels
run there too) under the profiler with ``record_shapes=True`` and under the FLOP
counter at once; the model reads the inputs the profiler recorded, through the same
loader ``profkit analyze`` uses, and must give the counter's FLOPs exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from profiler_kit.analysis.perf.perf_model import Inputs, op_cost  # noqa: E402
from profiler_kit.trace.loader import load  # noqa: E402
from profiler_kit.trace.table import OpInputs  # noqa: E402

M = "meta"


def t(*shape: int, dtype=torch.float32, requires_grad: bool = False):
    return torch.randn(*shape, device=M, dtype=dtype, requires_grad=requires_grad)


def recorded(fn: Callable[[], object], tmp: Path) -> tuple[list[tuple[str, OpInputs]], dict]:
    """The (op name, recorded inputs) of every op ``fn`` ran, and the counter's FLOPs by op."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with FlopCounterMode(display=False) as counter:
            fn()
    path = tmp / "trace.json"
    prof.export_chrome_trace(str(path))
    table = load(path)
    ops = [(table.name_of(r), table.op_inputs(r)) for r in sorted(table.inputs)]
    counts = {str(k).replace("aten.", "aten::"): int(v)
              for k, v in counter.get_flop_counts()["Global"].items()}
    return ops, counts


def model_flops(ops: list[tuple[str, OpInputs]], name: str) -> int:
    """The model's FLOPs for the first recorded ``name`` (the dispatch mode records an op
    twice, with the same inputs), in the counter's convention.

    Differs on purpose: causal attention over equal query and key lengths, which the
    model counts at half the products (the kernels skip the masked half; FlashAttention
    and TraceLens count it so) and marks ``causal``; the counter counts it in full.
    """
    inputs = next(i for n, i in ops if n == name)
    cost = op_cost(name, inputs)
    assert cost is not None, f"no cost for {name} {inputs}"
    return cost.flops * 2 if cost.causal else cost.flops


def test_causal_attention_is_half_the_counter(tmp_path: Path) -> None:
    ops, counts = recorded(lambda: torch.ops.aten._scaled_dot_product_flash_attention(
        q4(2, 3, 6, 8), q4(2, 3, 6, 8), q4(2, 3, 6, 8), 0.0, True), tmp_path)
    name = "aten::_scaled_dot_product_flash_attention"
    cost = op_cost(name, next(i for n, i in ops if n == name))
    assert cost.causal and cost.flops * 2 == counts[name]
    ops, counts = recorded(lambda: torch.ops.aten._flash_attention_forward(
        q4(2, 5, 3, 8), q4(2, 7, 3, 8), q4(2, 7, 3, 8), None, None, 5, 7, 0.0, True,
        False), tmp_path)  # causal over unequal lengths: the full count, not marked
    name = "aten::_flash_attention_forward"
    cost = op_cost(name, next(i for n, i in ops if n == name))
    assert not cost.causal and cost.flops == counts[name]


def q4(b, h, s, d, dtype=torch.float16):
    return t(b, h, s, d, dtype=dtype)


CASES: list[tuple[str, str, Callable[[], object]]] = [
    ("mm", "aten::mm", lambda: torch.mm(t(7, 5), t(5, 3))),
    ("addmm", "aten::addmm", lambda: torch.addmm(t(3), t(7, 5), t(5, 3))),
    ("bmm", "aten::bmm", lambda: torch.bmm(t(4, 7, 5), t(4, 5, 3))),
    ("baddbmm", "aten::baddbmm", lambda: torch.baddbmm(t(4, 7, 3), t(4, 7, 5), t(4, 5, 3))),
    ("bmm bf16", "aten::bmm", lambda: torch.bmm(t(2, 9, 16, dtype=torch.bfloat16),
                                                t(2, 16, 24, dtype=torch.bfloat16))),
    ("scaled_mm fp8", "aten::_scaled_mm", lambda: torch._scaled_mm(
        t(16, 32).to(torch.float8_e4m3fn), t(48, 32).to(torch.float8_e4m3fn).t(),
        torch.ones((), device=M), torch.ones((), device=M), out_dtype=torch.bfloat16)),
    ("conv1d", "aten::convolution", lambda: F.conv1d(t(2, 4, 17), t(6, 4, 3), stride=2,
                                                     padding=1)),
    ("conv2d", "aten::convolution", lambda: F.conv2d(t(2, 3, 15, 13), t(8, 3, 3, 5),
                                                     t(8), stride=(2, 1), padding=(1, 2),
                                                     dilation=(1, 2))),
    ("conv2d groups", "aten::convolution", lambda: F.conv2d(t(2, 8, 9, 9), t(12, 2, 3, 3),
                                                            groups=4)),
    ("conv3d", "aten::convolution", lambda: F.conv3d(t(1, 2, 5, 6, 7), t(4, 2, 2, 3, 3),
                                                     padding=1)),
    ("conv_transpose2d", "aten::convolution", lambda: F.conv_transpose2d(
        t(2, 6, 5, 7), t(6, 4, 3, 3), stride=2, padding=1, output_padding=1)),
    ("conv_transpose1d groups", "aten::convolution", lambda: F.conv_transpose1d(
        t(2, 6, 9), t(6, 2, 4), stride=3, groups=3)),
    ("sdpa flash", "aten::_scaled_dot_product_flash_attention",
     lambda: torch.ops.aten._scaled_dot_product_flash_attention(
         q4(2, 3, 5, 8), q4(2, 3, 7, 8), q4(2, 3, 7, 8), 0.0, False)),
    ("sdpa flash causal", "aten::_scaled_dot_product_flash_attention",
     lambda: torch.ops.aten._scaled_dot_product_flash_attention(
         q4(2, 3, 6, 8), q4(2, 3, 6, 8), q4(2, 3, 6, 8), 0.0, True)),
    ("sdpa efficient", "aten::_scaled_dot_product_efficient_attention",
     lambda: torch.ops.aten._scaled_dot_product_efficient_attention(
         q4(2, 4, 5, 16), q4(2, 4, 9, 16), q4(2, 4, 9, 8), None, False)),
    ("sdpa cudnn", "aten::_scaled_dot_product_cudnn_attention",
     lambda: torch.ops.aten._scaled_dot_product_cudnn_attention(
         q4(1, 2, 5, 8), q4(1, 2, 5, 8), q4(1, 2, 5, 8), None, False, 0.0, True, False)),
    ("flash forward", "aten::_flash_attention_forward",
     lambda: torch.ops.aten._flash_attention_forward(
         q4(2, 5, 3, 8), q4(2, 7, 3, 8), q4(2, 7, 3, 8), None, None, 5, 7, 0.0, False,
         False)),
    ("flash forward gqa", "aten::_flash_attention_forward",
     lambda: torch.ops.aten._flash_attention_forward(
         q4(2, 5, 4, 8), q4(2, 5, 2, 8), q4(2, 5, 2, 8), None, None, 5, 5, 0.0, True,
         False)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_flops_equal_flop_counter(case, tmp_path: Path) -> None:
    _, name, fn = case
    ops, counts = recorded(fn, tmp_path)
    assert counts.get(name, 0) > 0
    assert model_flops(ops, name) == counts[name]


def _backward_cases() -> list[tuple[str, str, Callable[[], object]]]:
    def conv_bwd(transposed: bool, groups: int = 1):
        def run():
            x = t(2, 4, 9, 8)
            w = t(4, 4 // groups, 3, 3) if not transposed else t(4, 6 // groups, 3, 3)
            return torch.ops.aten.convolution_backward(
                t(2, 4, 5, 4) if not transposed else t(2, 6, 19, 17), x, w, [4], [2, 2],
                [1, 1], [1, 1], transposed, [0, 0], groups, [True, True, True])
        return run

    def attn_bwd(op: str):
        def run():
            q, k, v = q4(2, 3, 5, 8), q4(2, 3, 7, 8), q4(2, 3, 7, 8)
            out, lse = q4(2, 3, 5, 8), t(2, 3, 5)
            if op == "flash":
                return torch.ops.aten._scaled_dot_product_flash_attention_backward(
                    out, q, k, v, out, lse, None, None, 5, 7, 0.0, False,
                    torch.empty(2, dtype=torch.int64, device=M),
                    torch.empty(2, dtype=torch.int64, device=M))
            return torch.ops.aten._scaled_dot_product_efficient_attention_backward(
                out, q, k, v, None, out, lse, torch.empty(2, dtype=torch.int64, device=M),
                torch.empty(2, dtype=torch.int64, device=M), 0.0, [True, True, True, False],
                False)
        return run

    def flash_bwd():
        q, k, v = q4(2, 5, 3, 8), q4(2, 7, 3, 8), q4(2, 7, 3, 8)
        out, lse = q4(2, 5, 3, 8), t(2, 3, 5)
        seed = torch.empty(2, dtype=torch.int64, device=M)
        return torch.ops.aten._flash_attention_backward(out, q, k, v, out, lse, None, None, 5,
                                                         7, 0.0, True, seed, seed)

    return [
        ("convolution_backward", "aten::convolution_backward", conv_bwd(False)),
        ("convolution_backward groups", "aten::convolution_backward", conv_bwd(False, 2)),
        ("convolution_backward transposed", "aten::convolution_backward", conv_bwd(True)),
        ("sdpa flash backward", "aten::_scaled_dot_product_flash_attention_backward",
         attn_bwd("flash")),
        ("sdpa efficient backward", "aten::_scaled_dot_product_efficient_attention_backward",
         attn_bwd("efficient")),
        ("flash backward", "aten::_flash_attention_backward", flash_bwd),
    ]


@pytest.mark.parametrize("case", _backward_cases(), ids=lambda c: c[0])
def test_backward_flops_equal_flop_counter(case, tmp_path: Path) -> None:
    _, name, fn = case
    ops, counts = recorded(fn, tmp_path)
    assert counts.get(name, 0) > 0
    assert model_flops(ops, name) == counts[name]


@pytest.mark.parametrize("case", [
    ("linear 3-D", "aten::linear", lambda: F.linear(t(2, 7, 5), t(3, 5), t(3)), "aten::addmm"),
    ("matmul batched broadcast", "aten::matmul",
     lambda: torch.matmul(t(2, 1, 7, 5), t(3, 5, 4)), "aten::bmm"),
    ("matmul 2-D", "aten::matmul", lambda: torch.matmul(t(7, 5), t(5, 4)), "aten::mm"),
], ids=lambda c: c[0])
def test_composite_gemms_equal_what_they_decompose_into(case, tmp_path: Path) -> None:
    """``linear`` and ``matmul`` have no formula of their own in flop_counter: it counts
    the mm/addmm/bmm they call, which must add up to the composite's model."""
    _, name, fn, _inner = case
    ops, counts = recorded(fn, tmp_path)
    assert model_flops(ops, name) == sum(counts.values()) > 0


def test_training_step_backward_nodes(tmp_path: Path) -> None:
    """A linear + conv training step on the CPU: the GEMMs and convolutions that the
    autograd nodes (AddmmBackward0, ConvolutionBackward0) run are counted like the
    forward ones; every op the counter counts has the same FLOPs in the model."""
    conv = torch.nn.Conv2d(3, 8, 3, padding=1)
    lin = torch.nn.Linear(8 * 6 * 6, 10)

    def step():
        x = torch.randn(4, 3, 6, 6)
        lin(conv(x).flatten(1)).sum().backward()

    with FlopCounterMode(display=False) as counter:
        step()
    counts = {str(k).replace("aten.", "aten::"): int(v)
              for k, v in counter.get_flop_counts()["Global"].items()}
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()  # profiled apart: under the counter, the profiler records each op twice
    prof.export_chrome_trace(str(tmp_path / "step.json"))
    table = load(tmp_path / "step.json")
    per_op: dict[str, int] = {}
    for row in table.inputs:
        name = table.name_of(row)
        cost = op_cost(name, table.op_inputs(row))
        if name in counts and cost is not None:
            per_op[name] = per_op.get(name, 0) + cost.flops
    assert {"aten::convolution", "aten::convolution_backward", "aten::addmm",
            "aten::mm"} <= counts.keys()
    assert per_op == counts


# ---------------------------------------------------------------- bytes and the rest, by hand

def inputs(dims, types, concrete=None, strides=None) -> OpInputs:
    return OpInputs(dims, types, strides or [], concrete or [""] * len(dims))


BF16, F32 = "c10::BFloat16", "float"


def test_addmm_bytes_from_the_bert_trace() -> None:
    """h100_bert_small's first addmm: bias[512] + x[141,512] + w[512,512] + out[141,512]."""
    cost = op_cost("aten::addmm", inputs([[512], [141, 512], [512, 512], [], []],
                                         [BF16, BF16, BF16, "Scalar", "Scalar"],
                                         ["", "", "", "1", "1"]))
    assert cost.flops == 2 * 141 * 512 * 512 == 73_924_608
    assert cost.bytes == 2 * (512 + 141 * 512 + 512 * 512 + 141 * 512)
    assert cost.dtype == "bf16" and cost.family == "gemm"


def test_conv_bytes_from_the_vit_trace() -> None:
    """ViT's patch embedding: x[4,3,224,224] * w[768,3,16,16] stride 16 -> out[4,768,14,14]."""
    cost = op_cost("aten::conv2d", inputs(
        [[4, 3, 224, 224], [768, 3, 16, 16], [768], [], [], [], []],
        [BF16, BF16, BF16, "ScalarList", "ScalarList", "ScalarList", "Scalar"],
        ["", "", "", "[16, 16]", "[0, 0]", "[1, 1]", "1"]))
    assert cost.flops == 2 * 4 * 768 * 3 * 16 * 16 * 14 * 14
    assert cost.bytes == 2 * (4 * 3 * 224 * 224 + 768 * 3 * 16 * 16 + 768 + 4 * 768 * 14 * 14)


def test_flash_attention_from_the_bert_trace() -> None:
    """[1, 141, 8, 64] q, k, v (b, s, h, d): 4 * b*h * s*s * d FLOPs; q, k, v and out."""
    q = [1, 141, 8, 64]
    cost = op_cost("aten::_flash_attention_forward", inputs(
        [q, q, q, [], [], [], []], [BF16, BF16, BF16, "", "", "Scalar", "Scalar"],
        ["", "", "", "", "", "141", "141"]))
    assert cost.flops == 4 * 8 * 141 * 141 * 64
    assert cost.bytes == 4 * 141 * 8 * 64 * 2


def test_elementwise_broadcast_and_in_place() -> None:
    cost = op_cost("aten::add", inputs([[4, 1, 8], [3, 1], []], [F32, F32, "Scalar"]))
    assert cost.flops == 4 * 3 * 8
    assert cost.bytes == 4 * (4 * 8 + 3) + 4 * (4 * 3 * 8)
    cost = op_cost("aten::mul", inputs([[1000], [], [1000]], [BF16, "double", BF16]))
    # mul.out(x, 0-d double, out): x and the 0-d double (one element) read, out written
    assert (cost.flops, cost.bytes) == (1000, 2000 + 8 + 2000)
    cost = op_cost("aten::add", inputs([[64], [64]], [BF16, F32]))
    assert cost.bytes == 64 * 2 + 64 * 4 + 64 * 4  # bf16 + fp32 tensors: an fp32 result
    cost = op_cost("aten::add_", inputs([[64], [64]], [BF16, F32]))
    assert cost.bytes == 64 * 2 + 64 * 4 + 64 * 2  # in place: written back as bf16
    cost = op_cost("aten::eq", inputs([[1, 141], []], ["long int", "Scalar"]))
    assert (cost.flops, cost.bytes, cost.dtype) == (141, 141 * 8 + 141, "int64")


def test_layer_norm_bytes() -> None:
    """x[1,141,512] bf16 normalized over 512 with weight and bias: read x, w, b; write y;
    mean and rstd per row in fp32. FLOPs as TraceLens: 3 (statistics) + 2 (x * alpha +
    beta) per element, 6 per normalized position (folding w, b and 1/sqrt(var + eps))."""
    cost = op_cost("aten::native_layer_norm", inputs(
        [[1, 141, 512], [], [512], [512], []], [BF16, "ScalarList", BF16, BF16, "Scalar"],
        ["", "[512]", "", "", "1e-12"]))
    n = 141 * 512
    assert cost.flops == 5 * n + 6 * 512
    assert cost.bytes == 2 * n * 2 + 2 * 512 * 2 + 2 * 141 * 4


def test_norm_backward_and_group_norm() -> None:
    x = [8, 16, 32, 32]
    n = 8 * 16 * 32 * 32
    cost = op_cost("aten::native_group_norm", inputs(
        [x, [16], [16], [], [], [], [], []], [F32, F32, F32] + ["Scalar"] * 5,
        ["", "", "", "8", "16", "1024", "4", "1e-05"]))
    assert cost.flops == 5 * n + 6 * 16 and cost.bytes == 2 * n * 4 + 2 * 64 + 2 * 8 * 4 * 4
    cost = op_cost("aten::_fused_rms_norm_backward", inputs(
        [x, x, [], [8, 16, 1, 1], [], []], [F32, F32, "ScalarList", F32, "", "ScalarList"],
        ["", "", "[32, 32]", "", "", "[True, False]"]))
    # no weight, grad input only: x_hat (1) + grad input (6) per element
    assert cost.flops == 7 * n and cost.bytes == 3 * n * 4 + 128 * 4


def test_copies_casts_gathers() -> None:
    cost = op_cost("aten::copy_", inputs([[8, 16], [8, 16], []], [BF16, F32, "Scalar"]))
    assert (cost.flops, cost.bytes) == (0, 128 * 4 + 128 * 2)
    cost = op_cost("aten::_to_copy", inputs([[10, 20], [], [], [], [], [], []],
                                            [F32, "Scalar", "", "", "", "Scalar", ""],
                                            ["", "15", "", "", "", "False", ""]))
    assert cost.bytes == 200 * 4 + 200 * 2  # to bf16 (ScalarType 15)
    cost = op_cost("aten::embedding", inputs([[30522, 512], [1, 141], [], [], []],
                                             [BF16, "long int", "Scalar", "Scalar", "Scalar"]))
    assert (cost.flops, cost.bytes) == (0, 141 * 8 + 2 * 141 * 512 * 2)
    cost = op_cost("aten::cat", inputs([[[4, 1, 768], [4, 196, 768]], []],
                                       ["TensorList", "Scalar"]))
    assert cost is None  # a TensorList records no dtype: bytes unknown, not guessed


def test_unknown_op_and_odd_inputs_have_no_model() -> None:
    assert op_cost("aten::max_pool2d", inputs([[1, 2, 4, 4]], [F32])) is None
    assert op_cost("aten::mm", inputs([[2, 3], [4, 5]], [F32, F32])) is None  # k mismatch
    assert op_cost("aten::mm", inputs([[2, 3]], [F32])) is None
    assert op_cost("aten::mm", None) is None
    assert Inputs(inputs([[2, 3]], ["Scalar"])).shape(0) is None


def test_efficient_attention_forward_differs_from_the_counter_on_purpose(tmp_path: Path) -> None:
    """``_efficient_attention_forward`` takes q, k, v as [b, s, h, d]; flop_counter's formula
    reads those shapes as [b, h, s, d] (heads and sequence swapped: 2880 FLOPs here instead
    of 4800). The model uses the kernel's layout, so it equals the counter's count for the
    same attention through ``_scaled_dot_product_efficient_attention`` ([b, h, s, d])."""
    q = q4(2, 5, 3, 8)  # b=2, s=5, h=3, d=8
    ops, counts = recorded(lambda: torch.ops.aten._efficient_attention_forward(
        q, q, q, None, None, None, 5, 5, 0.0, 0, False), tmp_path)
    _, sdpa_counts = recorded(
        lambda: torch.ops.aten._scaled_dot_product_efficient_attention(
            q.transpose(1, 2), q.transpose(1, 2), q.transpose(1, 2), None, False), tmp_path)
    model = model_flops(ops, "aten::_efficient_attention_forward")
    sdpa = sdpa_counts["aten::_scaled_dot_product_efficient_attention"]
    assert model == sdpa == 4 * 2 * 3 * 5 * 5 * 8
    assert counts["aten::_efficient_attention_forward"] == 4 * 2 * 5 * 3 * 3 * 8 != model


# ---------------------------------------------------------------- backend and older ops

def test_cpu_backend_convolution_equals_the_counter(tmp_path: Path) -> None:
    """On the CPU, ``aten::convolution`` runs ``aten::mkldnn_convolution(x, w, bias,
    padding, stride, dilation, groups)``: modelled with the counter's FLOPs for the
    convolution, strided and grouped (it counts only where the public op has no model)."""
    for groups, stride in ((1, 2), (2, 1)):
        x, w = torch.randn(2, 4, 15, 13), torch.randn(6, 4 // groups, 3, 5)
        ops, counts = recorded(lambda x=x, w=w, g=groups, s=stride: F.conv2d(
            x, w, stride=s, padding=1, groups=g), tmp_path)
        assert model_flops(ops, "aten::mkldnn_convolution") == counts["aten::convolution"]


def _legacy(dims, types, concrete=None) -> OpInputs:
    """Inputs as an older release records them: no Concrete Inputs before 2.0."""
    return OpInputs(dims, types, [], concrete or [])


@pytest.mark.parametrize("stride,padding,groups", [(1, 1, 1), (2, 3, 1), (1, 1, 4)])
def test_older_cudnn_convolution_ops_equal_the_counter(stride, padding, groups) -> None:
    """The cuDNN ops of PyTorch 1.8-1.10 (``cudnn_convolution(x, w, padding, stride,
    dilation, groups, benchmark, deterministic, allow_tf32)``, its ``_backward(x, grad_out,
    w, ..., output_mask)``, ``_backward_input(input_size, grad_out, w, ...)`` and
    ``_backward_weight(weight_size, grad_out, x, ...)``) no longer exist in torch: their
    FLOPs are checked against the counter on today's ``convolution`` and
    ``convolution_backward`` with the same shapes and arguments."""
    x, w = [8, 16, 28, 28], [32, 16 // groups, 3, 3]
    xt, wt = torch.randn(*x, device=M), torch.randn(*w, device=M)
    with FlopCounterMode(display=False) as fwd:
        y = F.conv2d(xt, wt, stride=stride, padding=padding, groups=groups)
    go = list(y.shape)
    with FlopCounterMode(display=False) as bwd:
        torch.ops.aten.convolution_backward(
            torch.randn(*go, device=M), xt, wt, None, [stride] * 2, [padding] * 2, [1, 1],
            False, [0, 0], groups, [True, True, False])
    forward = fwd.get_total_flops()
    backward = bwd.get_total_flops()
    f32 = "float"
    scalars = [f"[{padding}, {padding}]", f"[{stride}, {stride}]", "[1, 1]", str(groups),
               "False", "False", "True"]
    cost = op_cost("aten::cudnn_convolution", _legacy(
        [x, w, [], [], [], [], [], [], []], [f32, f32, *[""] * 7], ["", "", *scalars]))
    assert cost.flops == forward
    # without Concrete Inputs (before 2.0) the forward's stride is unknown: no model
    assert op_cost("aten::cudnn_convolution", _legacy(
        [x, w, [], [], [], [], [], [], []], [f32, f32, *[""] * 7])) is None
    both = _legacy([x, go, w, *[[]] * 8], [f32, f32, f32, *[""] * 8],
                   ["", "", "", *scalars, "[True, True]"])
    assert op_cost("aten::cudnn_convolution_backward", both).flops == backward
    # no output_mask recorded: both gradients are counted
    assert op_cost("aten::cudnn_convolution_backward", _legacy(
        [x, go, w, *[[]] * 8], [f32, f32, f32, *[""] * 8])).flops == backward
    grad_in = op_cost("aten::cudnn_convolution_backward_input", _legacy(
        [[], go, w, *[[]] * 7], ["", f32, f32, *[""] * 7]))
    grad_w = op_cost("aten::cudnn_convolution_backward_weight", _legacy(
        [[], go, x, *[[]] * 7], ["", f32, f32, *[""] * 7], [str(w), "", "", *scalars]))
    assert grad_in.flops + grad_w.flops == backward and grad_in.flops == forward


def test_a_pytorch_18_training_trace_models_its_cudnn_backward(tmp_path: Path) -> None:
    """A ResNet-50 layer as PyTorch 1.8 wrote it: ``Operator``/``Runtime``/``Kernel``
    categories, ``Input dims`` spelled lower-case, no Concrete Inputs. The forward's stride
    and padding are not recorded, but its backward op records grad_out, the forward's
    output: the forward is counted with it (once, at ``conv2d``, the outermost op of the
    family), the backward with both gradients (no mask recorded). The achieved rate and
    the coverage are checked by hand."""
    import json as _json

    from profiler_kit.analysis.trace_analysis import analyze_table

    x, w, go = [32, 256, 56, 56], [64, 256, 1, 1], [32, 64, 56, 56]
    f32 = "float"
    conv_flops = 2 * 32 * 64 * 256 * 1 * 1 * 56 * 56

    def op(name, ts, dur, dims=None, types=None):
        args = {"Input dims": dims, "Input type": types} if dims is not None else {}
        return {"ph": "X", "cat": "Operator", "name": name, "pid": 1, "tid": 1, "ts": ts,
                "dur": dur, "args": args}

    def launch(ts, corr, kernel, kts, kdur):
        return [{"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                 "ts": ts, "dur": 5, "args": {"correlation": corr}},
                {"ph": "X", "cat": "Kernel", "name": kernel, "pid": 0, "tid": 7, "ts": kts,
                 "dur": kdur, "args": {"correlation": corr, "device": 0, "stream": 7}}]

    events = [
        op("aten::conv2d", 0, 100, [x, w, [], [], [], [], []], [f32, f32, "", "", "", "", ""]),
        op("aten::cudnn_convolution", 10, 80, [x, w, [], [], [], [], [], [], []],
           [f32, f32, *[""] * 7]),
        *launch(20, 1, "volta_scudnn_128x64_relu_interior_nn_v1", 100, 400),
        op("autograd::engine::evaluate_function: CudnnConvolutionBackward", 1000, 300),
        op("aten::cudnn_convolution_backward", 1010, 280, [x, go, w, *[[]] * 8],
           [f32, f32, f32, *[""] * 8]),
        op("aten::cudnn_convolution_backward_input", 1020, 100, [[], go, w, *[[]] * 7],
           ["", f32, f32, *[""] * 7]),
        *launch(1030, 2, "volta_scudnn_128x64_stridedB_interior_nn_v1", 1100, 500),
        op("aten::cudnn_convolution_backward_weight", 1150, 100, [[], go, x, *[[]] * 7],
           ["", f32, f32, *[""] * 7]),
        *launch(1160, 3, "volta_scudnn_128x128_stridedB_small_nn_v1", 1600, 700),
    ]
    path = tmp_path / "worker0.pt.trace.json"
    path.write_text(_json.dumps({"deviceProperties": [
        {"id": 0, "name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16 * 2**30,
         "computeMajor": 7, "computeMinor": 0, "warpSize": 32}], "traceEvents": events}))
    perf = analyze_table(load(path)).perf
    forward, backward = sorted(perf.groups, key=lambda g: g.op)
    assert backward.op == "aten::cudnn_convolution_backward"
    assert backward.flops == 2 * conv_flops and backward.total_ns == (500 + 700) * 1000
    assert forward.op == "aten::conv2d"
    assert forward.flops == conv_flops and forward.total_ns == 400 * 1000
    assert perf.modelled_share == 1.0 and perf.unmodelled == ()
    assert perf.flops_per_s_peak_share == pytest.approx(
        3 * conv_flops / 1600e-6 / perf.mfu_peak_flops_per_s)
    # no steps: MFU over the trace's GPU window, the first kernel's start to the last's end
    assert perf.mfu_window == "trace" and perf.mfu_time_ns == 2200 * 1000
    assert perf.model_flops_utilization == pytest.approx(
        3 * conv_flops / 2200e-6 / perf.mfu_peak_flops_per_s)
    # without the backward op there is nothing to take the output from: no model
    alone = tmp_path / "forward_only.pt.trace.json"
    doc = _json.loads(path.read_text())
    doc["traceEvents"] = events[:4]
    alone.write_text(_json.dumps(doc))
    perf = analyze_table(load(alone)).perf
    assert perf.groups == () and [u.op for u in perf.unmodelled] == ["aten::cudnn_convolution"]


def test_the_tensorboard_samples_resnet50_step_against_the_counter() -> None:
    """One training step of the TensorBoard plugin's ResNet-50 sample (V100, PyTorch 1.9,
    batch 32 at 224x224; no Concrete Inputs): every convolution is counted, forwards
    through the output shapes their backward ops recorded, and the totals equal
    FlopCounterMode on torchvision's ResNet-50 with the same batch. The backward differs
    by one term on purpose: without an ``output_mask`` recorded, the first layer's input
    gradient (which autograd skips for an input that needs none) is counted too."""
    from real_traces import analysis
    from torchvision.models import resnet50

    perf = analysis("v100_resnet50_tb_sample_step.json.gz").perf
    by_op: dict[str, int] = {}
    for g in perf.groups:
        by_op[g.op] = by_op.get(g.op, 0) + g.flops * g.count
    model = resnet50(weights=None).to(M)
    x = torch.randn(32, 3, 224, 224, device=M)
    with FlopCounterMode(display=False) as fwd:
        out = model(x)
    with FlopCounterMode(display=False) as bwd:
        out.sum().backward()
    aten = torch.ops.aten
    assert by_op["aten::conv2d"] == fwd.get_flop_counts()["Global"][aten.convolution]
    first_input_grad = 2 * 32 * 64 * 3 * 7 * 7 * 112 * 112
    assert by_op["aten::cudnn_convolution_backward"] == \
        bwd.get_flop_counts()["Global"][aten.convolution_backward] + first_input_grad
    assert perf.modelled_share > 0.95 and not perf.mfu_partial
    assert [u.op for u in perf.unmodelled if "conv" in u.op] == []
