"""A run folder of the main job (``profkit run concurrent --amp`` on the CPU) put together
from tests/data: its run.json (``run_concurrent_cpu.json``) and, at the paths it names,
the real CPU traces of the same strategies (``cpu_concurrent_*.pt.trace.json.gz``, made
with the same scenario in another run; ``threads+amp`` gets the ``threads`` trace).

As ``profkit run`` records today, the threaded strategies carry ``info.cpu_memory``: they
were profiled with ``profile_all_threads``, which records no memory events, so their
traces have none.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

DATA = Path(__file__).parent / "data"
TRACES = {"sequential": "cpu_concurrent_sequential.pt.trace.json.gz",
          "sequential+amp": "cpu_concurrent_sequential_amp.pt.trace.json.gz",
          "threads": "cpu_concurrent_threads.pt.trace.json.gz",
          "threads+amp": "cpu_concurrent_threads.pt.trace.json.gz"}
# what profiler_kit.measure.passes records for a threaded strategy (run.json's info)
THREADED = ("not recorded: its ops run in worker threads, profiled with "
            "profile_all_threads, which records no memory events")


def concurrent_run(folder: Path) -> Path:
    """The run folder, written under ``folder`` (its traces uncompressed, as a run
    without ``--gzip`` writes them)."""
    run = json.loads((DATA / "run_concurrent_cpu.json").read_text())
    for s in run["strategies"]:
        if s["status"] != "ok":
            continue
        if s["name"].startswith("threads"):
            s["info"]["cpu_memory"] = THREADED
        (name,) = s["trace_files"]
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(gzip.decompress((DATA / TRACES[s["name"]]).read_bytes()))
    (folder / "run.json").write_text(json.dumps(run, indent=2))
    return folder
