"""The job view of every multi-rank strategy of a run, kept in its ``info["job"]``.

``ddp`` and ``pipeline`` call :func:`annotate_jobs` after a run: each measured strategy
whose traces come from two or more ranks gets the straggler and the wait/transfer split
of its exposed communication (``profiler_kit.analysis.job``), small enough for run.json;
the run's console and summary print them per configuration. No torch import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import replace

from profiler_kit.errors import ProfkitError


def annotate_jobs(result: Any) -> Any:
    """``result`` with ``info["job"]`` on every measured strategy of several ranks."""
    from profiler_kit.analysis.files import summarize_files
    from profiler_kit.analysis.job import analyze_jobs, run_info

    run_dir = Path(result.run_dir)
    strategies = []
    for s in result.strategies:
        if s.status == "ok" and len(s.trace_files) > 1:
            files = [run_dir / f for f in s.trace_files]
            try:
                jobs = analyze_jobs(summarize_files(files, [f.name for f in files]))
            except ProfkitError:  # an unreadable trace costs the job view, not the run
                jobs = ()
            if len(jobs) == 1:
                s = replace(s, info={**s.info, "job": run_info(jobs[0])})
        strategies.append(s)
    return replace(result, strategies=tuple(strategies))
