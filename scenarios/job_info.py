"""The job view of every multi-rank strategy of a run, kept in its ``info["job"]``.

``ddp`` and ``pipeline`` call :func:`annotate_jobs` after a run: each measured strategy
whose traces come from two or more ranks gets the straggler and the wait/transfer split
of its exposed communication (``profiler_kit.analysis.job_analysis``), small enough for
run.json; the run's console and summary print them per configuration. No torch import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import replace

from profiler_kit.errors import ProfkitError


def annotate_jobs(result: Any) -> Any:
    """``result`` with ``info["job"]`` on every measured strategy of several ranks."""
    from profiler_kit.analysis.job_analysis import analyze_jobs
    from profiler_kit.render.json.job import run_info
    from profiler_kit.sources import summary_files
    from profiler_kit.sources.trace_files import summarize_files

    run_dir = Path(result.run_dir)
    strategies = []
    for s in result.strategies:
        # ranks on hosts that did not share the run folder may have sent summaries instead
        sent = (summary_files.find_summary_files([run_dir / s.dir])
                if s.status == "ok" and s.dir else [])
        if s.status == "ok" and len(s.trace_files) + len(sent) > 1:
            files = [run_dir / f for f in s.trace_files]
            try:
                read = [x for f in sent for x in summary_files.load(f).summaries]
                jobs = analyze_jobs([*summarize_files(files, [f.name for f in files]), *read])
            except ProfkitError:  # an unreadable trace costs the job view, not the run
                jobs = ()
            if len(jobs) == 1:
                s = replace(s, info={**s.info, "job": run_info(jobs[0])})
        strategies.append(s)
    return replace(result, strategies=tuple(strategies))
