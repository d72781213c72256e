"""The presenters are found in their modules and placed by ``order``: a new presenter
needs no edit to a list, and two that claim one place, or one with none, fail at import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from profiler_kit.render import sections
from profiler_kit.render.sections import PRESENTERS, Presenter

SECTIONS = Path(sections.__file__).parent


def test_every_presenter_class_is_found_once_in_its_order():
    defined = {node.name for path in SECTIONS.glob("*.py")
               for node in ast.parse(path.read_text(encoding="utf-8")).body
               if isinstance(node, ast.ClassDef)
               and any(getattr(b, "id", None) == "Presenter" for b in node.bases)}
    found = [type(p).__name__ for p in PRESENTERS]
    assert sorted(found) == sorted(defined)
    orders = [p.order for p in PRESENTERS]
    assert orders == sorted(set(orders))
    # the new copies section sits between the idle gaps and the GPU time
    assert found.index("IdleGapsPresenter") + 1 == found.index("CopiesPresenter") \
        == found.index("GpuTime") - 1


def test_a_presenter_without_a_place_or_on_a_taken_one_is_named(monkeypatch, tmp_path):
    import sys
    import types

    module = types.ModuleType("profiler_kit.render.sections.extra")

    class Unplaced(Presenter):
        pass

    Unplaced.__module__ = module.__name__
    module.Unplaced = Unplaced
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(sections, "__path__", [*sections.__path__, str(tmp_path)])
    (tmp_path / "extra.py").write_text("")
    with pytest.raises(TypeError, match="presenters without an order: Unplaced"):
        sections._found()
    Unplaced.order = 90  # the idle gaps'
    with pytest.raises(TypeError, match="IdleGapsPresenter and Unplaced share the order 90"):
        sections._found()
