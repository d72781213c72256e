"""Analyses as plain JSON data."""

from __future__ import annotations

from typing import Any

import msgspec


def plain(value: Any) -> Any:
    """Plain JSON data: Structs as dicts (``klass`` fields are named ``class``), tuples as
    lists. NaN stays a float, which the JSON encoder writes as ``null``."""
    return msgspec.to_builtins(value, str_keys=True)
