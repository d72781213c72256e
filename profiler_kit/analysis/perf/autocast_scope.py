"""What autocast could change: the GPU time in the ops it runs in 16 bits.

``torch.autocast`` casts the inputs of a fixed list of aten ops (matmuls, linear,
convolutions, attention, RNN cells: PyTorch's fp16 cast policy) and leaves everything
else alone. A kernel is in its reach when the op that launched it is one of those, or
an aten op inside one (``aten::mm`` under ``aten::linear``, ``cudnn_convolution``
under ``aten::conv2d``, their backward ops), with no other op between them; and, in a
``torch.compile`` graph (``CompiledFunction``), a GEMM, convolution or attention
library kernel, which the graph would run in 16 bits if compiled under autocast.
Custom extension ops (``vllm::``, ``fbgemm::``, ``_C::``) and Triton kernels are never
in reach: autocast does not change what a hand-written kernel computes in.

The data type comes from the op's ``Input type`` when recorded, else from the kernel
name (as :mod:`.precision` reads them).
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.op_tree import _nearest_self_or_ancestor as nearest_self_or_ancestor
from profiler_kit.analysis.perf.precision import input_dtype_is_low, is_low_precision
from profiler_kit.trace.table import Cat, EventTable

# aten ops autocast runs in 16 bits (PyTorch's CUDA fp16 cast policy), the backend ops
# they become, and their backward ops
_AUTOCAST_OP = re.compile(
    r"^aten::(?:matmul|mm|bmm|addmm|addbmm|baddbmm|addmv|addr|mv|linear|einsum|prelu|"
    r"chain_matmul|linalg_multi_dot|linalg_vecdot|_?convolution|conv[123]d|conv_tbc|"
    r"conv_transpose[123]d|cudnn_convolution\w*|miopen_convolution\w*|"
    r"convolution_backward\w*|_convolution_double_backward|"
    r"scaled_dot_product_attention|_scaled_dot_product_\w*attention\w*|"
    r"_flash_attention_\w+|_efficient_attention_\w+|"
    r"_thnn_fused_(?:lstm|gru)_cell\w*|(?:lstm|gru|rnn_tanh|rnn_relu)_cell)$")
# ops that only wrap the ones below them (autograd nodes, the engine): the walk goes on
_WRAPPER = re.compile(r"^autograd::|Backward\d*$|^torch::autograd::(?!CppNode)")
_COMPILED = re.compile(r"^CompiledFunction|^Torch-Compiled Region|^torch_compile")
_TRITON = re.compile(r"^triton_|^triton\.", re.IGNORECASE)
_MATH = (classify.GEMM, classify.CONVOLUTION, classify.ATTENTION)


class AutocastScope(msgspec.Struct, frozen=True):
    """GPU kernel time autocast could run in 16 bits, and how much already is."""

    gpu_ns: int  # all GPU activity time (kernels, memcpy, memset) in the selection
    scope_ns: int  # kernels of the ops autocast changes
    low_precision_ns: int  # of those, already fp16/bf16/fp8
    compiled_ns: int  # of scope_ns: library GEMM/conv/attention kernels in compiled graphs
    out_of_reach_ns: int  # GEMM/conv/attention-class kernels autocast cannot change
    top_ops: tuple[tuple[str, int], ...]  # (op, scope ns), largest first

    @property
    def share(self) -> float:
        """The share of the GPU time autocast could touch."""
        return self.scope_ns / self.gpu_ns if self.gpu_ns else 0.0

    @property
    def low_precision_share(self) -> float | None:
        return self.low_precision_ns / self.scope_ns if self.scope_ns else None


def autocast_scope(table: EventTable, tree: OpTree, gpu: GpuActivity,
                   mask: np.ndarray | None = None, top: int = 3) -> AutocastScope:
    """The kernels in autocast's reach among the GPU activities in ``mask`` (all by default)."""
    sel = np.ones(len(gpu), dtype=bool) if mask is None else mask
    gpu_ns = int(table.dur_ns[gpu.row[sel]].sum())
    kernel = sel & (table.cat[gpu.row] == Cat.KERNEL)
    if not len(tree) or not kernel.any():
        return AutocastScope(gpu_ns, 0, 0, 0, 0, ())
    reach = _reach(table, tree, gpu, kernel)
    idx, inside, by_graph, by_op, own, math = (reach.idx, reach.inside, reach.by_graph,
                                               reach.by_op, reach.own, reach.math)
    names = table.names
    dur = table.dur_ns[gpu.row[idx]]
    all_math = kernel & np.isin(gpu.klass, [classify.CLASS_INDEX[c] for c in _MATH])
    out_of_reach = int(table.dur_ns[gpu.row[all_math]].sum()) - int(dur[inside & math].sum())
    rows_in = gpu.row[idx[inside]]
    low = _low(table, tree, own[inside], rows_in)
    ops = table.name[tree.row[own[inside]]]
    ranked: list[tuple[int, int]] = []
    if len(ops):
        op_ids, op_inv = dense_ids(ops)
        sums = np.bincount(op_inv.reshape(-1), weights=dur[inside], minlength=len(op_ids))
        ranked = [(int(op_ids[i]), int(round(sums[i])))
                  for i in np.argsort(-sums, kind="stable")[:top].tolist()]
    return AutocastScope(
        gpu_ns=gpu_ns,
        scope_ns=int(dur[inside].sum()),
        low_precision_ns=int(dur[inside][low].sum()),
        compiled_ns=int(dur[by_graph & ~by_op].sum()),
        out_of_reach_ns=max(out_of_reach, 0),
        top_ops=tuple((names[k], v) for k, v in ranked),
    )


def in_reach(table: EventTable, tree: OpTree, gpu: GpuActivity) -> tuple[np.ndarray, np.ndarray]:
    """The kernels in autocast's reach, one by one: their indices into ``gpu``, and whether
    each already runs in 16 bits or fewer."""
    kernel = table.cat[gpu.row] == Cat.KERNEL
    if not len(tree) or not kernel.any():
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    reach = _reach(table, tree, gpu, kernel)
    return reach.idx[reach.inside], _low(table, tree, reach.own[reach.inside],
                                         gpu.row[reach.idx[reach.inside]])


class _Reach(msgspec.Struct, frozen=True):
    idx: np.ndarray  # the linked kernels (indices into gpu)
    inside: np.ndarray  # in reach, per kernel of idx
    by_op: np.ndarray
    by_graph: np.ndarray
    own: np.ndarray  # the op autocast casts the inputs of (tree node)
    math: np.ndarray  # GEMM, convolution or attention class


def _reach(table: EventTable, tree: OpTree, gpu: GpuActivity, kernel: np.ndarray) -> _Reach:
    names = table.names
    uniq, inverse = dense_ids(table.name[tree.row])
    inverse = inverse.reshape(-1)
    autocast = np.array([bool(_AUTOCAST_OP.match(names[int(u)])) for u in uniq])[inverse]
    compiled = np.array([bool(_COMPILED.match(names[int(u)])) for u in uniq])[inverse]
    aten = np.array([names[int(u)].startswith("aten::") or bool(_WRAPPER.search(names[int(u)]))
                     for u in uniq])[inverse]
    is_op = table.cat[tree.row] == Cat.CPU_OP
    # per node: the nearest op at or above it that is an autocast op, a compiled graph,
    # or anything else that is not aten (a custom op stops the walk)
    stop = is_op & (autocast | compiled | ~aten)
    owner = nearest_self_or_ancestor(stop, tree.parent)
    idx = np.flatnonzero(kernel & (gpu.node >= 0))
    k_names = table.name[gpu.row[idx]]
    k_uniq, k_inv = dense_ids(k_names)
    k_inv = k_inv.reshape(-1)
    triton = np.array([bool(_TRITON.match(names[int(u)])) for u in k_uniq], dtype=bool)[k_inv]
    own = owner[gpu.node[idx]]
    # the outermost of nested autocast ops (aten::conv2d over aten::cudnn_convolution):
    # the one autocast casts the inputs of
    while True:
        up = np.where(own >= 0, tree.parent[np.maximum(own, 0)], -1)
        above = np.where(up >= 0, owner[np.maximum(up, 0)], -1)
        climb = (own >= 0) & (above >= 0) & autocast[np.maximum(own, 0)] \
            & autocast[np.maximum(above, 0)]
        if not climb.any():
            break
        own = np.where(climb, above, own)
    has = own >= 0
    safe = np.maximum(own, 0)
    by_op = has & autocast[safe] & ~triton
    math = np.isin(gpu.klass[idx], [classify.CLASS_INDEX[c] for c in _MATH])
    by_graph = has & compiled[safe] & ~triton & math
    return _Reach(idx, by_op | by_graph, by_op, by_graph, own, math)


def _low(table: EventTable, tree: OpTree, op_nodes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per kernel: already 16 bits or narrower, from its op's input types where recorded,
    else from the kernel's name."""
    out = np.zeros(len(rows), dtype=bool)
    if not len(rows):
        return out
    names = table.names
    decided = np.zeros(len(rows), dtype=bool)
    if table.input_type is not None:
        types = table.input_type[tree.row[op_nodes]]
        has = types >= 0
        if has.any():
            t_uniq, t_inv = dense_ids(types[has])
            lut = np.array([{None: -1, False: 0, True: 1}[input_dtype_is_low(names[int(u)])]
                            for u in t_uniq], dtype=np.int8)[t_inv.reshape(-1)]
            where = np.flatnonzero(has)
            out[where] = lut == 1
            decided[where] = lut >= 0
    rest = np.flatnonzero(~decided)
    if len(rest):
        k_uniq, k_inv = dense_ids(table.name[rows[rest]])
        out[rest] = np.array([is_low_precision(names[int(u)]) for u in k_uniq],
                             dtype=bool)[k_inv.reshape(-1)]
    return out
