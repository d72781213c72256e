"""The sentence of each note code (:class:`~profiler_kit.analysis.core.note.Note`), one
table per room of the analyses, joined here: every format says a note with :func:`say`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from profiler_kit.analysis.core.note import Note
from profiler_kit.render.wording import job_notes, trace_notes, whatif_notes

Sentence = Callable[[Mapping[str, Any]], str]

SENTENCES: dict[str, Sentence] = {}
for _table in (trace_notes.SENTENCES, whatif_notes.SENTENCES, job_notes.SENTENCES):
    _clash = SENTENCES.keys() & _table.keys()
    assert not _clash, f"note codes worded twice: {sorted(_clash)}"
    SENTENCES.update(_table)


def say(n: Note) -> str:
    """The note's sentence, as every format shows it."""
    return SENTENCES[n.code](n.figures)


def said(notes: Iterable[Note]) -> list[str]:
    return [say(n) for n in notes]
