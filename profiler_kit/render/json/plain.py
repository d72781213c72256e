"""Analyses as plain JSON data."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from profiler_kit.analysis.core.note import Note
from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.render.wording import rules
from profiler_kit.render.wording.notes import say


def plain(value: Any) -> Any:
    """Plain JSON data: Structs as dicts (``klass`` fields are named ``class``), tuples as
    lists. NaN stays a float, which the JSON encoder writes as ``null``."""
    return msgspec.to_builtins(value, str_keys=True)


def recommendations(recs: Iterable[Recommendation]) -> list[dict[str, Any]]:
    """Recommendations as plain JSON data: the rule's title and advice said in place of the
    branch and figures they are worded from, and the notes on their predictions said."""
    out = []
    for r in recs:
        doc = plain(r)
        del doc["variant"], doc["figures"]
        doc = {"rule": doc.pop("rule"), "scope": doc.pop("scope"), "title": rules.title(r),
               "advice": rules.advice(r), **doc}
        for name in ("prediction_caveat", "no_prediction"):
            found: Note | None = getattr(r, name)
            doc[name] = say(found) if found is not None else None
        out.append(doc)
    return out
