"""profkit in a notebook: a trace's events and analyses as pandas DataFrames, its charts
as plotly figures, what-if predictions and comparisons, without importing torch::

    import profiler_kit as pk
    t = pk.load("trace.json.gz")      # a trace, a run or strategy folder, a job's ranks
    t.kernels.nlargest(10, "dur_ns")  # DataFrames: kernels, ops, steps, launches, idle,
    t.figure("idle")                  #   memory, modules, comms; plotly figures inline
    t.analysis.steps.median_ns        # the typed result of ``profkit analyze``
    t.whatif(precision="bf16", cuda_graphs=True)
    pk.compare(a, b).metrics

A table is built when first asked for, from the same rows, links and classes as the
analyses (one load, one op tree). ``docs/python.md`` documents every column.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterator, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from profiler_kit.notebook import frames

TABLES = ("kernels", "ops", "steps", "launches", "idle", "memory", "modules", "comms",
          "counters", "recommendations")
PathLike = str | os.PathLike[str]


class Trace:
    """One trace: its event table (``table``), its analysis (``analysis``), and the
    DataFrames and figures made from them."""

    def __init__(self, path: PathLike, label: str | None = None, top: int = 10) -> None:
        from profiler_kit.analysis.compare import label_traces
        from profiler_kit.analysis.predicted_gains import MIN_GAIN_PCT
        from profiler_kit.analysis.registry import TraceContext
        from profiler_kit.analysis.trace_analysis import ANALYSES
        from profiler_kit.sources.inductor_provenance import read_provenance
        from profiler_kit.sources.run_items import items_per_step
        from profiler_kit.trace.loader import load as load_table

        self.path = Path(path)
        self.label = label or label_traces([self.path], [True])[0]
        self.table = load_table(self.path)
        self._ctx = TraceContext(ANALYSES, self.table, label=self.label, top=top,
                                 provenance=read_provenance(self.path),
                                 min_gain_pct=MIN_GAIN_PCT,
                                 items_per_step=items_per_step(self.path))

    @cached_property
    def analysis(self) -> Any:
        """The ``TraceAnalysis`` that ``profkit analyze`` prints and ``--json`` writes."""
        from profiler_kit.analysis.trace_analysis import ANALYSES

        return ANALYSES.fill(self._ctx)

    @cached_property
    def kernels(self) -> Any:
        return frames.kernels(self._ctx)

    @cached_property
    def ops(self) -> Any:
        return frames.ops(self._ctx)

    @cached_property
    def steps(self) -> Any:
        return frames.steps(self.analysis)

    @cached_property
    def launches(self) -> Any:
        return frames.launches(self._ctx)

    @cached_property
    def idle(self) -> Any:
        return frames.idle(self.analysis)

    @cached_property
    def memory(self) -> Any:
        return frames.memory(self._ctx)

    @cached_property
    def modules(self) -> Any:
        return frames.modules(self.analysis)

    @cached_property
    def comms(self) -> Any:
        return frames.comms(self._ctx)

    @cached_property
    def counters(self) -> Any:
        return frames.counters(self._ctx)

    @cached_property
    def recommendations(self) -> Any:
        return frames.recommendations(self.analysis)

    def figure(self, name: str) -> Any:
        """A plotly figure: ``timeline``, ``steps``, ``hotspots``, ``idle``, ``memory``,
        ``roofline``, ``sm`` or ``modules`` (the report's charts of this trace)."""
        from profiler_kit.notebook import figures

        return figures.figure(name, self.analysis, lambda: self.kernels)

    def whatif(self, *, precision: str | None = None, cuda_graphs: bool | str = False,
               kernels: dict[str, float] | None = None, fusion: bool = False,
               no_dataloader_wait: bool = False, no_sync: bool = False,
               overlap_comm: bool = False, changes: Sequence[Any] = ()) -> Any:
        """The replay's prediction of this trace's step after the changes, each alone and
        all together (a ``WhatIf``: ``.gains``, ``.together``, ``.replay``), as
        ``profkit whatif`` computes it: ``precision`` "bf16" or "fp16" (device peak ratios),
        ``cuda_graphs`` True or a region's name, ``kernels`` {class or name pattern:
        speed-up factor}; ``changes`` adds changes built by hand
        (``profiler_kit.analysis.whatif.changes``)."""
        from profiler_kit.analysis.whatif import changes as c
        from profiler_kit.analysis.whatif.replay import what_if

        wanted: list[Any] = [c.Kernels(k, v) for k, v in (kernels or {}).items()]
        if precision:
            wanted.append(c.Precision(precision))
        if cuda_graphs is not False:
            wanted.append(c.CudaGraphs(cuda_graphs if isinstance(cuda_graphs, str) else None))
        for on, change in ((fusion, c.Fusion), (no_dataloader_wait, c.NoDataloaderWait),
                           (no_sync, c.NoSync), (overlap_comm, c.OverlapComm)):
            if on:
                wanted.append(change())
        wanted += list(changes)
        if not wanted:
            raise ValueError("whatif: name a change (precision=, cuda_graphs=, kernels=, ...)")
        return what_if(self.table, changes=wanted)

    def answer(self) -> str:
        """The first line a reader wants: the step time, the GPU's busy share, the top
        recommendation."""
        a = self.analysis
        from profiler_kit.render.wording import rules, units

        s = a.steps
        parts = [f"{s.count} step{'s' if s.count != 1 else ''}, median "
                 f"{units.duration(s.headline_median_ns)}"
                 if s.count else f"no steps: window {units.duration(s.median_ns)}"]
        if a.step_gpu_busy_share is not None:
            parts.append(f"GPU busy {units.percent(a.step_gpu_busy_share)}")
        if a.recommendations:
            parts.append(f"first: {rules.title(a.recommendations[0])}")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return f"<profkit trace {self.label!r}: {self.answer()}>"

    def _repr_html_(self) -> str:
        from profiler_kit.notebook.figures import NAMES
        from profiler_kit.render.wording import rules
        from profiler_kit.render.wording.recommendation_gain import gain_line

        a = self.analysis
        rows = "".join(f"<li>{html.escape(rules.title(r))}"
                       + (f"<br><small>{html.escape(g)}</small>" if (g := gain_line(r)) else "")
                       + "</li>" for r in a.recommendations[:5])
        return (f"<div><strong>{html.escape(self.label)}</strong> "
                f"<code>{html.escape(str(self.path))}</code><br>"
                f"<strong>{html.escape(self.answer())}</strong>"
                + (f"<ul>{rows}</ul>" if rows else "") +
                f"<small>tables: {', '.join(TABLES)}; figures: "
                f"{', '.join(NAMES)}</small></div>")


class Traces(Sequence[Trace]):
    """The traces of a run folder, a strategy folder or a job's ranks: each a
    :class:`Trace` (by index or label), their tables concatenated with a ``trace``
    column, and the job view when they are ranks of one job."""

    def __init__(self, traces: Sequence[Trace]) -> None:
        self._traces = list(traces)

    def __len__(self) -> int:
        return len(self._traces)

    def __getitem__(self, key: int | str) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            found = [t for t in self._traces if t.label == key]
            if not found:
                raise KeyError(f"{key!r}: the labels are {', '.join(self.labels)}")
            return found[0]
        return self._traces[key]

    def __iter__(self) -> Iterator[Trace]:
        return iter(self._traces)

    @property
    def labels(self) -> list[str]:
        return [t.label for t in self._traces]

    def table(self, name: str) -> Any:
        """One table of every trace, one below the other, with a ``trace`` column first."""
        if name not in TABLES:
            raise ValueError(f"no table named {name!r}: one of {', '.join(TABLES)}")
        pd = frames.pandas()
        parts = [getattr(t, name).assign(trace=t.label) for t in self._traces]
        out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        return out[["trace", *[c for c in out.columns if c != "trace"]]]

    def __getattr__(self, name: str) -> Any:
        if name in TABLES:
            return self.table(name)
        raise AttributeError(name)

    @cached_property
    def job(self) -> Any:
        """The job view of ranks (collectives matched, the straggler), or None."""
        ranks = [t.analysis.communication for t in self._traces
                 if t.analysis.communication is not None]
        if len(ranks) < 2:
            return None
        from profiler_kit.analysis.job_analysis import analyze_jobs

        views = analyze_jobs(ranks)
        return views[0] if len(views) == 1 else views

    def compare(self, baseline: str | int | None = None) -> Comparison:
        return compare(*self._traces, baseline=baseline)

    def __repr__(self) -> str:
        return f"<profkit traces: {', '.join(self.labels)}>"

    def _repr_html_(self) -> str:
        return "".join(t._repr_html_() for t in self._traces)


class Comparison:
    """Traces side by side (``profkit compare``): ``metrics`` (one row per figure, one
    column per trace), ``steps`` (each trace's step-time change against the baseline,
    term by term, per step: the waterfall's numbers), ``result`` (the typed comparison) and
    ``figure()`` (the waterfall)."""

    def __init__(self, result: Any) -> None:
        self.result = result

    @cached_property
    def metrics(self) -> Any:
        pd = frames.pandas()
        r = self.result
        rows = [{"metric": m.key, "label": m.label, "unit": m.unit, "better": m.better,
                 **dict(zip(r.labels, m.values, strict=True))} for m in r.metrics]
        return pd.DataFrame(rows).set_index("metric")

    @cached_property
    def steps(self) -> Any:
        pd = frames.pandas()
        d = self.result.steps
        rows = [{"trace": w.label, "term": term.name, "before_ns": term.before_ns,
                 "after_ns": term.after_ns, "delta_ns": term.delta_ns}
                for w in (d.waterfalls if d is not None else ()) if w is not None
                for term in w.terms]
        return pd.DataFrame(rows, columns=["trace", "term", "before_ns", "after_ns",
                                           "delta_ns"])

    def figure(self) -> Any:
        from profiler_kit.notebook import figures

        return figures.waterfall(self.result)

    def __repr__(self) -> str:
        return f"<profkit comparison of {', '.join(self.result.labels)}>"


def load(path: PathLike, *more: PathLike) -> Trace | Traces:
    """A trace file as a :class:`Trace`; a folder (a run, a strategy, a job's ranks) or
    several paths as :class:`Traces` (a folder that holds one trace: that trace)."""
    from profiler_kit import api
    from profiler_kit.analysis.compare import label_traces

    paths = [Path(p) for p in (path, *more)]
    files = api.trace_files(paths)
    if len(files) == 1 and len(paths) == 1:
        return Trace(files[0])
    given = {p.resolve() for p in paths if p.is_file()}
    labels = label_traces(files, [f.resolve() in given for f in files])
    return Traces([Trace(f, label) for f, label in zip(files, labels, strict=True)])


def compare(*traces: Trace | Traces | PathLike, baseline: str | int | None = None
            ) -> Comparison:
    """Traces side by side against ``baseline`` (a label or an index; default the first),
    as ``profkit compare`` computes it."""
    from profiler_kit.analysis.compare import compare as compare_analyses

    items: list[Trace] = []
    for t in traces:
        loaded = t if isinstance(t, (Trace, Traces)) else load(t)
        items += list(loaded) if isinstance(loaded, Traces) else [loaded]
    return Comparison(compare_analyses([t.analysis for t in items], baseline))
