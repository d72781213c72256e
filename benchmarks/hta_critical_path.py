"""Holistic Trace Analysis' critical path of a trace, kept as a test fixture.

Run with the Python of an environment that has HolisticTraceAnalysis installed (see
benchmarks/README.md); it writes the events HTA marks critical (name, category, ts and
dur in µs as in the file), the path's length and HTA's breakdown by what bounds it:

    benchmarks/.cache/hta-venv/bin/python benchmarks/hta_critical_path.py \\
        TRACE_DIR tests/data/hta/a100_simple_add_critical_path.json [ANNOTATION INSTANCE]

ANNOTATION (default "": the whole trace) and INSTANCE limit the path to one instance of
an annotation, as HTA's ``critical_path_analysis`` does.
"""

import gzip
import json
import sys
import tempfile
from importlib.metadata import version

from hta.trace_analysis import TraceAnalysis

trace_dir, out = sys.argv[1], sys.argv[2]
annotation = sys.argv[3] if len(sys.argv) > 3 else ""
instance = int(sys.argv[4]) if len(sys.argv) > 4 else 0
t = TraceAnalysis(trace_dir=trace_dir)
g, ok = t.critical_path_analysis(rank=0, annotation=annotation, instance_id=instance)
assert ok
with tempfile.TemporaryDirectory() as tmp:
    overlaid = t.overlay_critical_path_analysis(0, g, output_dir=tmp,
                                                only_show_critical_events=False)
    raw = json.load(gzip.open(overlaid))["traceEvents"]
events = sorted([e["name"], e["cat"], e["ts"], e["dur"]] for e in raw
                if e.get("ph") == "X" and e.get("args", {}).get("critical") == 1)
bd = g.get_critical_path_breakdown()
by = {k or "zero_weight": int(v) for k, v in bd.groupby("bound_by").duration.sum().items()}
json.dump({
    "hta_version": version("HolisticTraceAnalysis"),
    "command": f"TraceAnalysis(trace_dir).critical_path_analysis(rank=0, "
               f"annotation={annotation!r}, instance_id={instance}), then "
               "overlay_critical_path_analysis(0, graph, dir, "
               "only_show_critical_events=False): the events marked critical",
    "annotation": annotation,
    "instance_id": instance,
    "time_unit": "us",
    "length_us": int(bd.duration.sum()),
    "bound_by_us": by,
    "events": events,
}, open(out, "w"), indent=0)
print(len(events), by, int(bd.duration.sum()))
