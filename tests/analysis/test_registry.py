"""The registry of analyses: ``TraceAnalysis`` has one field per registered analysis, in
registration order, so an analysis registered anywhere (here, in a test) is a field of the
result and a key of its JSON without an edit to trace_analysis.py; each analysis is a
documented function, and each field is in the JSON reference (docs/analysis-json.md, or
its analysis's own page)."""

from __future__ import annotations

import json
import pickle

import msgspec
import pytest
from analysis_tables import kernel, launch, make_table, op
from json_docs import trace_object_fields

from profiler_kit.analysis.registry import TraceContext
from profiler_kit.analysis.time.busy import Timeline
from profiler_kit.analysis.trace_analysis import ANALYSES, TraceAnalysis, analyze_table
from profiler_kit.render.json.analysis import dumps, trace_document
from profiler_kit.render.sections import PRESENTERS
from profiler_kit.trace.table import Cat


def _table():
    """Two steps, each an op launching one 40 ns kernel."""
    events = []
    for i in range(2):
        t0 = i * 100
        events += [op(f"ProfilerStep#{i}", t0, 100, cat=Cat.USER_ANNOTATION),
                   op("aten::mm", t0 + 10, 50), launch(t0 + 20, corr=i + 1),
                   kernel("gemm", t0 + 30, 40, corr=i + 1)]
    return make_table(events)


class BusyPerKernel(msgspec.Struct, frozen=True):
    kernels: int
    busy_ns_per_kernel: float | None


@pytest.fixture
def extra_analysis():
    """``busy_per_kernel`` registered as a new analysis would be, for one test; it reads
    the ``timeline`` analysis by name."""
    calls = []

    @ANALYSES.register("busy_per_kernel", BusyPerKernel | None, default=None)
    def busy_per_kernel(ctx: TraceContext) -> BusyPerKernel | None:
        """GPU busy time per GPU activity, in ``window``."""
        calls.append(ctx.table)
        timeline: Timeline = ctx.result("timeline")
        n = len(ctx.gpu)
        return BusyPerKernel(n, timeline.busy_ns / n if n else None)

    try:
        yield calls
    finally:
        ANALYSES.unregister("busy_per_kernel")


def test_a_registered_analysis_is_a_field_of_the_result_and_a_key_of_its_json(
        extra_analysis):
    a = analyze_table(_table())
    assert type(a).__name__ == "TraceAnalysis" and type(a) is not TraceAnalysis
    assert type(a).__struct_fields__ == (*TraceAnalysis.__struct_fields__, "busy_per_kernel")
    assert a.busy_per_kernel == BusyPerKernel(2, a.timeline.busy_ns / 2)
    assert len(extra_analysis) == 1  # computed once
    assert a.window == "steps" and a.timeline.busy_ns == 80
    doc = trace_document(a)
    assert list(doc)[-1] == "busy_per_kernel"
    assert doc["busy_per_kernel"] == {"kernels": 2, "busy_ns_per_kernel": 40.0}
    assert json.loads(dumps([a], None))["traces"][0]["busy_per_kernel"]["kernels"] == 2
    # what the other fields hold is what they held without it
    plain = analyze_table(_table())
    assert msgspec.to_builtins(a)["timeline"] == msgspec.to_builtins(plain)["timeline"]


def test_unregistering_gives_back_the_same_struct():
    @ANALYSES.register("events_again", int, default=0)
    def events_again(ctx: TraceContext) -> int:
        """The rows of the event table, again."""
        return len(ctx.table)

    try:
        assert ANALYSES.struct() is not TraceAnalysis
    finally:
        ANALYSES.unregister("events_again")
    assert ANALYSES.struct() is TraceAnalysis
    assert type(analyze_table(_table())) is TraceAnalysis


def test_a_name_is_registered_once_and_never_hides_a_property():
    with pytest.raises(ValueError, match="registered already"):
        ANALYSES.register("timeline", Timeline)
    with pytest.raises(ValueError, match="cannot name"):
        ANALYSES.register("has_gpu", bool)


def test_analyses_that_need_each_other_are_named():
    @ANALYSES.register("chicken", int, default=0)
    def chicken(ctx: TraceContext) -> int:
        """Needs the egg."""
        return ctx.result("egg")

    @ANALYSES.register("egg", int, default=0)
    def egg(ctx: TraceContext) -> int:
        """Needs the chicken."""
        return ctx.result("chicken")

    try:
        with pytest.raises(ValueError, match="chicken -> egg -> chicken"):
            analyze_table(_table())
    finally:
        ANALYSES.unregister("chicken")
        ANALYSES.unregister("egg")


def test_fields_follow_registration_order_and_keep_their_types():
    fields = msgspec.structs.fields(TraceAnalysis)
    assert [f.name for f in fields] == [a.name for a in ANALYSES]
    assert [f.type for f in fields] == [a.type for a in ANALYSES]
    # grouped: the trace itself, the window's figures, the whole trace's, the findings
    names = [f.name for f in fields]
    assert names[0] == "path" and names[-3:] == ["recommendations", "held_back", "notes"]
    assert names.index("window") < names.index("steps") < names.index("trace_gpu") \
        < names.index("recommendations")


def test_every_analysis_is_a_documented_function():
    undocumented = [a.name for a in ANALYSES if not (a.function.__doc__ or "").strip()]
    assert not undocumented


def test_the_result_travels_between_processes_and_keeps_its_properties():
    a = analyze_table(_table())
    assert pickle.loads(pickle.dumps(a)) == a  # worker pools hand it back pickled
    assert a.has_gpu and a.gpu.count == 2
    with pytest.raises(AttributeError):
        a.gpu = None  # frozen


def test_every_field_has_one_presenter_and_its_keys_are_documented():
    """Each field of TraceAnalysis is presented by exactly one presenter, and every key of
    a trace object (on a GPU trace with modules, stacks and SM figures, and a CPU one) is
    in docs/analysis-json.md."""
    from real_traces import analysis

    owners = [f for p in PRESENTERS for f in p.fields]
    assert sorted(owners) == sorted(TraceAnalysis.__struct_fields__)
    documented = trace_object_fields()
    for name in ("h100_bert_small.json.gz", "cpu_only_gloo.json.gz"):
        keys = set(trace_document(analysis(name)))
        assert keys - documented == set(), name


def test_the_declared_struct_is_the_registrations():
    """TraceAnalysis is written out with each field's type (an editor resolves ``a.sm`` to
    SmOccupancy); the registrations fill it, field for field, type for type, default for
    default; a registration it lacks gets a Struct made for it instead."""
    import typing

    assert ANALYSES.declared_matches() and ANALYSES.struct() is TraceAnalysis
    hints = typing.get_type_hints(TraceAnalysis)
    from profiler_kit.analysis.perf.sm_occupancy import SmOccupancy

    assert hints["sm"] == SmOccupancy | None
    assert [a.name for a in ANALYSES] == list(TraceAnalysis.__struct_fields__)

    @ANALYSES.register("events_twice", int, default=0)
    def _events_twice(ctx: TraceContext) -> int:
        return 2 * len(ctx.table)

    try:
        assert not ANALYSES.declared_matches()
        made = ANALYSES.struct()
        assert made is not TraceAnalysis and "events_twice" in made.__struct_fields__
    finally:
        ANALYSES.unregister("events_twice")
    assert ANALYSES.struct() is TraceAnalysis
