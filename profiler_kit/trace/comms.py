"""Communication events kept beside the event table, with the args that describe them.

The event table keeps no ``args``; a collective's metadata (``Collective name``,
``In msg nelems``, ``dtype``, ``Process Group Name``/``Ranks``, ``Seq``, and the
``Input Dims``/``Input type`` that gloo and older NCCL traces give instead) is needed
only for the few events that communicate. Those events are copied here whole, in a
small list of :class:`CommEvent`, so the analysis of collectives never rereads a trace.

An event is kept when its args name a collective, or when its name is one the
process-group backends write (``nccl:all_reduce``, ``gloo:send``, ``c10d::allreduce_``,
``record_param_comms``, ``ncclDevKernel_AllGather...``, ``ncclKernel_SendRecv...``).
"""

from __future__ import annotations

from typing import Any

import msgspec

# args keys copied for a communication event (absent keys are left out)
COMM_KEYS: dict[str, str] = {
    "collective": "Collective name",
    "in_nelems": "In msg nelems",
    "out_nelems": "Out msg nelems",
    "dtype": "dtype",
    "group_size": "Group size",
    "pg_name": "Process Group Name",
    "pg_desc": "Process Group Description",
    "pg_ranks": "Process Group Ranks",
    "seq": "Seq",
    "in_split": "In split size",
    "out_split": "Out split size",
    "input_dims": "Input Dims",
    "input_type": "Input type",
}

COMM_PREFIXES = ("nccl:", "gloo:", "mpi:", "ucc:", "c10d::", "record_param_comms",
                 "ncclKernel", "ncclDevKernel", "rcclKernel", "rcclDevKernel")
_EMPTY = msgspec.Raw(b"")


def is_comm_name(name: str) -> bool:
    """Whether an event of this name is a communication event, whatever its args say."""
    return name.startswith(COMM_PREFIXES)


class CommEvent(msgspec.Struct, frozen=True, gc=False):
    """One communication event of a trace: its timing, where it ran, and its args."""

    name: str
    cat: int  # Cat
    ts_ns: int
    dur_ns: int
    pid: int
    tid: int
    device: int  # -1 for CPU-side events
    stream: int
    correlation: int
    external_id: int
    args: dict[str, Any]  # the COMM_KEYS present, under their trace names


class CommArgs(msgspec.Struct, gc=False):
    """The COMM_KEYS as msgspec decodes them in the fast path: raw JSON, parsed later
    for communication events only (skipping a value costs nothing when it is absent).
    ``Input type`` is not here: the table reads it for every event (see ``schema.Args``)."""

    collective: msgspec.Raw = msgspec.field(default=_EMPTY, name="Collective name")
    in_nelems: msgspec.Raw = msgspec.field(default=_EMPTY, name="In msg nelems")
    out_nelems: msgspec.Raw = msgspec.field(default=_EMPTY, name="Out msg nelems")
    dtype: msgspec.Raw = msgspec.field(default=_EMPTY, name="dtype")
    group_size: msgspec.Raw = msgspec.field(default=_EMPTY, name="Group size")
    pg_name: msgspec.Raw = msgspec.field(default=_EMPTY, name="Process Group Name")
    pg_desc: msgspec.Raw = msgspec.field(default=_EMPTY, name="Process Group Description")
    pg_ranks: msgspec.Raw = msgspec.field(default=_EMPTY, name="Process Group Ranks")
    seq: msgspec.Raw = msgspec.field(default=_EMPTY, name="Seq")
    in_split: msgspec.Raw = msgspec.field(default=_EMPTY, name="In split size")
    out_split: msgspec.Raw = msgspec.field(default=_EMPTY, name="Out split size")
    input_dims: msgspec.Raw = msgspec.field(default=_EMPTY, name="Input Dims")
    # "Input type" is read by the table's own Args (as ``input_type``)


_DECODE = msgspec.json.Decoder()


def args_from_raw(a: CommArgs) -> dict[str, Any]:
    """The present COMM_KEYS of fast-path args, decoded (as the per-event path has them)."""
    out: dict[str, Any] = {}
    for attr, key in COMM_KEYS.items():
        raw = getattr(a, attr)
        if len(raw):
            try:
                out[key] = _DECODE.decode(raw)
            except (msgspec.DecodeError, UnicodeDecodeError):
                continue
    return out


def args_from_dict(args: dict[str, Any]) -> dict[str, Any]:
    """The present COMM_KEYS of a plain args object."""
    return {key: args[key] for key in COMM_KEYS.values() if key in args}
