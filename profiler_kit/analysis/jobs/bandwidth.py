"""Collective types, message sizes and bandwidth, with the nccl-tests conventions.

nccl-tests (``doc/PERFORMANCE.md``) reports for a collective of ``size`` bytes that
took ``time``: the algorithm bandwidth ``algbw = size / time`` and the bus bandwidth
``busbw = algbw * factor``, where the factor makes the number comparable to the
hardware's link speed whatever the group size ``n``:

==================  =============  ======================================
collective          factor         ``size``
==================  =============  ======================================
all-reduce          2 (n - 1) / n  the buffer
reduce-scatter      (n - 1) / n    the whole (larger) buffer: n x each rank's output
all-gather          (n - 1) / n    the whole (larger) buffer: n x each rank's input
all-to-all          (n - 1) / n    each rank's whole send buffer
broadcast, reduce   1              the buffer
send, recv          1              the message
==================  =============  ======================================
"""

from __future__ import annotations

from profiler_kit.analysis.core.collective_kinds import (
    ALLGATHER,
    ALLREDUCE,
    ALLTOALL,
    BROADCAST,
    P2P,
    REDUCE,
    REDUCE_SCATTER,
)


def bus_factor(kind: str, group_size: int) -> float | None:
    """nccl-tests' bus bandwidth factor for ``kind`` on ``group_size`` ranks (None: none)."""
    n = group_size
    if n < 1:
        return None
    if kind == ALLREDUCE:
        return 2 * (n - 1) / n
    if kind in (REDUCE_SCATTER, ALLGATHER, ALLTOALL):
        return (n - 1) / n
    if kind in (BROADCAST, REDUCE) or kind in P2P:
        return 1.0
    return None


def message_bytes(kind: str, in_bytes: int | None, out_bytes: int | None,
                  group_size: int | None) -> int | None:
    """nccl-tests' ``size`` of one collective from what a trace says of its buffers.

    Kineto's ``In``/``Out msg nelems`` give both buffers (the larger is the size); a
    gloo or older NCCL span gives only its input, and the output follows from the type.
    """
    if in_bytes is not None and out_bytes is not None:
        return max(in_bytes, out_bytes)
    known = in_bytes if in_bytes is not None else out_bytes
    if known is None:
        return None
    if in_bytes is not None and kind == ALLGATHER and group_size:
        return in_bytes * group_size
    return known


def algbw_bytes_per_s(size_bytes: int | None, time_ns: int) -> float | None:
    """Algorithm bandwidth in bytes per second (None when unknown or the time is 0)."""
    if size_bytes is None or time_ns <= 0:
        return None
    return size_bytes * 1e9 / time_ns


def busbw_bytes_per_s(kind: str, size_bytes: int | None, time_ns: int,
                      group_size: int | None) -> float | None:
    """Bus bandwidth in bytes per second: algbw x :func:`bus_factor`."""
    alg = algbw_bytes_per_s(size_bytes, time_ns)
    factor = bus_factor(kind, group_size) if group_size else None
    if alg is None or factor is None:
        return None
    return alg * factor


# bytes per element of the dtype names traces write: ``dtype`` args (c10 ScalarType
# names) and ``Input type`` (C++ type names)
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "double": 8, "half": 2, "bfloat16": 2, "long": 8, "int": 4, "short": 2,
    "char": 1, "byte": 1, "bool": 1, "complexfloat": 8, "complexdouble": 16,
    "complexhalf": 4, "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
    "float8_e5m2fnuz": 1, "uint16": 2, "uint32": 4, "uint64": 8,
    "c10::half": 2, "c10::bfloat16": 2, "long int": 8, "unsigned char": 1,
    "signed char": 1, "short int": 2, "int64_t": 8, "int32_t": 4, "int16_t": 2,
    "int8_t": 1, "uint8_t": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
    "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1, "unsigned int": 4,
    "unsigned long": 8, "long long": 8, "unsigned short": 2,
}


def dtype_bytes(name: object) -> int | None:
    """Bytes per element of a trace's dtype name, or None when it is not one we know."""
    if not isinstance(name, str):
        return None
    return DTYPE_BYTES.get(name.strip().lower())
