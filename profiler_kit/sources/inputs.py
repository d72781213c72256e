"""What the paths a command is given are, sorted once: every command that reads a user's
paths asks :func:`resolve` instead of sorting them itself.

The kind of each path comes from :mod:`profiler_kit.util.path_kinds` (by name, or by
its first bytes); nothing here reads a whole file or analyzes anything.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from profiler_kit.util.artifacts import RECORD_JSON, RECORD_STATUS_DIR
from profiler_kit.util.path_kinds import PathKind, kind_of

MEMORY = (PathKind.MEMORY_CATEGORIES, PathKind.SNAPSHOT)
FOLDERS = (PathKind.FOLDER, PathKind.RUN_FOLDER)


@dataclass(frozen=True)
class Inputs:
    """The paths as given, each with its kind, and what they hold by kind."""

    paths: tuple[Path, ...]
    kinds: tuple[PathKind, ...]

    def of(self, *kinds: PathKind) -> tuple[Path, ...]:
        """The paths of these kinds, in the order given."""
        return tuple(p for p, k in zip(self.paths, self.kinds, strict=True) if k in kinds)

    @property
    def runs(self) -> tuple[Path, ...]:
        """``profkit run`` folders (holding run.json)."""
        return self.of(PathKind.RUN_FOLDER)

    @property
    def reports(self) -> tuple[Path, ...]:
        """DDP benchmark reports, and run records (run.json) read as one."""
        return self.of(PathKind.DDP_REPORT, PathKind.RUN_RECORD)

    @property
    def records(self) -> tuple[Path, ...]:
        """``profkit record`` folders: holding record.json, or, while the recording runs,
        its status folder."""
        return tuple(p for p in self.of(PathKind.FOLDER)
                     if (p / RECORD_JSON).is_file() or (p / RECORD_STATUS_DIR).is_dir())

    def traces(self) -> list[Path]:
        """Every trace file at or below the paths (files, strategy or run folders,
        logdirs), once; ``TraceError`` for a path that is or holds none."""
        from profiler_kit.trace.loader import find_traces

        files: list[Path] = []
        seen: set[Path] = set()
        for p in self.paths:
            for f in find_traces(p):
                key = f.resolve()
                if key not in seen:
                    seen.add(key)
                    files.append(f)
        return files

    def labelled_traces(self) -> tuple[list[Path], list[str]]:
        """The traces and their labels, short and unique: the strategy folder when it
        holds one trace, else the file name (``analysis.compare.label_traces``)."""
        from profiler_kit.analysis.compare import label_traces

        files = self.traces()
        given = {p.resolve() for p in self.paths if p.is_file()}
        return files, label_traces(files, [f.resolve() in given for f in files])

    @property
    def may_hold_memory(self) -> bool:
        """Whether a path may hold what the memory section reads besides traces (memory
        categories, an allocator snapshot): one is such a file, or a folder."""
        return any(k in MEMORY or k in FOLDERS for k in self.kinds)

    @property
    def only_summaries(self) -> bool:
        """Whether every path is a rank-summaries file, or a folder of them without
        traces: the job view is made from the summaries alone."""
        from profiler_kit.errors import TraceError
        from profiler_kit.sources.summary_files import find_summary_files
        from profiler_kit.trace.loader import find_traces

        for p, kind in zip(self.paths, self.kinds, strict=True):
            if kind in FOLDERS:
                if not find_summary_files([p]):
                    return False
                try:
                    find_traces(p)
                except TraceError:
                    continue
                return False
            if kind is not PathKind.RANK_SUMMARIES or p.suffix != ".json":
                return False
        return True

    @property
    def one_run_or_record(self) -> bool:
        """Whether the paths are one run folder or one finished record folder (holding
        record.json), whose report is its own ``report.html``."""
        return len(self.paths) == 1 and bool(
            self.runs or any((p / RECORD_JSON).is_file() for p in self.records))


def resolve(paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str]) -> Inputs:
    """The kind of every path in ``paths`` (a missing one is ``PathKind.MISSING``; the
    command that reads it says so)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    given = tuple(Path(p) for p in paths)
    return Inputs(given, tuple(kind_of(p) for p in given))
