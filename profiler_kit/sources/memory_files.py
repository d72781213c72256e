"""Which files ``profkit memory`` reads for each strategy of the paths it is given.

A run folder (``run.json``) gives one source per strategy that ran, with its items per step
and the device's memory recorded by the run; another folder is one source of every trace,
``*.memory_categories.json`` and snapshot pickle below it; a file is a source by itself.
"""

from __future__ import annotations

from pathlib import Path

from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.memory.explained import StrategyMemory
from profiler_kit.analysis.memory.strategies import MemoryReport, combine
from profiler_kit.errors import TraceError
from profiler_kit.sources.strategy_memory import explain
from profiler_kit.trace.pftrace import is_pftrace
from profiler_kit.util.path_kinds import PathKind, kind_of

_NOT_A_MEMORY_FILE = ("not a trace, a memory categories file (*.memory_categories.json) or "
                        "an allocator snapshot pickle")


def _kinds(files: list[Path], traces_too: bool = True
           ) -> tuple[list[Path], list[Path], list[Path]]:
    """(traces, categories, snapshots) among ``files``."""
    traces, cats, snaps = [], [], []
    for f in files:
        kind = kind_of(f)
        if kind is PathKind.MEMORY_CATEGORIES:
            cats.append(f)
        elif kind is PathKind.SNAPSHOT:
            snaps.append(f)
        elif traces_too and kind in (PathKind.TRACE, PathKind.MERGED_TRACE) \
                and not is_pftrace(f):  # memory records are read from JSON traces only
            traces.append(f)
    return traces, cats, snaps


def _folder_files(folder: Path) -> list[Path]:
    return sorted(f for f in folder.rglob("*") if f.is_file()
                  and not any(part.startswith(".") for part in f.relative_to(folder).parts))


def sources(path: Path, device_memory: int | None, top: int,
            traces: bool = True) -> list[StrategyMemory]:
    """One per strategy below ``path``; without ``traces``, from the categories and snapshots
    alone (cheap: what ``analyze``, ``compare`` and the report show)."""
    if not path.exists():
        raise TraceError(f"{path}: no such file or folder")
    if path.is_file():
        if is_pftrace(path):
            raise TraceError(f"{path}: a .pftrace holds no memory records profkit reads "
                             "(PyTorch's encoder writes no [memory] events): give the JSON "
                             "trace")
        found, cats, snaps = _kinds([path], traces)
        if traces and not (found or cats or snaps):
            raise TraceError(f"{path}: {_NOT_A_MEMORY_FILE}")
        return [explain(path.name, found, cats, snaps, None, device_memory, top,
                        by_profkit=_in_a_run(path.parent))]
    if not (path / "run.json").is_file():
        files = _kinds(_folder_files(path), traces)
        if traces and not any(files):
            raise TraceError(f"{path}: no traces, memory categories or allocator snapshots "
                             "found")
        return [explain(path.name, *files, None, device_memory, top,
                        by_profkit=_in_a_run(path), why_no_memory=_why_in_run(path))]
    from profiler_kit.results import read_run

    run = read_run(path / "run.json")
    if device_memory is None:
        recorded = run.environment.get("device_memory_bytes") or []
        device_memory = max(recorded) if recorded and run.device != "cpu" else None
    out = []
    for s in run.strategies:
        if s.status != "ok" or not s.dir:
            continue
        label = f"{s.name} [{s.point}]" if s.point else s.name
        out.append(explain(label, *_kinds(_folder_files(path / s.dir), traces),
                           s.items_per_step or None, device_memory, top, by_profkit=True,
                           why_no_memory=_why_no_memory(run.options, s.info)))
    return out


def _in_a_run(folder: Path) -> bool:
    """Whether ``folder`` is (in) a run folder ``profkit run`` made: a strategy folder, a
    sweep point's, or a folder below one (run.json at most three levels up)."""
    folder = folder.resolve()
    return any((f / "run.json").is_file() for f in (folder, *folder.parents[:3]))


def _why_in_run(folder: Path) -> Note | None:
    """:func:`_why_no_memory` for a strategy folder of a run (its run.json one level up)."""
    run_json = folder.parent / "run.json"
    if not run_json.is_file():
        return None
    from profiler_kit.errors import UsageError
    from profiler_kit.results import read_run

    try:
        run = read_run(run_json)
    except UsageError:  # a run.json this version cannot read: the general reason stands
        return None
    for s in run.strategies:
        if s.dir and (folder.parent / s.dir).resolve() == folder.resolve():
            return _why_no_memory(run.options, s.info)
    return None


def _why_no_memory(options: dict, info: dict) -> Note | None:
    """Why a strategy's traces have no memory events, where the run recorded it."""
    if options.get("profile_memory") is False:
        return note("no_memory_events_profile_memory_off")
    if info.get("cpu_memory"):  # a threaded strategy (profile_all_threads)
        return note("no_memory_events_threaded")
    return None


def memory_report(paths: list[Path], device_memory: int | None, top: int = 10,
                  traces: bool = True) -> MemoryReport:
    found = [s for p in paths for s in sources(p, device_memory, top, traces)]
    return combine(found, device_memory)
