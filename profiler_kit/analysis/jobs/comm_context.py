"""What each collective is for, read from the ranges around its launch (the advice that fits
each is worded by :mod:`profiler_kit.render.wording.rules`).

The same all-reduce means different things: DDP's gradient all-reduce overlaps the
backward pass bucket by bucket (``bucket_cap_mb``, ``no_sync`` tune it), a tensor-parallel
all-reduce sits inside every layer, TorchRec's all-to-all moves embeddings. The context
of a call comes from the names of the CPU ranges open at its launch (innermost first)
and its collective type:

- ``ddp_gradient``: an all-reduce launched from the autograd engine (DDP's reducer runs
  in the gradient hooks: ``autograd::engine::evaluate_function: ...AccumulateGrad``) in
  a trace that uses ``DistributedDataParallel``;
- ``ddp_buffers``: DDP's broadcast of module buffers in its forward;
- ``embedding``: TorchRec's sparse-feature and pooled-embedding collectives (``KJT``,
  ``All2All_Pooled``, ``sparse_data_dist``, ``ReduceScatterBase``, ``all2all`` ranges);
- ``moe``: an all-to-all, all-gather or reduce-scatter in a mixture-of-experts layer
  (``moe``, ``expert``, ``dispatch``, ``combine``);
- ``fsdp``: FSDP's all-gathers and reduce-scatters;
- ``optimizer``: inside ``Optimizer.step`` (ZeRO, distributed Shampoo);
- ``tensor_parallel``: an all-reduce, all-gather or reduce-scatter inside the model's
  forward or backward otherwise (functional collectives, vLLM's ``vllm::all_reduce``);
- ``point_to_point``: send and recv (pipeline stages);
- ``other``: anything else.
"""

from __future__ import annotations

import re

import numpy as np

from profiler_kit.analysis.core import classify, intervals
from profiler_kit.analysis.core.collective_kinds import (
    ALLGATHER,
    ALLREDUCE,
    ALLTOALL,
    BROADCAST,
    P2P,
    REDUCE_SCATTER,
    collective_kind,
)
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.trace.table import Cat, EventTable

DDP_GRADIENT = "ddp_gradient"
DDP_BUFFERS = "ddp_buffers"
EMBEDDING = "embedding"
MOE = "moe"
FSDP = "fsdp"
OPTIMIZER = "optimizer"
TENSOR_PARALLEL = "tensor_parallel"
POINT_TO_POINT = "point_to_point"
OTHER = "other"

# what each context is, in a few words (the evidence labels and the rules' titles say it)
LABELS = {
    DDP_GRADIENT: "DDP's gradient all-reduce",
    DDP_BUFFERS: "DDP's buffer broadcast",
    EMBEDDING: "embedding all-to-all (TorchRec)",
    MOE: "mixture-of-experts all-to-all",
    FSDP: "FSDP all-gather/reduce-scatter",
    OPTIMIZER: "collectives in the optimizer step",
    TENSOR_PARALLEL: "tensor-parallel collectives in the layers",
    POINT_TO_POINT: "send/recv (pipeline)",
    OTHER: "other collectives",
}

_EMBEDDING = re.compile(r"kjt|all2all_pooled|sparse_data_dist|sdd_|reducescatterbase|"
                        r"reduce_scatter_base|all2all|embedding|sparse_arch|torchrec",
                        re.IGNORECASE)
_MOE = re.compile(r"moe|expert|dispatch|combine", re.IGNORECASE)
_FSDP = re.compile(r"fullyshardeddataparallel|fsdp", re.IGNORECASE)
_OPTIMIZER = re.compile(r"^Optimizer\.(?:step|zero_grad)#|optimizer", re.IGNORECASE)
_AUTOGRAD = re.compile(r"^autograd::engine|AccumulateGrad|ddp\.reducer|Reducer")
_DDP_FORWARD = re.compile(r"DistributedDataParallel\.forward")
_DDP = re.compile(r"DistributedDataParallel|ddp\.reducer|ddp::")
_MODEL = re.compile(r"forward|backward|autograd::|_c10d_functional|vllm::|execute_|"
                    r"generation|decode|prefill|layer", re.IGNORECASE)
_TP_KINDS = frozenset({ALLREDUCE, ALLGATHER, REDUCE_SCATTER})


def context_of(kind: str, chain: list[str], ddp: bool) -> str:
    """The context of a call of type ``kind`` launched inside the ranges ``chain``
    (innermost first) in a trace that uses DDP (``ddp``) or not."""
    if kind in P2P:
        return POINT_TO_POINT
    if any(_EMBEDDING.search(n) for n in chain):
        return EMBEDDING
    if kind in (ALLTOALL, ALLGATHER, REDUCE_SCATTER) and any(_MOE.search(n) for n in chain):
        return MOE
    if any(_FSDP.search(n) for n in chain):
        return FSDP
    if ddp and kind == ALLREDUCE and any(_AUTOGRAD.search(n) for n in chain):
        return DDP_GRADIENT
    if ddp and kind == BROADCAST and any(_DDP_FORWARD.search(n) for n in chain):
        return DDP_BUFFERS
    if any(_OPTIMIZER.search(n) for n in chain):
        return OPTIMIZER
    if kind == ALLTOALL and any(_MOE.search(n) for n in chain):
        return MOE
    if kind in _TP_KINDS and any(_MODEL.search(n) for n in chain):
        return TENSOR_PARALLEL
    return OTHER


def uses_ddp(table: EventTable) -> bool:
    """The trace ran DistributedDataParallel (its forward range or its reducer's ops)."""
    return any(_DDP.search(n) for n in table.names)


def chain_names(table: EventTable, tree: OpTree, node: int) -> list[str]:
    """Names of the CPU ranges from ``node`` to its root, innermost first."""
    out = []
    while node >= 0:
        out.append(table.name_of(int(tree.row[node])))
        node = int(tree.parent[node])
    return out


def kernel_contexts(table: EventTable, tree: OpTree, gpu: GpuActivity, index: np.ndarray,
                    kinds: list[str] | None = None) -> list[str]:
    """The context of the communication kernels ``gpu[index]``; their collective type is
    ``kinds`` where known, else read from the communication ranges around them."""
    ddp = uses_ddp(table)
    out = []
    seen: dict[tuple, str] = {}
    for n, j in enumerate(index.tolist()):
        chain = chain_names(table, tree, int(gpu.node[j])) if len(tree) else []
        kind = kinds[n] if kinds is not None else _kind(chain, table.name_of(int(gpu.row[j])))
        key = (kind, *chain)
        if key not in seen:
            seen[key] = context_of(kind, chain, ddp)
        out.append(seen[key])
    return out


def _kind(chain: list[str], kernel: str) -> str:
    for name in chain:
        if classify.classify_op(name) != classify.COMMUNICATION:
            break
        if (k := collective_kind(name)) != "other":
            return k
    return collective_kind(kernel)


def exposed_by_context(table: EventTable, tree: OpTree, gpu: GpuActivity, device: int,
                       window: tuple[int, int]) -> dict[str, int]:
    """Communication kernel time on ``device`` inside ``window`` with no computation (other
    kernels) beside it, by context (summed over kernels)."""
    kernel = table.cat[gpu.row] == Cat.KERNEL
    on = kernel & (table.device[gpu.row] == device)
    comm = on & (gpu.klass == classify.CLASS_INDEX[classify.COMMUNICATION])
    if not comm.any():
        return {}
    lo, hi = window
    start = np.clip(table.ts_ns[gpu.row], lo, hi)
    end = np.clip(table.ts_ns[gpu.row] + table.dur_ns[gpu.row], lo, hi)
    busy_s, busy_e = intervals.union(start[on & ~comm], end[on & ~comm])
    idx = np.flatnonzero(comm & (end > start))
    exposed = (end[idx] - start[idx]) - (_covered(busy_s, busy_e, end[idx])
                                         - _covered(busy_s, busy_e, start[idx]))
    idx, exposed = idx[exposed > 0], exposed[exposed > 0]
    if not len(idx):
        return {}
    out: dict[str, int] = {}
    for c, ns in zip(kernel_contexts(table, tree, gpu, idx), exposed.tolist(), strict=True):
        out[c] = out.get(c, 0) + int(ns)
    return out


def _covered(s: np.ndarray, e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Length of the disjoint sorted segments ``[s, e)`` before each time ``t``."""
    if not len(s):
        return np.zeros(len(t), dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(e - s)])
    i = np.searchsorted(s, t, side="right")  # segments starting at or before t
    part = np.where(i > 0, np.minimum(t, e[np.maximum(i - 1, 0)]) - s[np.maximum(i - 1, 0)], 0)
    return before[np.maximum(i - 1, 0)] * (i > 0) + np.maximum(part, 0)
