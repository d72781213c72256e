"""pyproject.toml ships every package of the source tree, and its data files.

The package list is explicit (``scenarios/`` is installed as ``profiler_kit.scenarios``), so
a new subpackage that is not named there works in an editable install and is missing from
a wheel: this test catches that.
"""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def _packages_on_disk() -> set[str]:
    found = set()
    for prefix, folder in (("profiler_kit", ROOT / "profiler_kit"),
                           ("profiler_kit.scenarios", ROOT / "scenarios")):
        for init in folder.rglob("__init__.py"):
            parts = init.parent.relative_to(folder).parts
            found.add(".".join([prefix, *parts]))
    return found


def test_every_package_is_shipped():
    assert set(SETUPTOOLS["packages"]) == _packages_on_disk()


def test_package_data_globs_match_files():
    for package, globs in SETUPTOOLS.get("package-data", {}).items():
        folder = ROOT / "profiler_kit" / Path(*package.split(".")[1:])
        for pattern in globs:
            assert list(folder.glob(pattern)), f"{package}: {pattern} matches no file"
