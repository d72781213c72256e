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

    def __hash__(self) -> int:
        return stable_hash(self)


def stable_hash(s: msgspec.Struct) -> int:
    """A hash of a frozen Struct whose fields hold dicts or lists (figures): of its JSON with
    sorted keys, so that equal ones hash alike, a tuple hashes as the list it decodes to,
    and one read back from JSON hashes as the one written."""
    return hash(msgspec.json.encode(s, order="sorted"))


def note(code: str, **figures: Any) -> Note:
    """A note with its figures given by name."""
    return Note(code, figures)
