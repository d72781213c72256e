"""Holistic Trace Analysis' trace diff of two traces, kept as a test fixture.

Run with the Python of an environment that has HolisticTraceAnalysis installed (see
benchmarks/README.md); it writes, per event name, the count in each trace and HTA's
change category:

    benchmarks/.cache/hta-venv/bin/python benchmarks/hta_trace_diff.py \\
        CONTROL_DIR TEST_DIR tests/data/hta/bert_small_trace_diff.json
"""

import json
import sys
from importlib.metadata import version

from hta.common.trace import Trace
from hta.trace_diff import TraceDiff

control_dir, test_dir, out = sys.argv[1:4]
control, test = Trace(trace_dir=control_dir), Trace(trace_dir=test_dir)
control.parse_traces()
test.parse_traces()
df = TraceDiff.compare_traces(control, test)
json.dump({
    "hta_version": version("HolisticTraceAnalysis"),
    "command": "TraceDiff.compare_traces(control, test) on Trace(trace_dir=...).parse_traces()",
    "columns": ["Control_counts", "Test_counts", "counts_change_categories"],
    "names": {name: [int(r.Control_counts), int(r.Test_counts), r.counts_change_categories]
              for name, r in df.iterrows()},
}, open(out, "w"), indent=0)
print(len(df))
