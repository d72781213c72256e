"""The public facade: ``run``, ``analyze``, ``compare``, ``diff``.

The CLI and users' scripts call these; each imports what it needs when called, so
the analysis side never pulls in torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from profiler_kit.analysis.compare import Comparison
    from profiler_kit.analysis.report import TraceAnalysis
    from profiler_kit.analysis.report_diff import ReportDiff


def trace_files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Every trace file at or below ``paths`` (files, strategy or run folders, logdirs), once."""
    from profiler_kit.trace.loader import find_traces

    files: list[Path] = []
    seen: set[Path] = set()
    for p in paths:
        for f in find_traces(p):
            key = f.resolve()
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files


def analyze(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
            top: int = 5) -> list[TraceAnalysis]:
    """Analyze every trace at or below ``paths``: one ``TraceAnalysis`` per trace, labelled.

    Labels are short and unique (the strategy folder when it holds one trace, else
    the file name), so the results can go straight to :func:`compare`. A bad path
    or an unreadable trace raises ``TraceError``. Does not import torch.
    """
    from profiler_kit.analysis.compare import label_traces
    from profiler_kit.analysis.report import analyze_table
    from profiler_kit.trace.loader import load

    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = trace_files(paths)
    given = {Path(p).resolve() for p in paths if Path(p).is_file()}
    labels = label_traces(files, [f.resolve() in given for f in files])
    return [analyze_table(load(f), label=label, top=top)
            for f, label in zip(files, labels, strict=True)]


def compare(items: Sequence[TraceAnalysis] | Sequence[str | os.PathLike[str]],
            baseline: str | int | None = None) -> Comparison:
    """Side by side with deltas against ``baseline`` (a label, a path or an index; default first).

    ``items`` are analyses from :func:`analyze` or paths to analyze first.
    """
    from profiler_kit.analysis.compare import compare as compare_analyses
    from profiler_kit.analysis.report import TraceAnalysis as _TraceAnalysis

    if all(isinstance(i, _TraceAnalysis) for i in items):
        analyses = list(items)
    else:
        analyses = analyze(items)  # type: ignore[arg-type]
    return compare_analyses(analyses, baseline)


def diff(base: str | os.PathLike[str], test: str | os.PathLike[str]) -> ReportDiff:
    """Two DDP benchmark reports side by side (profkit's ``ddp_report.json``, a ``ddp`` run
    folder, or PyTorch's DDP benchmark JSON), with a noise verdict per change.

    A file that is not such a report raises ``UsageError``. Does not import torch.
    """
    from profiler_kit.analysis.report_diff import diff_reports
    from profiler_kit.ddp_report import load_report

    def label(path: str | os.PathLike[str]) -> str:
        p = Path(path)
        return f"{p.parent.name}/{p.name}" if p.name in ("ddp_report.json", "run.json") else (
            p.name or str(p))

    base_label, test_label = label(base), label(test)
    if base_label == test_label:
        base_label, test_label = str(base), str(test)
    return diff_reports(load_report(base), load_report(test), base_label, test_label)
