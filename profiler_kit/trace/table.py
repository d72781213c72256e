"""The event table: the normalized, columnar form of one trace that every analysis reads.

One row per complete (``ph: "X"``) event, as parallel numpy columns; strings are
interned once in ``names``. Memory counter events (``[memory]`` instants) live in
their own table. Times are integer nanoseconds, so totals are exact sums.
No torch import here or anywhere under ``profiler_kit.trace``.
"""

from __future__ import annotations

import enum
from typing import Any

import msgspec
import numpy as np

from profiler_kit.trace.comms import CommEvent


class Cat(enum.IntEnum):
    """Normalized event category (current and legacy Kineto names map onto these)."""

    OTHER = 0
    CPU_OP = 1  # cpu_op, Operator
    KERNEL = 2  # kernel, Kernel
    MEMCPY = 3  # gpu_memcpy, Memcpy
    MEMSET = 4  # gpu_memset, Memset
    RUNTIME = 5  # cuda_runtime, cuda_driver, Runtime (also HIP runtime on AMD)
    USER_ANNOTATION = 6  # user_annotation (record_function on the CPU side)
    GPU_USER_ANNOTATION = 7  # gpu_user_annotation
    PYTHON_FUNCTION = 8  # python_function (with_stack)
    SYNC = 9  # cuda_sync
    OVERHEAD = 10  # overhead (profiler's own)


# Category names as they appear in traces, lower-cased, onto Cat.
CATEGORY_NAMES: dict[str, Cat] = {
    "cpu_op": Cat.CPU_OP,
    "operator": Cat.CPU_OP,
    "kernel": Cat.KERNEL,
    "gpu_memcpy": Cat.MEMCPY,
    "memcpy": Cat.MEMCPY,
    "gpu_memset": Cat.MEMSET,
    "memset": Cat.MEMSET,
    "cuda_runtime": Cat.RUNTIME,
    "cuda_driver": Cat.RUNTIME,
    "runtime": Cat.RUNTIME,
    "user_annotation": Cat.USER_ANNOTATION,
    "gpu_user_annotation": Cat.GPU_USER_ANNOTATION,
    "python_function": Cat.PYTHON_FUNCTION,
    "cuda_sync": Cat.SYNC,
    "overhead": Cat.OVERHEAD,
}

# Separator of the dtypes of one op in the interned ``Input type`` strings.
INPUT_TYPE_SEP = ", "

# Categories whose events run on a GPU (their ``device`` and ``stream`` columns are set).
GPU_CATS = (Cat.KERNEL, Cat.MEMCPY, Cat.MEMSET, Cat.GPU_USER_ANNOTATION)


class TraceMeta(msgspec.Struct):
    """What the trace says about where it came from (all optional in real traces)."""

    path: str
    schema_version: int | None = None
    device_properties: list[dict[str, Any]] = msgspec.field(default_factory=list)
    distributed_info: dict[str, Any] = msgspec.field(default_factory=dict)
    rank: int | None = None  # distributedInfo.rank when present
    base_time_ns: int | None = None  # baseTimeNanoseconds when present
    host_name: str | None = None  # the top-level host_name torch's profiler writes
    trace_name: str | None = None  # e.g. the worker name from the file name


class MemoryEvents(msgspec.Struct):
    """``[memory]`` instant events: one row per allocation (bytes > 0) or free (< 0)."""

    ts_ns: np.ndarray  # int64
    device_type: np.ndarray  # int8: 0 CPU, 1 CUDA (as torch's DeviceType)
    device_id: np.ndarray  # int32 (-1 for CPU)
    bytes: np.ndarray  # int64, signed
    total_allocated_bytes: np.ndarray  # int64 after this event (-1 when absent)
    total_reserved_bytes: np.ndarray  # int64 after this event (-1 when absent)
    tid: np.ndarray  # int64: the thread that allocated (to find the op that was running)
    addr: np.ndarray  # int64: the block's address (matches a free to its allocation), -1 absent

    def __len__(self) -> int:
        return len(self.ts_ns)


class RecordedInputs(msgspec.Struct, frozen=True, gc=False):
    """What ``record_shapes=True`` wrote in one op's ``args``, kept as raw JSON text.

    The loader only slices these out (no per-element Python work); an analysis decodes
    the few ops it needs with :meth:`EventTable.op_inputs`. Empty bytes: key absent.
    """

    dims: bytes  # "Input Dims": one shape (or a list of shapes for a TensorList) per input
    # "Input type": "float", "c10::BFloat16", "Scalar", ...; empty when the table's
    # ``input_type`` column holds it (the fast path), so it is not stored twice
    types: bytes = b""
    strides: bytes = b""  # "Input Strides"
    concrete: bytes = b""  # "Concrete Inputs": scalar arguments as strings ("1", "[16, 16]")


class OpInputs(msgspec.Struct, frozen=True):
    """The decoded :class:`RecordedInputs` of one op; a list is empty where it was absent
    or not a list, and the lists may differ in length (as traces write them)."""

    dims: list[Any]
    types: list[Any]
    strides: list[Any]
    concrete: list[Any]


def _json_list(raw: bytes) -> list[Any]:
    if not raw:
        return []
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return []
    return value if isinstance(value, list) else []


class KernelLaunches(msgspec.Struct):
    """What Kineto wrote about each kernel's launch (CUPTI's figures), one entry per kernel
    row, rows ascending. Absent values are NaN (floats) or -1 (integers): AMD traces and
    older Kineto write some or none of them.
    """

    row: np.ndarray  # int64: the kernel's row in the event table
    blocks_per_sm: np.ndarray  # float64 "blocks per SM": grid blocks / the device's SMs
    warps_per_sm: np.ndarray  # float64 "warps per SM"
    occupancy_pct: np.ndarray  # float64 "est. achieved occupancy %" (0-100)
    registers: np.ndarray  # int64 "registers per thread"
    shared_memory_bytes: np.ndarray  # int64 "shared memory" per block (static + dynamic)
    grid_blocks: np.ndarray  # int64 product of "grid"
    block_threads: np.ndarray  # int64 product of "block"

    def __len__(self) -> int:
        return len(self.row)


class CounterSamples(msgspec.Struct):
    """Counter (``"C"``) events: sampled GPU counters such as power, clocks, SM activity.

    One row per sample, sorted by time; ``series`` indexes ``names`` (the counter's name,
    ``"Power (W)"``), ``device`` is the GPU the sample is of (-1 where the trace does not
    say: PyTorch puts a GPU's counters on a ``"GPU N Counters"`` process).
    """

    names: list[str]
    ts_ns: np.ndarray  # int64
    device: np.ndarray  # int32
    series: np.ndarray  # int32
    value: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.ts_ns)


def counter_samples(rows: list[tuple[int, int, str, float]]) -> CounterSamples:
    """The samples of ``(ts_ns, device, name, value)`` rows, sorted by time (stably)."""
    names: dict[str, int] = {}
    series = [names.setdefault(name, len(names)) for _, _, name, _ in rows]
    ts = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    order = np.argsort(ts, kind="stable")
    return CounterSamples(
        names=list(names), ts_ns=ts[order],
        device=np.fromiter((r[1] for r in rows), dtype=np.int32, count=len(rows))[order],
        series=np.asarray(series, dtype=np.int32).reshape(-1)[order],
        value=np.fromiter((r[3] for r in rows), dtype=np.float64, count=len(rows))[order])


class EventTable(msgspec.Struct):
    """All complete events of one trace, columnar. Rows are sorted by ``ts_ns``.

    ``device``, ``stream`` are -1 for CPU-side events; ``correlation`` and
    ``external_id`` are -1 where the trace gives none. ``pid``/``tid`` are the
    trace's own, with string pids/tids mapped to stable negative integers.
    """

    meta: TraceMeta
    names: list[str]  # interned event names; column ``name`` indexes into it
    cat: np.ndarray  # int8 (Cat)
    name: np.ndarray  # int32
    ts_ns: np.ndarray  # int64, start
    dur_ns: np.ndarray  # int64, >= 0
    pid: np.ndarray  # int64
    tid: np.ndarray  # int64
    device: np.ndarray  # int32
    stream: np.ndarray  # int64
    correlation: np.ndarray  # int64
    external_id: np.ndarray  # int64
    memory: MemoryEvents
    # (pid, tid) -> name
    thread_names: dict[tuple[int, int], str] = msgspec.field(default_factory=dict)
    process_names: dict[int, str] = msgspec.field(default_factory=dict)  # pid -> name
    # reason -> number of events skipped
    skipped: dict[str, int] = msgspec.field(default_factory=dict)
    # reason -> number of events kept after a fix (e.g. "unknown category: foo" kept as OTHER,
    # args that are not an object); these rows are in the table, unlike ``skipped``
    normalized: dict[str, int] = msgspec.field(default_factory=dict)
    # row -> the shapes, dtypes, strides and scalar arguments of a cpu_op row that has
    # "Input Dims" (traces recorded with shapes); empty for traces without them
    inputs: dict[int, RecordedInputs] = msgspec.field(default_factory=dict)
    # row -> (wait_on_stream, correlation of the cudaEventRecord waited on) of the cuda_sync
    # rows that carry them ("Stream Wait Event", "Event Sync"); the critical path's
    # cross-stream edges read it
    event_waits: dict[int, tuple[int, int]] = msgspec.field(default_factory=dict)
    # args["Input type"] of each row (traces recorded with shapes): an index into ``names``
    # of the dtypes joined by ", " (``"c10::BFloat16, c10::BFloat16, "``), -1 where absent;
    # None when the table was built without the column. Precision reads it.
    input_type: np.ndarray | None = None  # int32
    # autograd's "Sequence number" and "Fwd thread id" of each cpu_op row (-1 where absent;
    # a backward op carries its forward op's number and a forward thread id > 0), and the
    # "CallFrom" line of each python_function row (an index into ``names``, -1 where
    # absent); None when the table was built without them. The code view reads them.
    seq_nr: np.ndarray | None = None  # int64
    fwd_tid: np.ndarray | None = None  # int32
    call_from: np.ndarray | None = None  # int32
    # communication events with their args (collective, sizes, process group), by start
    comms: list[CommEvent] = msgspec.field(default_factory=list)
    # sampled counters ("C" events: GPU power, clocks, SM active %); None: the trace has none
    counters: CounterSamples | None = None
    # the kernels' launch figures (blocks per SM, occupancy, registers, ...); None when the
    # table was built without them
    launches: KernelLaunches | None = None

    def input_type_of(self, row: int) -> list[str] | None:
        """The ``Input type`` list of ``row`` (None where the trace recorded none)."""
        if self.input_type is None or self.input_type[row] < 0:
            return None
        return self.names[int(self.input_type[row])].split(INPUT_TYPE_SEP)

    def __len__(self) -> int:
        return len(self.ts_ns)

    def rows(self, cat: Cat) -> np.ndarray:
        """Indices of the rows in category ``cat``."""
        return np.flatnonzero(self.cat == cat)

    def name_of(self, row: int) -> str:
        return self.names[int(self.name[row])]

    def op_inputs(self, row: int) -> OpInputs | None:
        """The recorded inputs of ``row``, decoded; None when the trace has none for it."""
        raw = self.inputs.get(row)
        if raw is None:
            return None
        if raw.types:
            types = _json_list(raw.types)
        else:  # the fast path leaves "Input type" to the interned column
            types = self.input_type_of(row) or []
        return OpInputs(_json_list(raw.dims), types, _json_list(raw.strides),
                        _json_list(raw.concrete))
