"""The trace JSON as msgspec decodes it, and the decoders.

The typed structs declare only the fields the table needs, so msgspec skips the rest
in C. Absent fields take sentinels, so the columns need no per-event Python; a value
of another type fails validation and sends the events to the per-event rules, which
decode with ``UNTYPED`` into plain dicts and lists.
"""

from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any, Union

import msgspec

from profiler_kit.errors import TraceError
from profiler_kit.trace.comms import CommArgs
from profiler_kit.trace.normalize import INT64_MIN

ABSENT = INT64_MIN  # stands for a field the event does not have
NAN = float("nan")  # stands for a float field the event does not have
NO_RAW = msgspec.Raw()  # an absent shape field (empty JSON text)


class Args(CommArgs, gc=False):
    """The ``args`` of a complete event that the table uses (and, for communication
    events, those :mod:`profiler_kit.trace.comms` keeps); others are skipped in C.

    Absent fields take sentinels (so a literal -2**63 in these fields reads as absent);
    an explicit ``null`` fails validation and sends the piece to the per-event path.
    """

    device: int = ABSENT
    stream: int | str = ABSENT  # HIP runtime events write "0x0"
    correlation: int = -1
    external_id: int = msgspec.field(default=ABSENT, name="External id")
    external_id_legacy: int = msgspec.field(default=-1, name="external id")
    # record_shapes=True: kept as raw JSON text, sliced out in C and decoded only on use
    # ("Input type" once per distinct text, for the column precision reads)
    input_type: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input type")
    input_dims: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input Dims")
    input_dims_legacy: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input dims")  # <= 1.8
    input_strides: msgspec.Raw = msgspec.field(default=NO_RAW, name="Input Strides")
    concrete_inputs: msgspec.Raw = msgspec.field(default=NO_RAW, name="Concrete Inputs")
    # a "Stream Wait Event" (cuda_sync): the stream and the cudaEventRecord it waits on
    wait_on_stream: int = ABSENT
    wait_on_record: int = msgspec.field(default=ABSENT,
                                        name="wait_on_cuda_event_record_corr_id")
    # autograd's link of a backward op to the forward op that made it (cpu_op rows), and
    # the calling line of a Python frame (python_function rows, with_stack)
    sequence_number: int = msgspec.field(default=ABSENT, name="Sequence number")
    fwd_thread_id: int = msgspec.field(default=ABSENT, name="Fwd thread id")
    call_from: str = msgspec.field(default="", name="CallFrom")
    # a kernel's launch (KernelLaunches): floats NaN and ints ABSENT when absent
    blocks_per_sm: float = msgspec.field(default=NAN, name="blocks per SM")
    warps_per_sm: float = msgspec.field(default=NAN, name="warps per SM")
    occupancy_pct: float = msgspec.field(default=NAN, name="est. achieved occupancy %")
    registers: int = msgspec.field(default=ABSENT, name="registers per thread")
    shared_memory: int = msgspec.field(default=ABSENT, name="shared memory")
    grid: list[int] | None = None
    block: list[int] | None = None


class OtherArgs(msgspec.Struct, gc=False):
    """The ``args`` of metadata and ``[memory]`` events (checked one by one later)."""

    label: Any = msgspec.field(default=None, name="name")
    nbytes: Any = msgspec.field(default=None, name="Bytes")
    total_allocated: Any = msgspec.field(default=None, name="Total Allocated")
    total_reserved: Any = msgspec.field(default=None, name="Total Reserved")
    addr: Any = msgspec.field(default=None, name="Addr")
    device_type: Any = msgspec.field(default=None, name="Device Type")
    device_id: Any = msgspec.field(default=None, name="Device Id")


class Complete(msgspec.Struct, tag_field="ph", tag="X", gc=False):
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: float | None = None  # JSON integers arrive as floats; exact below 2**53
    dur: float | None = None
    args: Args = msgspec.field(default_factory=Args)


class Instant(msgspec.Struct, tag_field="ph", tag="i", gc=False):
    name: str | None = None
    pid: Any = None
    tid: Any = None
    ts: Any = None
    args: OtherArgs | None = None


class InstantUpper(Instant, tag="I"):
    pass


class Metadata(Instant, tag="M"):
    pass


class FlowStart(msgspec.Struct, tag_field="ph", tag="s", gc=False):
    pass


class FlowEnd(FlowStart, tag="f"):
    pass


class FlowStep(FlowStart, tag="t"):
    pass


class CounterEvent(msgspec.Struct, tag_field="ph", tag="C", gc=False):
    name: Any = None
    pid: Any = None
    ts: Any = None
    args: Any = None


# checked with the per-event rules
ONE_BY_ONE = frozenset({Instant, InstantUpper, Metadata, CounterEvent})

# Chrome trace phases the table does not use: decoded without fields, counted as skipped
# (as the per-event rules do), so a counter or an async span does not send a piece there
UNSUPPORTED_PHASES = ("B", "E", "b", "n", "e", "S", "T", "p", "F", "P", "N", "O", "D",
                      "V", "v", "R", "c", "(", ")")
PHASE_OF_UNSUPPORTED = {msgspec.defstruct(f"Phase{i}", [], tag_field="ph", tag=ph, gc=False): ph
                        for i, ph in enumerate(UNSUPPORTED_PHASES)}
Event = Union[  # noqa: UP007 - built from a tuple of types
    (Complete, Instant, InstantUpper, Metadata, CounterEvent, FlowStart, FlowEnd, FlowStep,
     *PHASE_OF_UNSUPPORTED)]


class Document(msgspec.Struct, gc=False):
    """A whole trace: its events, and the top-level keys ``meta_from_header`` reads."""

    events: list[Event] | None = msgspec.field(default=None, name="traceEvents")
    schema_version: Any = msgspec.field(default=None, name="schemaVersion")
    device_properties: Any = msgspec.field(default=None, name="deviceProperties")
    distributed_info: Any = msgspec.field(default=None, name="distributedInfo")
    base_time_ns: Any = msgspec.field(default=None, name="baseTimeNanoseconds")
    host_name: Any = None

    def header(self) -> dict[str, Any]:
        return {"schemaVersion": self.schema_version, "deviceProperties": self.device_properties,
                "distributedInfo": self.distributed_info,
                "baseTimeNanoseconds": self.base_time_ns, "host_name": self.host_name}


TYPED = msgspec.json.Decoder(list[Event])  # other phases: ValidationError, per-event path
DOCUMENT = msgspec.json.Decoder(Document)
UNTYPED = msgspec.json.Decoder()


def decode_json(decoder: Any, data: bytes | memoryview) -> Any:
    """``decoder.decode(data)``, with invalid UTF-8 replaced (see :func:`utf8_replaced`)
    rather than fatal."""
    try:
        return decoder.decode(data)
    except UnicodeDecodeError:  # msgspec before 0.23
        return decoder.decode(utf8_replaced(data))
    except msgspec.DecodeError as e:  # 0.23 and later: "Invalid UTF-8 encoded string"
        if "UTF-8" not in str(e):
            raise
        return decoder.decode(utf8_replaced(data))


def decode_untyped(data: bytes | memoryview) -> Any:
    """Plain JSON values; numbers beyond float range, which msgspec rejects, via Python."""
    try:
        return decode_json(UNTYPED, data)
    except msgspec.ValidationError:
        import json

        return json.loads(utf8_replaced(data))


def decode_whole(path: Path, data: bytes) -> dict[str, Any]:
    """Decode a complete trace document and check it is one; TraceError otherwise."""
    if not data.strip():
        raise TraceError(f"{path}: empty file")
    try:
        doc = decode_json(UNTYPED, data)
    except msgspec.ValidationError:
        doc = _decode_python(path, data)  # numbers beyond float range: Python's json copes
    except (msgspec.DecodeError, RecursionError) as e:
        raise TraceError(f"{path}: {json_problem(e)}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise TraceError(f"{path}: not a torch.profiler trace (no traceEvents list)")
    return doc


def _decode_python(path: Path, data: bytes) -> Any:
    import json

    try:
        return json.loads(utf8_replaced(data))
    except (ValueError, RecursionError) as e:
        raise TraceError(f"{path}: not valid JSON ({e})") from None


def utf8_replaced(data: bytes | memoryview) -> bytes:
    """``data`` with each byte that is not valid UTF-8 replaced by ``?``: one byte for one,
    so the offsets in a decode error still point into the file (the piece reader finds
    the end of the event list by them)."""
    return bytes(data).decode("utf-8", _ONE_FOR_ONE).encode("utf-8")


def _one_question_mark_per_byte(err: UnicodeDecodeError) -> tuple[str, int]:
    return "?" * (err.end - err.start), err.end


_ONE_FOR_ONE = "profkit.one-for-one"
codecs.register_error(_ONE_FOR_ONE, _one_question_mark_per_byte)


def json_problem(e: BaseException) -> str:
    """One line saying what is wrong with the JSON msgspec (or Python) could not decode."""
    msg = str(e)
    if isinstance(e, RecursionError):
        return "not valid JSON (nested too deeply)"
    if "truncated" in msg:
        return "truncated JSON (the file ends in the middle of the data)"
    return f"not valid JSON ({msg})"
