"""Read the ``<worker>.memory_categories.json`` a run keeps (``profkit run --with-stack``)."""

from __future__ import annotations

from pathlib import Path

import msgspec

from profiler_kit.analysis.core.note import Note
from profiler_kit.analysis.memory.categories import CategoriesDocument, CategoryPeak, category_peaks
from profiler_kit.errors import TraceError


def read_category_peaks(path: str | Path) -> tuple[list[CategoryPeak], Note | None]:
    """The peak per device in the file at ``path``, and a note (see ``category_peaks``);
    a file that cannot be read or is not a categories file raises one-line TraceError."""
    path = Path(path)
    try:
        doc = msgspec.json.decode(path.read_bytes(), type=CategoriesDocument)
    except OSError as exc:
        raise TraceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise TraceError(f"{path}: not a memory categories file ({exc})") from None
    return category_peaks(doc, str(path))
