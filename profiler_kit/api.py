"""The public facade: ``run``, ``analyze``, ``compare``, ``diff``.

The CLI and users' scripts call these; each imports what it needs when called, so
the analysis side never pulls in torch.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from profiler_kit.analysis.compare import Comparison
    from profiler_kit.analysis.jobs.job_view import JobView
    from profiler_kit.analysis.jobs.rank_summary import RankSummary
    from profiler_kit.analysis.trace_analysis import TraceAnalysis
    from profiler_kit.ddp_benchmark.diff import ReportDiff
    from profiler_kit.measure.passes import MeasureOptions
    from profiler_kit.measure.runner import RunObserver
    from profiler_kit.results import RunResult
    from profiler_kit.scenario import Scenario
    from profiler_kit.scenario_info import ScenarioInfo
    from profiler_kit.sources.inputs import Inputs
    from profiler_kit.sources.merge import MergeReport
    from profiler_kit.trace.source import Unreadable


def trace_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Every trace file at or below ``paths`` (files, strategy or run folders, logdirs), once."""
    from profiler_kit.sources.inputs import resolve

    return resolve(paths).traces()


@dataclasses.dataclass(frozen=True)
class Analyses(Sequence["TraceAnalysis"]):
    """What :func:`analyze` found: one analysis per trace (``traces``; the result reads as
    that sequence), and ``jobs``: the job view of every job whose ranks are among them (see
    ``profiler_kit.analysis.job_analysis``); ``unreadable``: the traces that could not be
    read, each with the reason; ``baseline``: the run's own baseline when the paths hold a
    profkit run folder (the folder of its baseline strategy, for compare), else None (the
    first trace); ``sides``: when two folders were given as two sides (two runs), per
    analysis its side and its strategy's key, so that compare pairs the strategies
    (``analysis.compare.sides_of``), else None."""

    traces: tuple[TraceAnalysis, ...]
    jobs: tuple[JobView, ...] = ()
    unreadable: tuple[Unreadable, ...] = ()
    baseline: str | None = None
    sides: list[tuple[int, str]] | None = None

    def __getitem__(self, index):  # type: ignore[override]
        return self.traces[index]

    def __len__(self) -> int:
        return len(self.traces)


@dataclasses.dataclass(frozen=True)
class Summaries(Sequence["RankSummary"]):
    """The rank summaries of :func:`summarize` (``summaries``; the result reads as that
    sequence), and ``unreadable``: the traces that could not be read, each with the
    reason."""

    summaries: tuple[RankSummary, ...]
    unreadable: tuple[Unreadable, ...] = ()

    def __getitem__(self, index):  # type: ignore[override]
        return self.summaries[index]

    def __len__(self) -> int:
        return len(self.summaries)


def _readable(results: list, what: str) -> tuple[list, tuple]:
    """Results that were read, and the unreadable files; ``TraceError`` when none was."""
    from profiler_kit.errors import TraceError
    from profiler_kit.sources.trace_files import split_unreadable

    read, unreadable = split_unreadable(results)
    if unreadable and not read:
        if len(unreadable) == 1:
            u = unreadable[0]
            raise TraceError(f"{u.path}: {u.reason}")
        listed = "; ".join(f"{u.path}: {u.reason}" for u in unreadable)
        raise TraceError(f"no {what} could be read ({len(unreadable)} files): {listed}")
    return read, tuple(unreadable)


def analyze(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
            top: int = 5, jobs: int | None = None,
            min_gain_pct: float | None = None, ahead: Any = None) -> Analyses:
    """Analyze every trace at or below ``paths``: one ``TraceAnalysis`` per trace, labelled.

    Labels are short and unique (the strategy folder when it holds one trace, else
    the file name), so the results can go straight to :func:`compare`. A bad path
    raises ``TraceError``; so does a trace that cannot be read when it is the only one,
    else it is left out and listed in ``.unreadable`` (path and reason). Does not
    import torch.
    Several traces are analyzed ``jobs`` at a time in forked worker processes; by
    default one per core where forking is safe (Linux, a process with a single
    thread), else one after another. Traces of the ranks of one job also get a job
    view (``.jobs`` of the returned list): collectives matched across ranks, waiting
    split from transferring, the straggler. A recommendation whose predicted gain is under
    ``min_gain_pct`` (None: 2 %) is held back and named in a note. ``ahead``: the trace
    the command began to load ahead (``trace.load_ahead.prefetch``).
    """
    from profiler_kit.analysis.compare import sides_of
    from profiler_kit.sources.inputs import resolve
    from profiler_kit.sources.trace_files import analyze_files

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files, labels = resolve(paths).labelled_traces()
    read, unreadable = _readable(analyze_files(files, labels, top, jobs, min_gain_pct, ahead),
                                 "trace")
    ranks = [a.communication for a in read if a.communication is not None]
    job_views: tuple[JobView, ...] = ()
    if len(ranks) > 1:  # a job needs two ranks; one trace's analysis skips the module
        from profiler_kit.analysis.job_analysis import analyze_jobs

        job_views = analyze_jobs(ranks)
    return Analyses(tuple(read), job_views, unreadable, _run_baseline(paths, read),
                    sides_of([Path(p) for p in paths], [Path(a.path) for a in read]))


def _run_baseline(paths: Sequence[str | os.PathLike[str]], analyses: Sequence[Any]
                  ) -> str | None:
    """The folder of the baseline strategy of the first run folder among ``paths`` (its
    run.json says which), when one of ``analyses`` lies in it."""
    from profiler_kit.sources.inputs import resolve

    run_dirs = resolve(paths).runs
    if not run_dirs:  # traces only: the run records' module is not needed
        return None
    from profiler_kit.errors import UsageError
    from profiler_kit.results import read_run

    for p in run_dirs:
        try:
            run = read_run(p)
        except UsageError:
            continue
        for s in run.strategies:
            if s.name != run.baseline or not s.dir:
                continue
            folder = (p / s.dir).resolve()
            if any(folder in Path(a.path).resolve().parents for a in analyses):
                return str(p / s.dir)
    return None


def summarize(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
              jobs: int | None = None, *, scheduler: Any = None) -> Summaries:
    """The rank summary of every trace at or below ``paths`` (collectives with their
    times, steps; no events): what :func:`job_view` needs, small enough to gather the
    summaries of thousands of ranks. Already written summaries files are read back.
    Traces that cannot be read are left out and listed in ``.unreadable``.

    ``scheduler``: a Dask client (``profiler_kit.sources.dask_tasks.client``) whose
    workers summarize the traces instead of this machine's process pool."""
    from profiler_kit.sources import summary_files
    from profiler_kit.sources.inputs import resolve
    from profiler_kit.sources.trace_files import summarize_files

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    found = summary_files.find_summary_files(list(paths))
    documents = [summary_files.load(f) for f in found]
    summaries = [s for d in documents for s in d.summaries]
    unreadable = tuple(u for d in documents for u in d.unreadable)
    trace_paths = [p for p in paths if Path(p) not in found]
    if trace_paths:
        from profiler_kit.errors import TraceError

        try:
            files, labels = resolve(trace_paths).labelled_traces()
        except TraceError:
            if not summaries:
                raise
            files, labels = [], []
        if scheduler is not None:
            from profiler_kit.sources import dask_tasks
            results = dask_tasks.summarize_files(scheduler, files, labels)
        else:
            results = summarize_files(files, labels, jobs)
        read, left_out = _readable(results, "trace")
        summaries.extend(read)
        unreadable += left_out
    return Summaries(tuple(summaries), unreadable)


def job_view(items: Sequence[RankSummary] | Sequence[str | os.PathLike[str]],
             *, scheduler: Any = None) -> tuple[JobView, ...]:
    """The job view of rank summaries (from :func:`summarize`, or paths to summarize);
    with ``scheduler`` (a Dask client) summarized and reduced as tasks on its workers."""
    from profiler_kit.analysis.job_analysis import analyze_jobs
    from profiler_kit.analysis.jobs.rank_summary import RankSummary as _RankSummary

    if not all(isinstance(i, _RankSummary) for i in items):
        items = summarize(items, scheduler=scheduler)  # type: ignore[arg-type]
    if scheduler is not None:
        from profiler_kit.sources import dask_tasks
        return dask_tasks.job_views(scheduler, list(items))  # type: ignore[arg-type]
    return analyze_jobs(list(items))  # type: ignore[arg-type]


def merge(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
          out: str | os.PathLike[str], *, jobs: int | None = None,
          force: bool = False) -> MergeReport:
    """Merge the traces of one job's ranks (at or below ``paths``: a folder of traces or
    a run folder holding one job) into one Chrome/Perfetto trace at ``out`` (gzip when
    it ends in ``.gz``): every rank its own processes, clocks aligned as the job view
    aligns them, matched collectives linked by flows (see
    ``profiler_kit.sources.merge``). ``out`` is checked before any work, as every
    output is; ``UsageError`` when the paths hold no job, or several."""
    from profiler_kit.analysis.job_analysis import analyze_jobs
    from profiler_kit.errors import UsageError
    from profiler_kit.sources.merge import merge_job, merge_job_pftrace
    from profiler_kit.util import outputs

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    target = outputs.check(str(out), "-o", inputs=paths, force=force)
    if target is None:
        raise UsageError("-o: the merged trace goes to a file, not stdout")
    from profiler_kit.trace.pftrace import is_pftrace
    from profiler_kit.util.path_kinds import is_merged_trace

    files = [f for f in trace_files(paths) if not is_merged_trace(f)]
    if target.resolve() in {f.resolve() for f in files}:
        raise UsageError(f"-o {out}: that is one of the traces; refusing to overwrite it")
    found = summarize(files, jobs=jobs)
    views = analyze_jobs(found)
    if not views:
        raise UsageError("no job of several ranks among the traces (each needs the rank "
                         "in its distributedInfo)")
    if len(views) > 1:
        names = "; ".join(f"{v.name} (ranks {len(v.ranks)})" for v in views)
        raise UsageError(f"the traces hold {len(views)} jobs: {names}; merge one at a time "
                         "(give its folder)")
    job = views[0]
    members = [s for s in found if s.rank in job.ranks and s.label in job.labels]
    if is_pftrace(target):  # the merged events at once, then as Perfetto's protobuf
        return outputs.write_stream(
            target, lambda fh: merge_job_pftrace(members, job, fh,
                                                 gzipped=target.name.endswith(".gz")))
    return outputs.write_stream(target, lambda fh: merge_job(members, job, fh))


def compare(items: Sequence[TraceAnalysis] | Sequence[str | os.PathLike[str]],
            baseline: str | int | None = None) -> Comparison:
    """Side by side with deltas against ``baseline`` (a label, a path or an index; default:
    the run's own baseline when the analyses are of a run folder, else the first).

    ``items`` are analyses from :func:`analyze` or paths to analyze first. Of two run
    folders (or two folders of the same strategies), each strategy of the second is
    measured against the same strategy of the first (waterfall, verdict, regression gate).
    """
    from profiler_kit.analysis.compare import compare as compare_analyses
    from profiler_kit.analysis.trace_analysis import TraceAnalysis as _TraceAnalysis

    if all(isinstance(i, _TraceAnalysis) for i in items):
        analyses = items
    else:
        analyses = analyze(items)  # type: ignore[arg-type]
    if baseline is None:  # a run folder's own baseline
        baseline = getattr(analyses, "baseline", None)
    return compare_analyses(list(analyses), baseline, getattr(analyses, "sides", None))


def diff(base: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
         test: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
         min_effect: float | None = None) -> ReportDiff:
    """Two DDP benchmark reports side by side (profkit's ``ddp_report.json``, a ``ddp`` run
    folder, or PyTorch's DDP benchmark JSON), with a noise verdict per change. Each side
    may be several runs (or a folder of run folders): their rounds are pooled as repeats,
    so the noise model is the drift between runs. ``min_effect``: the smallest change (a
    fraction, 0.05 is 5 %) that may be called beyond noise, in place of the defaults
    (10 % with one run a side, 5 % with repeats).

    A file that is not such a report raises ``UsageError``. Does not import torch.
    """
    from profiler_kit.ddp_benchmark.diff import diff_reports, merge_runs
    from profiler_kit.ddp_benchmark.report import load_report

    bases, tests = _runs(base), _runs(test)
    base_labels, test_labels = [_report_label(p) for p in bases], \
        [_report_label(p) for p in tests]
    base_label, test_label = _side_label(bases, base_labels), _side_label(tests, test_labels)
    if base_label == test_label:
        base_label = _side_label(bases, [str(p) for p in bases])
        test_label = _side_label(tests, [str(p) for p in tests])
    a = merge_runs([load_report(p) for p in bases], base_labels)
    b = merge_runs([load_report(p) for p in tests], test_labels)
    return diff_reports(a, b, base_label, test_label, min_effect=min_effect)


def _runs(side: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> list[Path]:
    """One side of a diff as report paths: a folder that holds no report itself but run
    folders that do stands for those runs, in name order."""
    from profiler_kit.ddp_benchmark.report import REPORT_NAME
    from profiler_kit.errors import UsageError
    from profiler_kit.util.artifacts import RUN_JSON

    paths = [Path(side)] if isinstance(side, (str, os.PathLike)) else [Path(p) for p in side]
    if not paths:
        raise UsageError("a side of the diff names no run")
    out: list[Path] = []
    for p in paths:
        if p.is_dir() and not (p / REPORT_NAME).exists() and not (p / RUN_JSON).exists():
            inner = sorted(c for c in p.iterdir() if c.is_dir() and (
                (c / REPORT_NAME).exists() or (c / RUN_JSON).exists()))
            out += inner or [p]
        else:
            out.append(p)
    return out


def _report_label(p: Path) -> str:
    from profiler_kit.util.artifacts import RUN_JSON

    return f"{p.parent.name}/{p.name}" if p.name in ("ddp_report.json", RUN_JSON) else (
        p.name or str(p))


def _side_label(paths: list[Path], labels: list[str]) -> str:
    return labels[0] if len(paths) == 1 else f"{labels[0]} +{len(paths) - 1} runs"


def report(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
           out: str | os.PathLike[str] | None = None, *, title: str | None = None,
           baseline: str | None = None, jobs: int | None = None,
           force: bool = False, ahead: Any = None) -> Path | None:
    """Write the HTML report of ``paths`` (run folders, traces, folders of traces, DDP
    benchmark reports) to ``out`` (``-``: stdout, then None is returned) and return its path.

    ``out`` defaults to :func:`default_report_path`. It is checked before any work as
    every output is (see ``profiler_kit.util.outputs``): never an input, a trace or a file
    profkit did not write; a report written earlier is replaced only with ``force``,
    except the run folder's own ``report.html`` (``out`` not given), which profkit wrote
    and rewrites. Needs plotly (``MissingDependency`` says how to install it); does not
    import torch.
    """
    from profiler_kit.render.html import report as html_report
    from profiler_kit.util import outputs
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    html_report.plotly_js()  # before any work: say early when plotly is missing
    _check_report_inputs(paths)  # a bad input is named before the output is looked at
    chosen = str(out) if out is not None else str(default_report_path(paths))
    own = out is None and is_run_folder_report(paths)
    target = outputs.check(chosen, "-o" if out is not None else "report", inputs=paths,
                           force=force, own=own)
    outputs.write(target, report_html(paths, title=title, baseline=baseline, jobs=jobs,
                                      ahead=ahead))
    return target


def default_report_path(paths: Sequence[str | os.PathLike[str]]) -> Path:
    """``report.html`` in the folder when ``paths`` is one run or record folder, else here."""
    from profiler_kit.util import artifacts

    if is_run_folder_report(paths):
        return Path(paths[0]) / artifacts.REPORT_HTML
    return Path(artifacts.REPORT_HTML)


def is_run_folder_report(paths: Sequence[str | os.PathLike[str]]) -> bool:
    """Whether the report of ``paths`` goes, by default, into a run folder as its own
    ``report.html`` (the one ``profkit run`` or ``profkit record`` wrote), which ``report``
    rewrites."""
    from profiler_kit.sources.inputs import resolve

    return resolve(paths).one_run_or_record


def _check_report_inputs(paths: Sequence[str | os.PathLike[str]]) -> None:
    """The inputs of ``report``, cheaply: a missing path, a folder without traces or a file
    that is none of what report reads raises one line about it."""
    from profiler_kit.sources.inputs import resolve
    from profiler_kit.util.path_kinds import PathKind

    inputs = resolve(paths)
    for p, kind in zip(inputs.paths, inputs.kinds, strict=True):
        if kind is PathKind.DDP_REPORT:
            _check_ddp_report(p)
        elif kind in (PathKind.FOLDER, PathKind.MISSING):
            trace_files([p])  # TraceError: no such path, or no trace below it


def _check_ddp_report(path: Path) -> None:
    """A ``.json`` taken for a DDP report because it is no trace: one that is none either
    says what report reads (the reader's own message would name DDP reports only)."""
    from profiler_kit.ddp_benchmark.report import REPORT_NAME
    from profiler_kit.errors import UsageError

    why = None if path.name == REPORT_NAME else _not_a_ddp_report(path)
    if why is not None:
        raise UsageError(f"{path}: not a trace, a run or record folder, or a DDP benchmark "
                         f"report ({why})")


def _not_a_ddp_report(path: Path) -> str | None:
    """Why the file at ``path`` cannot be a DDP report, or None when it may be one."""
    import json

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return "not readable as UTF-8 text"
    if not text.strip():
        return "an empty file"
    try:
        data = json.loads(text)
    except ValueError:
        return "not valid JSON"
    if isinstance(data, dict) and {"benchmark_results", "strategies"} & data.keys():
        return None
    return "JSON with neither traceEvents nor benchmark_results"


def report_html(paths: Sequence[str | os.PathLike[str]], *, title: str | None = None,
                baseline: str | None = None, jobs: int | None = None,
                analyses: Sequence[TraceAnalysis] | None = None,
                comparison: Comparison | None = None,
                job_views: Sequence[JobView] | None = None,
                unreadable: Sequence[Unreadable] = (), memory_report: Any = None,
                ahead: Any = None) -> str:
    """The HTML report of ``paths`` as text. ``analyses`` (with their ``comparison``,
    ``job_views`` and ``unreadable`` traces) are used as given instead of analyzing the
    traces again, as is ``memory_report`` (:func:`memory_section` of the same paths);
    ``ahead``: the trace the command began to load ahead.
    Traces it cannot read itself are left out, listed in the report, and each raises a
    ``LeftOutWarning``."""
    from profiler_kit.ddp_benchmark.report import REPORT_NAME, load_report
    from profiler_kit.errors import LeftOutWarning
    from profiler_kit.render.html import report as html_report
    from profiler_kit.results import read_run
    from profiler_kit.sources.inputs import resolve
    from profiler_kit.util.path_kinds import PathKind

    inputs = resolve(paths)
    runs, reports, trace_paths = [], [], []
    for p, kind in zip(inputs.paths, inputs.kinds, strict=True):
        if kind is PathKind.RUN_FOLDER:
            runs.append(read_run(p))
            if (p / REPORT_NAME).is_file():
                reports.append(load_report(p / REPORT_NAME))
            if any(s.trace_files for s in runs[-1].strategies):
                trace_paths.append(p)
        elif kind in (PathKind.DDP_REPORT, PathKind.RUN_RECORD):
            if kind is PathKind.DDP_REPORT:
                _check_ddp_report(p)
            reports.append(load_report(p))
        else:
            trace_paths.append(p)
    if analyses is None:
        analyses = analyze(trace_paths, jobs=jobs, ahead=ahead) if trace_paths else []
        job_views = getattr(analyses, "jobs", ())
        unreadable = getattr(analyses, "unreadable", ())
        for u in unreadable:
            warnings.warn(f"{u.path}: unreadable, left out ({u.reason})", LeftOutWarning,
                          stacklevel=2)
        if len(runs) == 1:  # strategies in the order they ran, the baseline first
            analyses = _in_run_order(list(analyses), runs[0], Path(paths[0]))
        comparison = compare(analyses, baseline) if len(analyses) > 1 else None
    elif job_views is None:
        job_views = getattr(analyses, "jobs", ())
    return html_report.render(
        title or html_report.default_title(runs[0] if len(runs) == 1 else None,
                                           [str(p) for p in paths]),
        analyses, comparison, runs=runs, ddp_reports=reports, jobs=job_views,
        subtitle=html_report.default_subtitle(runs, analyses), unreadable=unreadable,
        memory=memory_report if memory_report is not None else memory_section(paths),
        answers=_record_answers(inputs, analyses))


def _record_answers(inputs: Inputs, analyses: Sequence[TraceAnalysis]) -> list[str]:
    """The answer line of each ``profkit record`` folder among the inputs, from its
    traces, as a run folder's report starts with the run's."""
    from profiler_kit.render.wording.record_answer import answer

    lines = []
    alone = len(inputs.paths) == 1
    for folder in inputs.records:
        root = folder.resolve()
        mine = [a for a in analyses if root in Path(a.path).resolve().parents]
        line = answer(mine or (analyses if alone else []), "" if alone else folder.name)
        if line:
            lines.append(line)
    return lines


def memory_section(paths: Sequence[str | os.PathLike[str]]) -> Any:
    """The memory of ``paths`` from categories and snapshots only (cheap), or None when
    a path cannot be read that way (the analyses name the problem)."""
    from profiler_kit.errors import ProfkitError

    try:
        return memory(paths, traces=False)
    except ProfkitError:
        return None


def _in_run_order(analyses: list[TraceAnalysis], run: RunResult,
                  run_dir: Path) -> list[TraceAnalysis]:
    order = {(run_dir / s.dir).resolve(): i for i, s in enumerate(run.strategies) if s.dir}

    def key(a: TraceAnalysis) -> int:
        folder = Path(a.path).resolve().parent
        for parent in (folder, *folder.parents):
            if parent in order:
                return order[parent]
        return len(order)

    return sorted(analyses, key=key)


def run(scenario: str | Scenario, params: Mapping[str, Any] | None = None, *,
        device: str = "auto", strategies: Sequence[str] | None = None,
        opt_in: Sequence[str] = (), amp: bool = False, options: MeasureOptions | None = None,
        out: str | os.PathLike[str] = "traces", seed: int = 0, argv: list[str] | None = None,
        observer: RunObserver | None = None, force: bool = False) -> RunResult:
    """Measure every strategy of ``scenario`` (a built-in name, a .py path or a Scenario)
    and write ``<out>/<scenario>/<run-id>/``: traces, key averages, run.json, summary.md
    and report.html (when plotly is installed).

    ``params`` values may be Python values or command-line strings; sweep parameters
    take lists. Bad input raises ``UsageError`` before anything runs, output paths
    included (an existing file profkit wrote is replaced only with ``force``). Imports torch.
    """
    from profiler_kit.measure import runner
    from profiler_kit.measure.passes import MeasureOptions
    from profiler_kit.render.markdown.run import render_markdown
    from profiler_kit.scenario import Scenario as _Scenario
    from profiler_kit.scenario import load
    from profiler_kit.sources.after_run import after_run

    sc = scenario if isinstance(scenario, _Scenario) else load(str(scenario))
    request = runner.RunRequest(sc, params or {}, device=device, strategies=strategies,
                                opt_in=opt_in, amp=amp, options=options or MeasureOptions(),
                                out=out, seed=seed, argv=argv, force=force)
    result = runner.run(request, observer=observer, summary=render_markdown,
                        verdicts=after_run)
    from profiler_kit.measure.distributed import is_output_rank

    if is_output_rank() and not result.nothing_ran:  # the rank that keeps the run folder
        result = _run_report(result)
    return result


def _run_report(result: RunResult) -> RunResult:
    """report.html beside run.json. Without plotly there is none (the run says how to
    install it); one that cannot be made or written is a report error, as for summary.md:
    the run and its other files stand."""
    from msgspec.structs import replace

    from profiler_kit.errors import MissingDependency, OutputError, ProfkitError
    from profiler_kit.util import artifacts, outputs

    target = result.run_dir / artifacts.REPORT_HTML
    try:
        outputs.write(target, report_html([result.run_dir]))
    except MissingDependency:
        return result
    except ProfkitError as exc:  # an unreadable trace, or the file could not be written
        line = str(exc) if isinstance(exc, OutputError) else f"{target}: {exc}"
        result = replace(result, report_errors=(*result.report_errors, line))
        artifacts.write_json_atomic(result.run_dir / artifacts.RUN_JSON, result.to_json())
    return result


def list_scenarios() -> list[ScenarioInfo]:
    """Every built-in scenario with its strategies, parameters and requirements.
    A scenario whose module cannot be imported is listed with the error. No torch import."""
    from profiler_kit.scenario_info import describe_builtins

    return describe_builtins()


def memory(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str], *,
           device_memory: int | None = None, top: int = 10, traces: bool = True) -> Any:
    """Memory explained per strategy (run or strategy folders, traces, snapshots, categories).

    Returns a :class:`profiler_kit.analysis.memory.strategies.MemoryReport`; with two sources
    of different batch sizes its ``fit`` comes from both. ``traces=False`` reads only the
    memory categories and snapshots (cheap: the section of ``analyze`` and the report).
    A path that is none of those files, or a folder holding none, raises ``TraceError``.
    """
    from profiler_kit.sources.memory_files import memory_report

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return memory_report([Path(p) for p in paths], device_memory, top, traces)


def whatif(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
           changes: Sequence[Any] = (), *, no_straggler: bool = False,
           ahead: Any = None) -> list[Any]:
    """Replay every trace at or below ``paths`` (traces, strategy or run folders) and predict
    its step after ``changes`` (``profiler_kit.analysis.whatif.changes``), each alone and all
    together: one :class:`~profiler_kit.analysis.whatif.replay.TraceWhatIf` per trace, in
    order. ``no_straggler``: the traces that are ranks of one job also get the change in
    which no rank waits for another in a collective (matched across them by the job view).
    ``ahead``: the trace the command began to load ahead. A trace that cannot be read
    raises ``TraceError``. Does not import torch."""
    from profiler_kit.analysis.whatif.changes import NoStraggler
    from profiler_kit.analysis.whatif.replay import TraceWhatIf, what_if
    from profiler_kit.sources.inputs import resolve
    from profiler_kit.trace.loader import load

    files, labels = resolve(paths).labelled_traces()
    tables = [load(f, ahead=ahead) for f in files]
    per_trace: list[list[Any]] = [list(changes) for _ in files]
    if no_straggler:
        from profiler_kit.analysis.jobs.rank_summary import summarize_rank
        from profiler_kit.analysis.whatif.ranks import straggler_waits

        waits = straggler_waits([summarize_rank(t, label) for t, label in
                                 zip(tables, labels, strict=True)])
        for mine, w in zip(per_trace, waits, strict=True):
            mine.append(NoStraggler(w))
    return [TraceWhatIf(str(f), label, what_if(t, changes=mine))
            for f, label, t, mine in zip(files, labels, tables, per_trace, strict=True)]
