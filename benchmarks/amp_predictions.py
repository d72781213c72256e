"""Each AMP twin's prediction against its measurement, from the run.json files of
``profkit run``: the replay's predicted step, and the timed step it implies (the
counterpart's timed median times the replay's predicted ratio, so the profiler's own
overhead is not read as an effect of the change). Prints a Markdown table.

    python benchmarks/amp_predictions.py RUN.json [RUN.json ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def rows(path: Path) -> list[tuple[str, dict, float, float]]:
    """(label, prediction, timed step implied by the prediction, measured timed step)."""
    run = json.loads(path.read_text())
    by = {(s.get("point") or "", s["name"]): s for s in run["strategies"]}
    out = []
    for (point, name), s in by.items():
        p = s.get("prediction")
        base = by.get((point, name.removesuffix("+amp")))
        if (not name.endswith("+amp") or not p or not p.get("predicted_ns") or base is None
                or "ok" != s["status"] or "ok" != base["status"]):
            continue
        ratio = p["predicted_ns"] / p["source_step_ns"]
        out.append((f"{point}/{name}" if point else name, p,
                    base["stats"]["median_ns"] * ratio, s["stats"]["median_ns"]))
    return out


def main(paths: list[str]) -> None:
    def ms(ns: float) -> str:
        return f"{ns / 1e6:.2f} ms"

    print("| run | strategy | counterpart's trace step | predicted | measured own trace step "
          "| error vs own trace | counterpart's timed median x predicted ratio "
          "| measured timed median | error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    errors = []
    for path in map(Path, paths):
        for label, p, implied, measured in rows(path):
            error = implied / measured - 1
            errors.append(error)
            change = p["predicted_ns"] / p["source_step_ns"] - 1
            print(f"| {path.parent.name} | `{label}` | {ms(p['source_step_ns'])} "
                  f"| {ms(p['predicted_ns'])} ({change * 100:+.1f} %) "
                  f"| {ms(p['trace_step_ns'])} | {p['trace_error'] * 100:+.1f} % "
                  f"| {ms(implied)} | {ms(measured)} | {error * 100:+.1f} % |")
    if errors:
        print(f"\n{len(errors)} predictions; error of the timed step: median "
              f"{statistics.median(errors) * 100:+.1f} %, from {min(errors) * 100:+.1f} % to "
              f"{max(errors) * 100:+.1f} %")


if __name__ == "__main__":
    main(sys.argv[1:])
