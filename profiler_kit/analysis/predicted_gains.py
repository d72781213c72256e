"""Each recommendation's predicted gain: the step the what-if replay predicts when the
change that models its advice (:data:`~profiler_kit.analysis.advice.counterparts.CHANGE_OF_RULE`)
is made alone.

The trace's graph is built once and replayed unchanged and once per distinct change
(:func:`~profiler_kit.analysis.whatif.replay.each_alone`), whatever the number of rules.
The recommendations are then ranked by their predicted gain, largest first; those without
a trusted prediction follow in the order the rules gave. A rule whose trusted gain is
under ``min_gain_pct`` is held back: not shown as a recommendation, and named in one
note line. A prediction that is not trusted (the unchanged replay misses the measurement)
or only a lower bound (fixed delays hold much of the steps' GPU work) never holds a rule
back, and ranks among the rules without a prediction unless its gain clears the line; it
says so in ``prediction_caveat``. Caveats and reasons are notes, codes and figures
(:mod:`profiler_kit.render.wording.whatif_notes` words them).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from profiler_kit.analysis.advice.counterparts import CHANGE_OF_RULE, WHY_NO_PREDICTION
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.recommendation import Recommendation
from profiler_kit.analysis.perf.device_specs import device_of_table
from profiler_kit.analysis.whatif import changes as c
from profiler_kit.analysis.whatif.replay import Baseline, Gain, each_alone
from profiler_kit.trace.table import EventTable

MIN_GAIN_PCT = 2.0  # a rule whose trusted predicted gain is under this (percent) is held back
# the fixed delays of the steps' GPU work over the steps' time above which a change cannot
# move what they hold: the gain is a lower bound (docs/analyses/whatif.md)
LOWER_BOUND_SHARE = 0.10


class Ranked(msgspec.Struct, frozen=True):
    """The recommendations with their predictions, ranked; those held back under the
    gain threshold; the note line that names them (None: none held back)."""

    shown: tuple[Recommendation, ...]
    held_back: tuple[Recommendation, ...]
    note: Note | None


def change_of(label: str, table: EventTable) -> c.Change:
    """The change ``label`` names (a value of ``CHANGE_OF_RULE``), for this trace: bf16
    becomes fp16 where the device has no bf16 matrix rate."""
    if label.startswith("precision "):
        dtype = label.split()[1]
        _, peak, _ = device_of_table(table)
        if dtype == "bf16" and peak is not None \
                and "bf16" not in peak.matrix_flops_per_s and "fp16" in peak.matrix_flops_per_s:
            dtype = "fp16"
        return c.Precision(dtype)
    if label.startswith("kernels "):
        pattern, _, factor = label.split(" ", 1)[1].rpartition("=")
        return c.Kernels(pattern, float(factor))
    simple: dict[str, type[c.Change]] = {
        "cuda-graphs": c.CudaGraphs, "no-dataloader-wait": c.NoDataloaderWait,
        "no-sync": c.NoSync, "overlap-comm": c.OverlapComm, "no-straggler": c.NoStraggler,
        "fusion": c.Fusion}
    return simple[label]()


def predict(table: EventTable, gpu: GpuActivity, tree: OpTree,
            recs: Sequence[Recommendation]) -> tuple[Recommendation, ...]:
    """``recs`` with their change and, where the replay models it, their prediction; the
    trace is replayed only when a rule has a change."""
    labels = [CHANGE_OF_RULE.get(r.rule) for r in recs]
    wanted = list(dict.fromkeys(lb for lb in labels if lb is not None and lb != "no-straggler"))
    if not wanted:
        return tuple(_unpriced(r) if lb is None else msgspec.structs.replace(r, change=lb)
                     for r, lb in zip(recs, labels, strict=True))
    made = {lb: change_of(lb, table) for lb in wanted}
    replay, gains = each_alone(table, gpu, list(made.values()), tree)
    by_label = dict(zip(wanted, gains, strict=True))
    return tuple(_with(r, lb, by_label.get(lb) if lb is not None else None, replay)
                 for r, lb in zip(recs, labels, strict=True))


def _unpriced(r: Recommendation) -> Recommendation:
    """A rule no change models, with the reason it has no predicted gain."""
    return msgspec.structs.replace(r, no_prediction=note(WHY_NO_PREDICTION.get(
        r.rule, "no_change_models_advice")))


def _with(r: Recommendation, label: str | None, gain: Gain | None, replay: Baseline
          ) -> Recommendation:
    if label is None:
        return _unpriced(r)
    if gain is None:
        return msgspec.structs.replace(r, change=label, prediction_caveat=(
            note("straggler_needs_job") if label == "no-straggler" else None))
    nothing = [n for n in gain.notes if n.code in c.NOTHING_TO_CHANGE]
    if nothing:  # the change found nothing to change: no prediction, and why
        return msgspec.structs.replace(r, change=gain.change, prediction_caveat=nothing[0])
    caveat = None
    if not replay.trusted:
        assert replay.untrusted_because is not None
        caveat = Note("prediction_not_trusted", replay.untrusted_because.figures)
    elif replay.fixed_delay_share > LOWER_BOUND_SHARE:
        caveat = note("prediction_lower_bound", fixed_delay_share=replay.fixed_delay_share)
    return msgspec.structs.replace(
        r, change=gain.change, step_ns=replay.replayed_step_ns,
        predicted_step_ns=gain.predicted_step_ns,
        predicted_gain_pct=round(100 * gain.gain_pct, 3),
        prediction_trusted=replay.trusted, prediction_caveat=caveat)


def ranked(recs: Sequence[Recommendation], min_gain_pct: float = MIN_GAIN_PCT) -> Ranked:
    """Trusted gains of at least ``min_gain_pct`` first, largest first (a lower bound
    there too: the gain is at least that); then the others in their order. A trusted gain
    under ``min_gain_pct`` that is not a lower bound is held back."""
    shown, held, rest = [], [], []
    for r in recs:
        gain = r.predicted_gain_pct
        if gain is None or not r.prediction_trusted:
            rest.append(r)
        elif gain >= min_gain_pct:
            shown.append(r)
        elif r.prediction_caveat is None:
            held.append(r)
        else:  # a lower bound under the line: the gain may be larger
            rest.append(r)
    shown.sort(key=lambda r: -(r.predicted_gain_pct or 0.0))  # stable: ties keep their order
    named = note("rules_held_back", min_gain_pct=min_gain_pct, rules=tuple(
        (r.rule, r.scope, r.change, r.predicted_gain_pct) for r in held)) if held else None
    return Ranked(tuple(shown + rest), tuple(held), named)
