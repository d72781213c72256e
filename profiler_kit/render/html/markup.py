"""HTML pieces of the report's page: escaped text and plain tables."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any


def e(text: Any) -> str:
    """``text`` escaped for an element or an attribute."""
    return html.escape(str(text), quote=True)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1) -> str:
    """A table of cells already in HTML; the columns from ``numeric_from`` on align right."""
    head = "".join(f"<th>{e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="num">{cell}</td>' if i >= numeric_from else f"<td>{cell}</td>"
            for i, cell in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
