"""Markdown tables: a pipe table whose cells keep their ``|`` and stay on one line."""

from __future__ import annotations

from collections.abc import Sequence


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The table's lines and a blank one after it."""
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return out + [""]
