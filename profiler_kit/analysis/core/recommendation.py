"""A recommendation and its evidence: the record every rule table returns.

A rule states what it measured (``measured``), the line it crossed (``threshold``, and
whether it fires above or below it) and the numbers behind it (``evidence``: label, raw
value, unit), so a reader can check it. Values stay raw (ns, bytes, fractions);
renderers format them. A rule whose advice a what-if change models also carries the step
the replay predicts with that change (``change``, ``predicted_step_ns``,
``predicted_gain_pct``: :mod:`profiler_kit.analysis.predicted_gains`).

A rule gives no sentences: :mod:`profiler_kit.render.wording.rules` writes its title and
advice from its code, the branch it took (``variant``) and its figures, so the words live
in one layer and every format says the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from profiler_kit.analysis.core.note import Note, stable_hash


class Evidence(msgspec.Struct, frozen=True):
    label: str
    value: float | int | str
    unit: str  # "ns", "bytes", "fraction", "count", "" (plain)
    name: str = ""  # the kernel or op this line is about, when it is about one


class Recommendation(msgspec.Struct, frozen=True):
    rule: str  # stable id, e.g. "low_gpu_utilization"
    scope: str  # "trace" or a device ("cuda:0")
    measured: float
    threshold: float
    fires_when: str  # "above" or "below"
    unit: str  # unit of measured/threshold: "fraction", "count", ...
    evidence: tuple[Evidence, ...]
    # the branch of the rule whose words fit ("": the rule has one) and the figures those
    # words say beyond ``measured`` and the evidence (raw values, codes, names)
    variant: str = ""
    figures: dict[str, Any] = msgspec.field(default_factory=dict)
    # the what-if change that models doing what the rule advises (as ``profkit whatif``
    # names it; None: none does, and the rule has no prediction)
    change: str | None = None
    # the replay's prediction with that change alone (None: not predicted): the step it
    # starts from (the replay of the unchanged trace, the median over the steps; the whole
    # trace without steps), the predicted step and its gain in percent of the former
    step_ns: int | None = None
    predicted_step_ns: int | None = None
    predicted_gain_pct: float | None = None
    # whether the replay of the unchanged trace matches the measurement (None: no prediction)
    prediction_trusted: bool | None = None
    # what to know before reading the prediction as fact: why it is not trusted, that the
    # gain is a lower bound, or why the change could not be modeled on this trace
    prediction_caveat: Note | None = None
    # why a rule no change models has no predicted gain (None where a change models it)
    no_prediction: Note | None = None

    def __hash__(self) -> int:  # its figures are a dict
        return stable_hash(self)


def priced_by_change(recs: Iterable[Recommendation]) -> dict[str, list[Recommendation]]:
    """The recommendations with a predicted step, by change (rules that share a change
    share its prediction), in the order given."""
    found: dict[str, list[Recommendation]] = {}
    for r in recs:
        if r.change and r.predicted_step_ns is not None and r.step_ns:
            found.setdefault(r.change, []).append(r)
    return found
