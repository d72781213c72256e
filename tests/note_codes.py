"""The notes the source can give, read with ``ast`` (nothing imported): each
``note(code, **figures)`` call's code and the names of its figures, so a test can hold a
table of sentences to exactly the codes the analyses make."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path


def note_calls(paths: Iterable[Path]) -> dict[str, set[frozenset[str] | None]]:
    """code -> the sets of names of its figures, one per way the source makes it, for every
    ``note(...)`` and ``Note(...)`` call in ``paths`` (a code chosen by a conditional counts
    both ways; None for a ``Note(code, figures)``, whose figures are another note's)."""
    found: dict[str, set[frozenset[str] | None]] = {}
    for path in paths:
        for call in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    and call.func.id in ("note", "Note")):
                continue
            codes = [c.value for c in ast.walk(call.args[0]) if isinstance(c, ast.Constant)]
            assert codes, ast.unparse(call)
            names = frozenset(k.arg for k in call.keywords) if call.func.id == "note" \
                else None
            for code in codes:
                found.setdefault(code, set()).add(names)
    return found
