"""The collective types profkit names, read from a call's, span's or kernel's name."""

from __future__ import annotations

import re

# the collective types profkit names; anything else is "other" (no bus factor)
ALLREDUCE = "allreduce"
REDUCE_SCATTER = "reduce_scatter"
ALLGATHER = "allgather"
ALLTOALL = "alltoall"
BROADCAST = "broadcast"
REDUCE = "reduce"
SEND = "send"
RECV = "recv"
SENDRECV = "sendrecv"
BARRIER = "barrier"
GATHER = "gather"
SCATTER = "scatter"
OTHER = "other"
P2P = frozenset({SEND, RECV, SENDRECV})

# searched in order in the lower-cased name without "_" (reducescatter before reduce, ...)
_KINDS = (
    ("allreduce", ALLREDUCE),
    ("reducescatter", REDUCE_SCATTER),
    ("allgather", ALLGATHER),
    ("alltoall", ALLTOALL),
    ("broadcast", BROADCAST),
    ("sendrecv", SENDRECV),
    ("barrier", BARRIER),
    ("send", SEND),
    ("recv", RECV),
    ("reduce", REDUCE),
    ("gather", GATHER),
    ("scatter", SCATTER),
)
_PREFIX = re.compile(r"^(nccl|gloo|mpi|ucc|c10d|rccl)(dev)?(kernel)?[:_]*", re.IGNORECASE)


def collective_kind(name: str) -> str:
    """The collective type of ``Collective name`` args (``allreduce``, ``_allgather_base``,
    ``reduce_scatter_tensor_coalesced``), a backend's span (``gloo:all_reduce``,
    ``nccl:_all_gather_base``) or an NCCL/RCCL kernel (``ncclDevKernel_AllGather_RING_LL``)."""
    flat = _PREFIX.sub("", name.strip()).lower().replace("_", "")
    flat = flat.split("(")[0]
    for key, kind in _KINDS:
        if key in flat:
            return kind
    return OTHER
