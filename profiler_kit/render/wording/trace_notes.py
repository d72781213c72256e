"""The sentences of the notes of trace analyses, by code (see :mod:`.notes`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

SENTENCES: dict[str, Callable[[Mapping[str, Any]], str]] = {}
