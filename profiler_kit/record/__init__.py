"""``profkit record``: profile a training script as it is, without changing its code.

The parent side (:mod:`.command_line`, :mod:`.launch`) is torch-free: it reads the user's
command, runs it through :mod:`.bootstrap` and collects what each recorded process reports.
The child side (:mod:`.bootstrap`, :mod:`.hooks`) runs in the user's processes: it runs the
script as plain ``python`` would and, once the script imports torch, finds its steps and
drives the profiler. Parent and children talk through environment variables (the options)
and small JSON files in the run folder's hidden ``.record/`` folder (what each process saw).
"""

from __future__ import annotations

from profiler_kit.util.artifacts import RECORD_JSON as RECORD_JSON
from profiler_kit.util.artifacts import RECORD_STATUS_DIR

STATUS_DIR = RECORD_STATUS_DIR  # hidden: trace finders never look inside

RECORD_SCHEMA = "profkit.record/1"
ENV_DIR = "PROFKIT_RECORD_DIR"
ENV_CONFIG = "PROFKIT_RECORD_CONFIG"
ENV_HOME = "PROFKIT_RECORD_HOME"  # the folder holding the profiler_kit package

# the schedule's defaults: skip the first steps (compilation, autotuning, the allocator's
# warm-up), warm the profiler up, then record a few
DEFAULT_WAIT = 5
DEFAULT_WARMUP = 2
DEFAULT_ACTIVE = 3
# with no step in sight: a time window, recorded this long after torch is imported
DEFAULT_WINDOW_AFTER_S = 5.0
DEFAULT_WINDOW_S = 3.0
