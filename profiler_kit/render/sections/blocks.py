"""What a presenter hands the console, as plain data: styled text and tables with their
layout. ``render/console/blocks`` makes rich renderables of them (only ``console/``
imports rich)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# how a column of a fitted table (``Grid.fit``) breaks on a narrow console
# (``render/console/fit``): figures never, words at spaces, names also at their joints,
# prose and names at spaces, then a long word at its parts
WHOLE, WORDS, NAMES, TEXT = "whole", "words", "names", "text"


@dataclass(frozen=True)
class Styled:
    """A piece of text in a style (rich's style words: ``"bold"``, ``"dim yellow"``)."""

    text: str
    style: str = ""
    overflow: str | None = None  # in a table cell: "fold" breaks it rather than cut it


Cell = str | Styled


@dataclass(frozen=True)
class Lines:
    """One block of text: ``style`` for all of it, each piece with its own on top."""

    pieces: tuple[Styled, ...]
    style: str = ""

    @classmethod
    def of(cls, text: str, style: str = "") -> Lines:
        return cls((Styled(text),), style)


@dataclass(frozen=True)
class Column:
    """A table column and how it lays out on a narrow console (its header plain text,
    never markup: a trace's label as it is)."""

    header: str
    justify: str = "left"
    no_wrap: bool = False
    min_width: int | None = None
    max_width: int | None = None
    overflow: str = "ellipsis"


@dataclass(frozen=True)
class Grid:
    """A table: ``title`` in bold (a ``Styled`` one in its own style); ``caption`` under it
    (left-aligned with ``caption_left``); ``fit``: the kinds of the columns that wrap as
    text when the console is too narrow (a FitTable; None: a plain table that cuts its
    cells); ``repeat``: with ``fit``, the first columns, repeated in each part of a table
    still too wide, continued below; ``joined``: the headers of the columns kept in the
    part of the column before them (a trace's Δ beside the trace)."""

    title: Cell
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    caption: str | None = None
    caption_left: bool = False
    fit: Mapping[str, str] | None = None
    repeat: int = 0
    joined: tuple[str, ...] = ()


Block = Lines | Grid
