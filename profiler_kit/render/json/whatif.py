"""JSON for ``profkit whatif --json``: schema ``profkit.whatif/1`` (see docs/commands/whatif.md).

One object per trace, times in milliseconds (``*_ms``) and fractions (``*_pct``: a
fraction, 0.46 for 46 %), as the command prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from profiler_kit.analysis.whatif.replay import Gain, TraceWhatIf
from profiler_kit.render.wording.notes import said, say
from profiler_kit.render.wording.whatif_notes import lacks

SCHEMA = "profkit.whatif/1"


def _ms(ns: int) -> float:
    return round(ns / 1e6, 6)


def _gain(g: Gain) -> dict[str, Any]:
    return {"change": g.change, "predicted_step_ms": _ms(g.predicted_step_ns),
            "gain_ms": _ms(g.gain_ns), "gain_pct": round(g.gain_pct, 6), "notes": said(g.notes)}


def trace_object(t: TraceWhatIf) -> dict[str, Any]:
    r = t.result.replay
    return {
        "path": t.path,
        "label": t.label,
        "step": r.step,
        "measured_step_ms": _ms(r.measured_step_ns),
        "replayed_step_ms": _ms(r.replayed_step_ns),
        "predicted_step_ms": _ms(r.predicted_step_ns),
        "step_error": round(r.step_error, 6),
        "gpu_end_error": round(r.gpu_end_error, 6) if r.gpu_end_error is not None else None,
        "measured_window_ms": _ms(r.measured_window_ns),
        "replayed_window_ms": _ms(r.replayed_window_ns),
        "predicted_window_ms": _ms(r.predicted_window_ns),
        "window_error": round(r.window_error, 6),
        "trusted": r.trusted,
        "untrusted_because": say(r.untrusted_because) if r.untrusted_because else None,
        "missing_dependencies": [{"kind": m.kind, "events": m.events,
                                  "wait_ms": _ms(m.wait_ns),
                                  "what": lacks(m.kind, m.events, m.wait_ns)}
                                 for m in r.missing],
        "fixed_delay_ms": _ms(r.fixed_delay_ns),
        "fixed_delay_share": round(r.fixed_delay_share, 6),
        "step_error_without_fixed_delays": round(r.step_error_without_fixed_delays, 6),
        "window_error_without_fixed_delays": round(r.window_error_without_fixed_delays, 6),
        "model": msgspec.to_builtins(r.model),
        "changes": [_gain(g) for g in t.result.gains],
        "together": _gain(t.result.together) if t.result.together else None,
        "steps": [{"number": s.number, "measured_ms": _ms(s.measured_ns),
                   "replayed_ms": _ms(s.replayed_ns), "predicted_ms": _ms(s.predicted_ns)}
                  for s in r.steps],
    }


def document(results: Sequence[TraceWhatIf]) -> str:
    """The JSON text (with a final newline)."""
    doc = {"schema": SCHEMA, "traces": [trace_object(t) for t in results]}
    return msgspec.json.encode(doc).decode() + "\n"
