"""What a kernel that Inductor generated stands for, from its name alone.

``torch.compile`` names its kernels after the ATen ops it fused: ``triton_poi_fused_add_mul_0``
(Triton, pointwise), ``triton_red_fused__log_softmax_1`` (a reduction), ``cpp_fused_relu_2``
(C++ on the CPU, ``graph_0_cpp_fused_relu_2`` in a trace with Inductor's kernel
profiling). The kind comes from the prefix; the ops are the words between ``fused_``
and the counter, read greedily against the names of ATen ops that hold an underscore
(``native_layer_norm``, ``_to_copy``), so they split where the op names end.
"""

from __future__ import annotations

import re

_KINDS = {"poi": "pointwise", "per": "persistent reduction", "red": "reduction",
          "tem": "template", "spl": "split scan", "sca": "scan"}
_NAME = re.compile(r"^(?:graph_\d+_)?(?:(triton)_(?:(poi|per|red|tem|spl|sca)_)?|(cpp)_)"
                   r"fused_(\w+?)(?:_\d+)?$")

# ATen op names with an underscore inside (or in front), longest first when matched
_MULTI = sorted({
    "_to_copy", "_log_softmax", "_log_softmax_backward_data", "_softmax",
    "_softmax_backward_data", "_unsafe_view", "_native_batch_norm_legit",
    "_native_batch_norm_legit_functional", "_native_batch_norm_legit_no_training",
    "native_batch_norm", "native_batch_norm_backward", "native_layer_norm",
    "native_layer_norm_backward", "native_group_norm", "native_group_norm_backward",
    "native_dropout", "native_dropout_backward", "threshold_backward", "gelu_backward",
    "silu_backward", "sigmoid_backward", "tanh_backward", "hardtanh_backward",
    "leaky_relu_backward", "embedding_dense_backward", "nll_loss_forward",
    "nll_loss_backward", "mse_loss", "mse_loss_backward", "max_pool2d_with_indices",
    "max_pool2d_with_indices_backward", "avg_pool2d", "avg_pool2d_backward",
    "adaptive_avg_pool2d", "scalar_tensor", "full_like", "zeros_like", "ones_like",
    "new_zeros", "new_ones", "new_empty", "index_put", "index_select", "select_scatter",
    "slice_scatter", "slice_backward", "select_backward", "constant_pad_nd", "masked_fill",
    "where_self", "bitwise_and", "bitwise_or", "bitwise_not", "logical_and", "logical_not",
    "clamp_min", "clamp_max", "convolution_backward", "addcmul", "addcdiv", "_foreach_add",
    "_foreach_mul", "_fused_adam", "as_strided", "var_mean",
}, key=len, reverse=True)


def fused_kernel(name: str) -> tuple[str, tuple[str, ...]] | None:
    """(kind, ops) of an Inductor kernel name; None for any other kernel."""
    m = _NAME.match(name.split("(", 1)[0].strip())
    if m is None:
        return None
    triton, kind, cpp, body = m.groups()
    label = "C++" if cpp else "Triton " + _KINDS.get(kind or "", "kernel")
    return label, tuple(_split_ops(body))


def _split_ops(body: str) -> list[str]:
    ops: list[str] = []
    i = 0
    while i < len(body):
        if body[i] == "_" and not any(body.startswith(m, i) for m in _MULTI if m[0] == "_"):
            i += 1
            continue
        match = next((m for m in _MULTI if body.startswith(m, i)
                      and (i + len(m) == len(body) or body[i + len(m)] == "_")), None)
        if match is None:
            j = body.find("_", i)
            match = body[i:] if j < 0 else body[i:j]
        ops.append(match)
        i += len(match)
    return ops
