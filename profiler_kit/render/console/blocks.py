"""The presenters' blocks (:mod:`profiler_kit.render.sections.blocks`) as rich renderables."""

from __future__ import annotations

from collections.abc import Iterable

from rich import box
from rich.console import RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from profiler_kit.render.console.fit import FitTable
from profiler_kit.render.sections.blocks import Block, Cell, Grid, Lines, Styled

TABLE = {"box": box.SIMPLE_HEAD, "pad_edge": False, "title_justify": "left",
         "title_style": "bold"}


def renderable(block: Block) -> RenderableType:
    """One block as rich draws it: text as ``Text`` (never markup), a grid as a table."""
    if isinstance(block, Lines):
        text = Text(style=block.style)
        for piece in block.pieces:
            text.append(piece.text, style=piece.style)
        return text
    return _table(block)


def renderables(blocks: Iterable[Block]) -> list[RenderableType]:
    return [renderable(b) for b in blocks]


def _cell(cell: Cell) -> Text:
    if isinstance(cell, Styled):
        return Text(cell.text, style=cell.style, overflow=cell.overflow)  # type: ignore[arg-type]
    return Text(cell)


def _table(grid: Grid) -> Table:
    # a title in the table's bold, its brackets kept as text; a styled one as it is
    title = _cell(grid.title) if isinstance(grid.title, Styled) else escape(grid.title)
    t = Table(title=title, **TABLE) if grid.fit is None else \
        FitTable(title=title, kinds=dict(grid.fit), repeat=grid.repeat,
                 joined=grid.joined, **TABLE)
    for c in grid.columns:
        t.add_column(_cell(c.header),  # as a cell: text, never markup
                     justify=c.justify, no_wrap=c.no_wrap,  # type: ignore[arg-type]
                     min_width=c.min_width, max_width=c.max_width,
                     overflow=c.overflow)  # type: ignore[arg-type]
    for row in grid.rows:
        t.add_row(*(_cell(c) for c in row))
    if grid.caption is not None:
        t.caption = grid.caption
        if grid.caption_left:
            t.caption_justify = "left"
    return t
