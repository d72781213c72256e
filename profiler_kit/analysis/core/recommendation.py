"""A recommendation and its evidence: the record every rule table returns.

A rule states what it measured (``measured``), the line it crossed (``threshold``, and
whether it fires above or below it) and the numbers behind it (``evidence``: label, raw
value, unit), so a reader can check it. Values stay raw (ns, bytes, fractions);
renderers format them.
"""

from __future__ import annotations

import msgspec


class Evidence(msgspec.Struct, frozen=True):
    label: str
    value: float | int | str
    unit: str  # "ns", "bytes", "fraction", "count", "" (plain)
    name: str = ""  # the kernel or op this line is about, when it is about one


class Recommendation(msgspec.Struct, frozen=True):
    rule: str  # stable id, e.g. "low_gpu_utilization"
    scope: str  # "trace" or a device ("cuda:0")
    title: str
    advice: str
    measured: float
    threshold: float
    fires_when: str  # "above" or "below"
    unit: str  # unit of measured/threshold: "fraction", "count", ...
    evidence: tuple[Evidence, ...]
