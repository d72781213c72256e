"""Tables that keep their cells whole on a narrow console.

Rich, given a table wider than the console, cuts cells with ``…`` and breaks words where
they fall. A :class:`FitTable` renders as a plain table where it fits; where it does not,
it lays itself out again for the width it is given: headers wrap at their spaces; cells
of free text and names wrap at word boundaries (``WORDS``: at spaces, a number keeping
its unit; ``NAMES``: also between names joined by ``+``, ``.``, ``/``; ``TEXT``: then
between the words of a name too long for the column, folded only where it has none);
the other cells (``WHOLE``: figures, speedups and their marks, status words) stay whole;
and the least important columns are left out (named in the caption) or, for tables of
many like columns, continued below. Formats only.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Mapping, Sequence
from itertools import pairwise

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Column, Table
from rich.text import Text

from profiler_kit.render.sections.blocks import NAMES, TEXT, WHOLE, WORDS

__all__ = ["NAMES", "TEXT", "WHOLE", "WORDS", "FitTable", "wrap"]

# WHOLE: never broken: figures, speedups with their marks, status words; WORDS: broken at
# spaces only: every word (a name, a number and its unit) whole; NAMES: also between names
# joined by + . / # (``channels_last+compile``), each whole; TEXT: prose or names: at
# spaces, then a too-long word at its parts, then folded

_UNIT = re.compile(r"[^\w\s]|[a-zA-Zµ/]{1,6}")  # "%", "ms", "MiB", "×", "~", "/", "steps"
_NUMBER = re.compile(r"[-+−±]?[\d.,]+")
FOLDED = 16  # a word of TEXT longer than this, with nowhere to break, may be folded
_OPEN = "(<["
_AFTER = ".#/:,;)]>+"


def _words(line: str) -> list[tuple[int, int]]:
    """The unbreakable runs of ``line`` between spaces: a mark or a unit stays with the
    number before it (``45.2 %``, ``0.97× ~``, ``13 ms /``)."""
    runs: list[tuple[int, int]] = []
    for m in re.finditer(r"\S+", line):
        if runs and _UNIT.fullmatch(m.group()) and (len(m.group()) == 1 or _NUMBER.fullmatch(
                line[runs[-1][0]:runs[-1][1]].rsplit(" ", 1)[-1])):
            runs[-1] = (runs[-1][0], m.end())
        else:
            runs.append((m.start(), m.end()))
    return runs


def _cuts(word: str, camel: bool) -> list[int]:
    """Where a name may break: after ``.#/:,;)]>+``, before ``(<[``, and with ``camel``
    also between the words of ``camelCase`` and ``snake_case``."""
    cuts = []
    for i in range(1, len(word)):
        a, b = word[i - 1], word[i]
        if (a in _AFTER and b not in _AFTER) or (b in _OPEN and a not in _OPEN) or (
                camel and ((a.islower() and b.isupper()) or (a == "_" and b != "_"))):
            cuts.append(i)
    return cuts


def _parts(word: str, width: int, camel: bool = True) -> list[tuple[int, int]]:
    """``word`` in parts of at most ``width`` cells: at its separators, then (``camel``)
    between its words, folded only where a part has none."""
    out: list[tuple[int, int]] = [(0, len(word))]
    for between_words in (False, True)[:1 + camel]:
        split: list[tuple[int, int]] = []
        for a, b in out:
            if cell_len(word[a:b]) <= width:
                split.append((a, b))
                continue
            cuts = [a] + [a + c for c in _cuts(word[a:b], between_words)] + [b]
            start = a
            for prev, cut in pairwise(cuts):
                if cell_len(word[start:cut]) > width and prev > start:
                    split.append((start, prev))
                    start = prev
            split.append((start, b))
        out = split
    folded: list[tuple[int, int]] = []
    for a, b in out:
        while cell_len(word[a:b]) > width:
            end = a + 1
            while end < b and cell_len(word[a:end + 1]) <= width:
                end += 1
            folded.append((a, end))
            a = end
        folded.append((a, b))
    return folded


def _pieces(line: str, kind: str) -> list[tuple[int, int]]:
    """The smallest runs of ``line`` a cell of ``kind`` may break between."""
    if kind == WHOLE:
        return [(0, len(line))] if line else []
    if kind == WORDS:
        return _words(line)
    return [(a + x, a + y) for a, b in _words(line)
            for x, y in _name_pieces(line[a:b], kind == TEXT)]


def _name_pieces(word: str, camel: bool) -> list[tuple[int, int]]:
    cuts = [0, *_cuts(word, camel), len(word)]
    return [(a, b) for a, b in pairwise(cuts) if b > a]


def _head(kind: str) -> str:
    """How a column's header breaks: at its spaces, or as its cells where they are TEXT
    (a header that is a file's path)."""
    return TEXT if kind == TEXT else WORDS


def least(text: str, kind: str) -> int:
    """The narrowest a cell of ``kind`` can be without breaking what must stay whole."""
    widths = [cell_len(line[a:b]) for line in text.split("\n") for a, b in _pieces(line, kind)]
    return min(max(widths, default=0), FOLDED) if kind == TEXT else max(widths, default=0)


def wrap(text: Text, width: int, kind: str) -> Text:
    """``text`` broken into lines of at most ``width`` cells as ``kind`` allows (styles
    kept); a ``WHOLE`` cell is left as it is."""
    plain = text.plain
    if kind == WHOLE or all(cell_len(line) <= width for line in plain.split("\n")):
        return text
    spans: list[tuple[int, int]] = []
    offset = 0
    for line in plain.split("\n"):
        start = end = None
        for a, b in _words(line):
            runs = [(a, b)] if kind == WORDS or cell_len(line[a:b]) <= width else \
                [(a + x, a + y) for x, y in _parts(line[a:b], width, kind == TEXT)]
            for x, y in runs:  # the parts of one word join again where they fit
                if start is None:
                    start, end = x, y
                elif cell_len(line[start:y]) <= width:
                    end = y
                else:
                    spans.append((offset + start, offset + end))
                    start, end = x, y
        spans.append((offset + (start or 0), offset + (end or 0)))
        offset += len(line) + 1
    return Text("\n").join(text[a:b] for a, b in spans)


@dataclasses.dataclass(frozen=True)
class _Layout:
    parts: list[list[tuple[int, int]]]  # per table, (column index, content width) shown
    left_out: list[str]  # headers of the columns left out


class FitTable(Table):
    """A :class:`rich.table.Table` that keeps its cells whole when the console is narrower
    than the table (see the module's docstring).

    ``kinds`` maps headers to ``WORDS``, ``NAMES`` or ``TEXT`` (the others are
    ``WHOLE``); ``least`` sets a column's narrowest width (for a cell that must keep a
    phrase whole at its start); ``drop`` lists groups of headers to leave out, first to
    last, until the table fits, and ``left_out`` is the caption line that names them
    (``{}``: the headers); ``repeat`` columns (the first ones) head each part of a table
    continued below where it still does not fit, where a column headed as one of
    ``joined`` stays in the part of the column before it."""

    def __init__(self, *headers: str | Column, kinds: Mapping[str, str] | None = None,
                 least: Mapping[str, int] | None = None, drop: Sequence[Sequence[str]] = (),
                 left_out: str = "left out at this width: {}", repeat: int = 0,
                 joined: Sequence[str] = (), **kwargs: object) -> None:
        super().__init__(*headers, **kwargs)  # type: ignore[arg-type]
        self.kinds = dict(kinds or {})
        self.narrowest = dict(least or {})
        self.drop = [tuple(g) for g in drop]
        self.left_out = left_out
        self.repeat = repeat
        self.joined = frozenset(joined)
        self.fits = True  # False on the copies laid out for a narrow console

    def _overhead(self, n: int) -> int:
        _, right, _, left = self.padding
        pads = n * (left + right) - (0 if self.pad_edge or not n else left + right)
        edges = ((2 if self.show_edge else 0) + max(n - 1, 0)) if self.box else 0
        return pads + edges

    def _texts(self, console: Console) -> list[list[Text]] | None:
        """Each column's header and cells as Text (None where a cell is no text)."""
        out = []
        for c in self.columns:
            cells = []
            for cell in (c.header, *c.cells):
                if isinstance(cell, str):
                    cell = console.render_str(cell, highlight=False)
                if not isinstance(cell, Text):
                    return None
                cells.append(cell)
            out.append(cells)
        return out

    def _layout(self, texts: list[list[Text]], width: int) -> _Layout | None:
        """None when the table fits as it is."""
        names = [t[0].plain.replace("\n", " ") for t in texts]

        def natural(i: int, min_width: bool = True) -> int:
            w = max(cell_len(line) for t in texts[i] for line in t.plain.split("\n"))
            c = self.columns[i]
            w = max(w, (c.min_width or 0) if min_width else 0)
            return w if c.max_width is None else min(w, c.max_width)

        if sum(natural(i) for i in range(len(texts))) + self._overhead(len(texts)) <= width:
            return None
        # laid out anew: a column's min_width (to line up with other tables on a wide
        # console) gives its room to what would otherwise wrap
        full = [natural(i, min_width=False) for i in range(len(texts))]
        kinds = [self.kinds.get(n, WHOLE) for n in names]
        low = [max(least(texts[i][0].plain, _head(kinds[i])), self.narrowest.get(names[i], 0),
                   *(least(t.plain, kinds[i]) for t in texts[i][1:]))
               for i in range(len(texts))]
        kept = list(range(len(texts)))
        left_out: list[str] = []

        def fits(columns: list[int]) -> bool:
            return sum(low[i] for i in columns) + self._overhead(len(columns)) <= width

        for group in self.drop:
            if fits(kept):
                break
            left_out += [names[i] for i in kept if names[i] in group]
            kept = [i for i in kept if names[i] not in group]
        parts = [kept]
        if self.repeat and not fits(kept):  # continued below: with every column
            kept, left_out = list(range(len(texts))), []
            head, parts = kept[:self.repeat], []
            groups: list[list[int]] = []  # a column of ``joined`` stays with the one before
            for i in kept[self.repeat:]:
                if groups and names[i] in self.joined:
                    groups[-1].append(i)
                else:
                    groups.append([i])
            for group in groups:
                if parts and fits(parts[-1] + group):
                    parts[-1] += group
                else:
                    parts.append([*head, *group])
            parts = parts or [kept]
        return _Layout([self._widths(p, low, full, kinds, width) for p in parts], left_out)

    def _widths(self, columns: list[int], low: list[int], full: list[int], kinds: list[str],
                width: int) -> list[tuple[int, int]]:
        """The room beyond each column's narrowest: to the headers that wrap, the nearest
        to whole first (a header wraps once, free text in every row), then to the free
        text, evenly."""
        widths = {i: low[i] for i in columns}
        room = width - self._overhead(len(columns)) - sum(widths.values())
        for i in sorted((i for i in columns if kinds[i] == WHOLE and widths[i] < full[i]),
                        key=lambda i: full[i] - widths[i]):
            if full[i] - widths[i] <= room:
                room -= full[i] - widths[i]
                widths[i] = full[i]
        wrapping = [i for i in columns if kinds[i] != WHOLE]
        while room > 0:
            short = [i for i in wrapping if widths[i] < full[i]][:room]
            if not short:
                break
            for i in short:
                widths[i] += 1
            room -= len(short)
        return [(i, widths[i]) for i in columns]

    def _narrow(self, console: Console, width: int) -> list[Table] | None:
        """The tables to print at ``width`` in place of this one; None when it fits."""
        texts = self._texts(console) if self.fits else None
        layout = None if texts is None else self._layout(texts, width)
        if texts is None or layout is None:
            return None
        tables = []
        for n, part in enumerate(layout.parts):
            t = copy.copy(self)
            t.fits = False
            t.columns = []
            if n:
                t.title = None
            if n < len(layout.parts) - 1:
                t.caption = None
            for i, w in part:
                c = self.columns[i]
                kind = self.kinds.get(texts[i][0].plain.replace("\n", " "), WHOLE)
                t.columns.append(dataclasses.replace(
                    c, header=wrap(texts[i][0], w, _head(kind)), width=w, min_width=None,
                    max_width=None, no_wrap=False, overflow="fold", _index=len(t.columns),
                    _cells=[wrap(cell, w, kind) for cell in texts[i][1:]]))
            tables.append(t)
        if layout.left_out:
            last = tables[-1]
            note = self.left_out.format(", ".join(layout.left_out))
            last.caption = f"{last.caption}\n{note}" if last.caption else note
            last.caption_justify = "left"
        return tables

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        tables = self._narrow(console, options.max_width)
        if tables is None:
            yield from super().__rich_console__(console, options)
            return
        yield from tables

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        tables = self._narrow(console, options.max_width)
        if tables is None:
            return super().__rich_measure__(console, options)
        sizes = [Measurement.get(console, options, t) for t in tables]
        return Measurement(max(s.minimum for s in sizes), max(s.maximum for s in sizes))

