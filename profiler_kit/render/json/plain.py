"""Analyses as plain JSON data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from profiler_kit.analysis.core.note import Note
from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.render.wording.notes import say


def plain(value: Any) -> Any:
    """Plain JSON data: Structs as dicts (``klass`` fields are named ``class``), tuples as
    lists. NaN stays a float, which the JSON encoder writes as ``null``."""
    return msgspec.to_builtins(value, str_keys=True)


def recommendations(recs: Iterable[Recommendation]) -> list[dict[str, Any]]:
    """Recommendations as plain JSON data, the notes on their predictions said."""
    out = []
    for r in recs:
        doc = plain(r)
        for name in ("prediction_caveat", "no_prediction"):
            found: Note | None = getattr(r, name)
            doc[name] = say(found) if found is not None else None
        out.append(doc)
    return out
