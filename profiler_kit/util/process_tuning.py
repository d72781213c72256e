"""How a data-only command (``analyze``, ``compare``, ``report``, ``whatif``, ...: trace in,
figures out, no torch) tunes its own short process, all in one place.

``PROFKIT_NO_PROCESS_TUNING=1`` in the environment turns every part off, to measure
without it or to rule it out. The parts, each kept for a measured gain
(``benchmarks/README.md``):

- **BLAS threads**: numpy's BLAS starts one thread per core on import, for matrix work
  these commands never do; one thread saves their start (``OPENBLAS_NUM_THREADS`` and
  ``OMP_NUM_THREADS`` default to 1, set before numpy loads; a value the user set stays).
- **The garbage collector off**: imports, loading and the analyses make hundreds of
  thousands of objects and no garbage cycles worth collecting; its passes only cost time.
- **Freed memory kept for reuse** (glibc's malloc): by default glibc gives large freed
  blocks back to the kernel, so the next block of that size faults its pages in again.
  Loading a trace frees and reallocates blocks of megabytes piece after piece; raising the
  mmap and trim thresholds keeps them (on the A100 DDP trace a fifth fewer page faults),
  with the same peak memory for traces read in one process.
"""

from __future__ import annotations

import gc
import os
import sys

SWITCH = "PROFKIT_NO_PROCESS_TUNING"
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")
M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # the largest glibc accepts on 64-bit systems
TRIM_THRESHOLD = 1 << 30


def enabled() -> bool:
    return os.environ.get(SWITCH, "") in ("", "0")


def tune_data_process() -> None:
    """Everything above, unless the switch is set; before numpy is imported."""
    if not enabled():
        return
    for var in BLAS_THREADS:  # read when numpy loads
        os.environ.setdefault(var, "1")
    gc.disable()
    keep_freed_memory()


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process; False where the C library
    is not glibc (nothing changes)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # numpy imports it too

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) \
        and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
