"""The named analyses of one trace, and the context they share.

An analysis is a function of one :class:`TraceContext`, registered under the name of the
field it fills, with the field's type (and default): ``Registry.register`` is used as a
decorator. The registrations make the result's Struct: one field per analysis, in
registration order (:meth:`Registry.struct`). The Struct is also written out with its
types (:meth:`Registry.declare`), so that an editor and a type checker know each field;
while the registrations match it, it is the one used, and one registered beside it (a
test's, a plugin's) gets a Struct made for it.
:func:`profiler_kit.analysis.trace_analysis.analyze_table` runs the registry of
``TraceAnalysis``.

The context holds the inputs (the event table, the label, ``top``, Inductor's provenance)
and computes what several analyses share (the op tree, the GPU activities and how they
were linked, the steps, the mask of the activities launched in the steps, the windows)
once, on first use. An analysis asks for another's result by name
(:meth:`TraceContext.result`), computed once whichever asks first; a value shared by a
few analyses but no field of the result is a function of the context given to
:meth:`TraceContext.memo`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

import msgspec
import numpy as np

from profiler_kit.analysis.code.provenance import Provenance
from profiler_kit.analysis.core.launch_links import GpuActivity, attribute_gpu
from profiler_kit.analysis.core.op_tree import OpTree, build_op_tree
from profiler_kit.analysis.core.steps import Steps, analyze_steps, cpu_steps, step_of_activities
from profiler_kit.analysis.time.unrecorded_activity import MissingGpuActivity, missing_gpu_activity
from profiler_kit.trace.table import EventTable, TraceMeta

T = TypeVar("T")
Fn = TypeVar("Fn", bound=Callable[["TraceContext"], Any])


@dataclass(frozen=True, eq=False)
class Analysis:
    """One registered analysis: the field ``name`` of type ``type``, which ``function``
    fills from the context (``default``: the field's default, where it has one)."""

    name: str
    type: Any
    function: Callable[[TraceContext], Any]
    default: Any = msgspec.NODEFAULT


class Registry:
    """Named analyses in registration order, and the frozen Struct they fill: named
    ``struct_name``, in ``module``, with ``base``'s methods and properties."""

    def __init__(self, struct_name: str, base: type[msgspec.Struct], module: str) -> None:
        self._struct_name = struct_name
        self._base = base
        self._module = module
        self._analyses: dict[str, Analysis] = {}
        # one Struct per set of registrations: the same registrations give the same type
        self._structs: dict[tuple[Analysis, ...], type[msgspec.Struct]] = {}
        self._declared: type[msgspec.Struct] | None = None

    def declare(self, struct: type[msgspec.Struct]) -> None:
        """The Struct written out for the registrations as they are (so an editor knows
        each field's type): :meth:`struct` gives it while the registrations match it."""
        self._declared = struct

    def declared_matches(self) -> bool:
        """Whether the declared Struct has the registrations' fields: names in order, types
        and defaults."""
        if self._declared is None:
            return False
        fields = [(f.name, f.type, f.default) for f in msgspec.structs.fields(self._declared)]
        return fields == [(a.name, a.type, a.default) for a in self._analyses.values()]

    def register(self, name: str, type_: Any, *, default: Any = msgspec.NODEFAULT
                 ) -> Callable[[Fn], Fn]:
        """Register the decorated function as the analysis that fills field ``name``."""
        if not name.isidentifier() or name.startswith("_") or hasattr(self._base, name):
            raise ValueError(f"{name!r} cannot name a field of {self._struct_name}")
        if name in self._analyses:
            raise ValueError(f"an analysis named {name!r} is registered already")

        def add(function: Fn) -> Fn:
            self._analyses[name] = Analysis(name, type_, function, default)
            return function

        return add

    def unregister(self, name: str) -> None:
        """Remove the analysis ``name`` (its field leaves the Struct)."""
        del self._analyses[name]

    def __iter__(self) -> Iterator[Analysis]:
        return iter(tuple(self._analyses.values()))

    def __len__(self) -> int:
        return len(self._analyses)

    def __getitem__(self, name: str) -> Analysis:
        return self._analyses[name]

    def struct(self) -> type[msgspec.Struct]:
        """The frozen Struct with one field per analysis, in registration order."""
        key = tuple(self._analyses.values())
        found = self._structs.get(key)
        if found is None and self.declared_matches():
            found = self._structs[key] = self._declared  # type: ignore[assignment]
        if found is None:
            fields = [(a.name, a.type) if a.default is msgspec.NODEFAULT
                      else (a.name, a.type, a.default) for a in key]
            # keyword-only: a field with a default may come before one without
            found = msgspec.defstruct(self._struct_name, fields, bases=(self._base,),
                                      module=self._module, frozen=True, kw_only=True)
            found.__doc__ = self._base.__doc__
            self._structs[key] = found
        return found

    def analyze(self, table: EventTable, label: str | None = None, top: int = 5,
                provenance: Provenance | None = None, min_gain_pct: float = 0.0,
                items_per_step: int | None = None) -> Any:
        """Every analysis on ``table``, as the Struct (see :class:`TraceContext`)."""
        return self.fill(TraceContext(self, table, label=label, top=top,
                                      provenance=provenance, min_gain_pct=min_gain_pct,
                                      items_per_step=items_per_step))

    def fill(self, ctx: TraceContext) -> Any:
        """Every analysis of ``ctx``, as the Struct: a caller that keeps the context (the
        notebook's tables) reuses what the analyses computed on the way."""
        struct = self.struct()
        return struct(**{a.name: ctx.result(a.name) for a in self._analyses.values()})


class TraceContext:
    """One trace's inputs and the values its analyses share, each computed once.

    ``label`` is the label the caller gave (None: none; the analysis ``label`` falls back
    to the trace's name), ``top`` how many names the tables list, ``provenance``
    Inductor's, saved beside the trace of a compiled model, ``min_gain_pct`` the predicted
    gain (percent) under which a recommendation is held back, ``items_per_step`` what one
    step processes where the run that wrote the trace says (None: unknown).
    """

    def __init__(self, registry: Registry, table: EventTable, label: str | None = None,
                 top: int = 5, provenance: Provenance | None = None,
                 min_gain_pct: float = 0.0, items_per_step: int | None = None) -> None:
        self.table = table
        self.items_per_step = items_per_step
        self.label = label
        self.top = top
        self.provenance = provenance
        self.min_gain_pct = min_gain_pct
        self._registry = registry
        self._results: dict[str, Any] = {}
        self._running: list[str] = []
        self._memo: dict[Callable[[TraceContext], Any], Any] = {}

    def result(self, name: str) -> Any:
        """The result of the analysis ``name``, computed on first use."""
        try:
            return self._results[name]
        except KeyError:
            pass
        if name in self._running:
            raise ValueError("analyses that need each other: "
                             + " -> ".join([*self._running, name]))
        function = self._registry[name].function
        self._running.append(name)
        try:
            value = function(self)
        finally:
            self._running.pop()
        self._results[name] = value
        return value

    def memo(self, function: Callable[[TraceContext], T]) -> T:
        """``function(self)``, computed once: a value a few analyses share."""
        try:
            return self._memo[function]  # type: ignore[no-any-return]
        except KeyError:
            value = self._memo[function] = function(self)
            return value

    @property
    def meta(self) -> TraceMeta:
        return self.table.meta

    @cached_property
    def tree(self) -> OpTree:
        """The CPU ops nested per thread."""
        return build_op_tree(self.table)

    @cached_property
    def gpu(self) -> GpuActivity:
        """Every GPU activity (kernel, memcpy, memset), linked to the op that launched it
        and classed."""
        return attribute_gpu(self.table, self.tree)

    @cached_property
    def missing(self) -> MissingGpuActivity | None:
        """What shows GPU work whose activities went unrecorded (None: not so)."""
        return missing_gpu_activity(self.table, self.gpu)

    @cached_property
    def steps(self) -> Steps:
        """The steps; without their breakdown where the GPU's work went unrecorded (a split
        without it says nothing of the step)."""
        steps = analyze_steps(self.table, self.gpu)
        if self.missing is not None:
            steps = msgspec.structs.replace(steps, breakdown=None, steps=tuple(
                msgspec.structs.replace(st, breakdown=None) for st in steps.steps))
        return steps

    @cached_property
    def _in_steps(self) -> tuple[np.ndarray | None, bool]:
        if self.steps.source != "ProfilerStep":
            return None, False
        in_steps = step_of_activities(self.table, self.gpu, cpu_steps(self.table)) >= 0
        if len(self.gpu) and not in_steps.any():
            return None, True  # nothing to tell the steps' work apart
        return in_steps, False

    @property
    def in_steps(self) -> np.ndarray | None:
        """Mask of the GPU activities launched in the ``ProfilerStep#`` steps; None
        without steps, or when no activity is linked to a launch inside them."""
        return self._in_steps[0]

    @property
    def unlinked_steps(self) -> bool:
        """The trace has steps, but no GPU activity is linked to a launch inside them."""
        return self._in_steps[1]

    @property
    def window(self) -> str:
        """What the GPU figures cover: ``"steps"`` (the activities launched in the steps,
        over the GPU-side steps window) or ``"trace"``."""
        return "trace" if self.in_steps is None else "steps"

    @property
    def gpu_window(self) -> tuple[int, int] | None:
        """The GPU-side steps window (None: no GPU activity launched in the steps)."""
        steps = self.steps
        if steps.gpu_window_start_ns is None:
            return None
        return steps.gpu_window_start_ns, steps.gpu_window_end_ns  # type: ignore[return-value]
