"""The JSON reference as the guide shows it: ``docs/analysis-json.md`` with each analysis
page's *In the JSON* section gathered in (the guide's own hook, ``docs/analyses/gathered.py``),
so a key documented on its analysis's page counts as documented."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

GATHERED = Path(__file__).resolve().parents[1] / "docs" / "analyses" / "gathered.py"
_spec = importlib.util.spec_from_file_location("docs_gathered", GATHERED)
gathered = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gathered)


def reference() -> str:
    return gathered.json_reference()


def trace_object_fields() -> set[str]:
    """The keys of a trace object: the first column of the *Trace object* table, and the
    keys each analysis page's JSON section opens with (``gpu_counters`` in "`gpu_counters` (object
    or null) ...")."""
    names: set[str] = set()
    table = reference().split("\n## Trace object\n", 1)[1].split("\n#", 1)[0]
    for row in table.splitlines():
        if row.startswith("| `"):
            names.update(re.findall(r"`([a-z_]+)`", row.split("|")[1]))
    for page in sorted(gathered.HERE.glob("*.md")):
        body = gathered.json_section(page)
        if body is not None:
            names.update(re.findall(r"`([a-z_]+)`", body.split(" (", 1)[0]))
    return names
