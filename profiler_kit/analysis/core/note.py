"""A note: what an analysis could not judge, or what to know before reading its figures,
as a stable code and the figures behind it.

Analyses return notes, never sentences: :func:`profiler_kit.render.wording.notes.say`
writes the one sentence every format shows for a code, from its figures (raw values: ns,
bytes, counts, names), so the words live in one layer and a test can ask which notes a
trace gives by code.
"""

from __future__ import annotations

from typing import Any

import msgspec


class Note(msgspec.Struct, frozen=True):
    code: str  # stable id, e.g. "cpu_rules_no_op_time"
    figures: dict[str, Any] = msgspec.field(default_factory=dict)

    def __hash__(self) -> int:  # the figures are a dict: hash the code and their items
        return hash((self.code, tuple(sorted(self.figures.items(), key=lambda kv: kv[0]))))


def note(code: str, **figures: Any) -> Note:
    """A note with its figures given by name."""
    return Note(code, figures)
