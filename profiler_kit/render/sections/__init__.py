"""The presenters, in the one order every format follows.

The console and Markdown show a trace's sections in this order, the JSON writes a trace's
keys in it, and the HTML report opens its sections as the presenters first fill them.
Each presenter is found in its module here and placed by its ``order``, so adding an
analysis is its module in its room of ``analysis/`` (with its field in
``TraceAnalysis``), its presenter module here and its docs page (see
docs/architecture.md).
"""

from __future__ import annotations

import importlib
import pkgutil

from profiler_kit.render.sections.base import Body, Page, Presenter, View


def _found() -> tuple[Presenter, ...]:
    """One of each presenter class defined in this package's modules, by ``order``."""
    classes: list[type[Presenter]] = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        classes += [c for c in vars(module).values() if isinstance(c, type)
                    and issubclass(c, Presenter) and c is not Presenter
                    and c.__module__ == module.__name__]
    unplaced = [c.__name__ for c in classes if "order" not in vars(c)]
    if unplaced:
        raise TypeError(f"presenters without an order: {', '.join(sorted(unplaced))}")
    by_order: dict[int, str] = {}
    for c in classes:
        if c.order in by_order:
            raise TypeError(f"presenters {by_order[c.order]} and {c.__name__} share the "
                            f"order {c.order}")
        by_order[c.order] = c.__name__
    return tuple(c() for c in sorted(classes, key=lambda c: c.order))


PRESENTERS: tuple[Presenter, ...] = _found()

__all__ = ["PRESENTERS", "Body", "Page", "Presenter", "View"]
