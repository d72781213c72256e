"""Output paths: checked before any work, written atomically, errors in one line.

Every command that writes a file the user named (``--json``, ``--markdown``, ``--html``,
``-o``, ``--json-report``, ``run --out``) checks it here first, so a mistake costs no
work and nothing the user owns is lost: a path that is one of the inputs, an existing
trace, a folder, or an existing file profkit did not write is refused; a file profkit
wrote earlier is replaced only with ``--force``, except the file profkit names by itself
in a folder it made (a run folder's ``report.html`` when ``report`` is given no ``-o``),
which it rewrites when profkit wrote it; ``-`` means stdout. Problems found before the
work starts exit 2; a write that fails after the work exits 1.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, TypeVar

from profiler_kit.errors import OutputError, UsageError
from profiler_kit.util.artifacts import write_text_atomic

STDOUT = "-"
T = TypeVar("T")
SNIFF_BYTES = 1 << 16
# what the start of every file profkit writes holds: JSON schemas, Markdown headings,
# the HTML report's generator tag
_PROFKIT_MARKS = (b'"schema": "profkit.', b'"schema":"profkit.',
                  b'<meta name="generator" content="profkit')
_PROFKIT_HEADINGS = (b"# profkit ",)


def check(path: str | None, flag: str, *, inputs: Iterable[str | os.PathLike[str]] = (),
          force: bool = False, own: bool = False) -> Path | None:
    """The file ``flag`` names, checked: None for stdout (``-``) or when not given.

    ``own``: the path is not the user's choice but the file profkit names by itself in a
    folder profkit made (a run's ``report.html``); a file profkit wrote there is replaced
    without ``force``, anything else there is refused as always.
    Raises ``UsageError`` (exit 2) for a path that must not be written.
    """
    if path is None:
        return None
    if path == STDOUT:
        return None
    if not path.strip():
        raise UsageError(f"{flag}: empty file name (give a path, or - for stdout)")
    try:
        return _checked(Path(path), flag, inputs, force, own)
    except OSError as exc:  # a folder on the way that may not be looked into
        raise UsageError(f"{flag} {path}: {problem(exc)}") from None


def _checked(target: Path, flag: str, inputs: Iterable[str | os.PathLike[str]],
             force: bool, own: bool = False) -> Path:
    path = str(target)
    resolved = target.resolve()
    if resolved in {Path(p).resolve() for p in inputs}:
        raise UsageError(f"{flag} {path}: that is one of the inputs; refusing to overwrite it")
    if target.is_dir():
        raise UsageError(f"{flag} {path}: is a folder; give a file name")
    if target.exists():
        _check_existing(target, flag, force, own)
    check_parent(target, flag)
    return target


def optional_value(argv: list[str], flag: str,
                   is_input: Callable[[Path], bool] | None = None) -> list[str]:
    """``argv`` with an optional-value output ``flag`` (``--json [FILE]``) kept from taking
    an input as its file: argparse gives ``flag`` the next word, so ``--json trace.json.gz``
    would name the trace as the output. Where that word names an existing input (a folder,
    a trace, or a file ``is_input`` accepts), the word stays with the other
    inputs and ``flag`` writes to stdout, as ``flag`` alone does: ``FLAG WORD`` becomes
    ``WORD ... FLAG -``. ``--json=FILE`` and ``--json -`` are left as they are, and so is a
    word also given as an input elsewhere: that output is refused (:func:`check`).
    """
    argv = list(argv)
    end = argv.index("--") if "--" in argv else len(argv)
    for i in range(end - 1):
        if argv[i] != flag:
            continue
        word = argv[i + 1]
        if word.startswith("-") or not _names_an_input(Path(word), is_input):
            return argv
        rest = [*argv[:i], *argv[i + 2:]]
        if Path(word).resolve() in {Path(a).resolve() for a in rest if not a.startswith("-")}:
            return argv  # given as an input too: FLAG names it as the output, refused
        return [*argv[:i], *argv[i + 1:end], flag, STDOUT, *argv[end:]]
    return argv


def _names_an_input(path: Path, is_input: Callable[[Path], bool] | None) -> bool:
    from profiler_kit.util.path_kinds import PathKind, kind_of

    kind = kind_of(path)
    if kind is PathKind.MISSING:
        return False  # a file to write (or one the check will say is wrong)
    return (kind in (PathKind.FOLDER, PathKind.RUN_FOLDER, PathKind.TRACE,
                     PathKind.MERGED_TRACE)
            or (is_input is not None and is_input(path)))


def check_distinct(flags_and_paths: Iterable[tuple[str, Path | None]]) -> None:
    """Two outputs of one command may not be the same file."""
    seen: dict[Path, str] = {}
    for flag, target in flags_and_paths:
        if target is None:
            continue
        key = target.resolve()
        if key in seen:
            raise UsageError(f"{flag} {target}: {seen[key]} writes the same file")
        seen[key] = flag


def _check_existing(target: Path, flag: str, force: bool, own: bool = False) -> None:
    from profiler_kit.util.path_kinds import PathKind, kind_of

    kind = kind_of(target)
    if kind is PathKind.MERGED_TRACE:
        if not force:
            raise UsageError(f"{flag} {target}: exists (a trace profkit merged earlier); add "
                             "--force to replace it")
        return
    if kind is PathKind.TRACE:
        hint = ""
        if flag == "--json":
            hint = " (for JSON on stdout, write --json - or put --json after the paths)"
        raise UsageError(f"{flag} {target}: an existing trace; refusing to overwrite it{hint}")
    if kind is PathKind.RUN_RECORD:
        raise UsageError(f"{flag} {target}: a run's record (run.json); refusing to overwrite it")
    if not written_by_profkit(target):
        other = "give another name with -o FILE" if own else "choose another name"
        raise UsageError(f"{flag} {target}: an existing file profkit did not write; refusing "
                         f"to overwrite it ({other})")
    if not force and not own:
        raise UsageError(f"{flag} {target}: exists (written by profkit earlier); add --force "
                         "to replace it")


def written_by_profkit(path: Path) -> bool:
    """Whether ``path`` starts as every report profkit writes does."""
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return False
    return any(m in head for m in _PROFKIT_MARKS) or head.startswith(_PROFKIT_HEADINGS)


def write_stream(target: Path, produce: Callable[[IO[bytes]], T]) -> T:
    """Write what ``produce`` writes into the file object it is given to ``target``
    atomically, gzip-compressed when the name ends in ``.gz``; return what it returns.
    A failed write is an ``OutputError`` (exit 1), and no partial file is left."""
    import gzip

    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as raw:
            if target.name.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=3, mtime=0) as fh:
                    result = produce(fh)  # type: ignore[arg-type]
            else:
                result = produce(raw)
        os.replace(tmp, target)
    except OSError as exc:
        raise write_error(target, exc) from None
    finally:
        tmp.unlink(missing_ok=True)
    return result


def check_parent(target: Path, flag: str) -> None:
    """The folder ``target`` goes into exists (or can be made) and can be written to."""
    folder = target.parent
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    check_folder(existing, flag, what=str(target))


def check_folder(folder: str | os.PathLike[str], flag: str, what: str | None = None) -> None:
    """An existing ``folder`` that is a folder this process may create files in; a folder
    that does not exist yet is checked at its nearest existing parent."""
    folder = Path(folder)
    name = what or str(folder)
    existing = folder
    try:
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
    except OSError as exc:
        raise UsageError(f"{flag} {name}: {problem(exc)}") from None
    if not existing.is_dir():
        raise UsageError(f"{flag} {name}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {name}: permission denied (cannot write in {existing})")


def write(target: Path | None, text: str, *, after_work: bool = True) -> None:
    """Write ``text`` to ``target`` atomically (None: stdout).

    A failure is one ``OutputError`` line naming the path and the problem; its exit
    status is 1 once the work is done (``after_work``), else 2.
    """
    if target is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(target, text)
    except OSError as exc:
        raise write_error(target, exc, after_work) from None


def write_error(target: Path | str, exc: OSError, after_work: bool = True) -> OutputError:
    """The one line for an ``OSError`` while writing ``target``."""
    return OutputError(f"{target}: cannot write: {problem(exc)}",
                       exit_code=1 if after_work else 2)


def problem(exc: OSError) -> str:
    """What went wrong, in words: permission denied, not a directory, disk full..."""
    known = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
             errno.ENOTDIR: "not a directory", errno.ENOSPC: "disk full (no space left)",
             errno.EDQUOT: "disk quota exceeded", errno.EROFS: "read-only file system",
             errno.EISDIR: "is a directory", errno.ENOENT: "no such file or directory"}
    return known.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
