"""Keep freed memory for reuse, in huge pages, in a short data-only process (glibc's malloc).

By default glibc gives large freed blocks back to the kernel: those over its mmap
threshold are unmapped and the top of the heap is trimmed, so the next block of that
size faults its pages in again, zeroed. Loading a trace frees and reallocates blocks of
megabytes piece after piece (inflated text, decoded events, columns). A command that
reads traces and exits keeps them instead: measured on the A100 DDP trace, a fifth fewer
page faults and about 3 % less time for ``profkit analyze`` (``benchmarks/README.md``),
with the same peak memory for traces read in one process (up to 64 MB of JSON); one read
in forked parts holds about 8 % more at its peak (an 83 MB trace: 163 against 150 MiB).

The heap is also grown once by 256 MB of address space advised for transparent huge
pages, so that memory is faulted in 2 MB at a time: on that trace 9,500 page faults
instead of 14,400 (its two processes, see ``trace.load_ahead``), 0.955x the time in 21
paired runs, and a peak of 49 to 51 MiB against 49 (a huge page is backed whole even
when only partly used).
"""

from __future__ import annotations

import sys

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's malloc.h
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # the largest glibc accepts on 64-bit systems
TRIM_THRESHOLD = 1 << 30
TOP_PAD = 256 << 20  # address space: pages are backed when first written
DEFAULT_TOP_PAD = 128 << 10  # glibc's own (malloc.c's DEFAULT_TOP_PAD)
GROW_BYTES = 16 << 20  # under the mmap threshold: carved from the heap, which grows
MADV_HUGEPAGE = 14  # from the kernel's mman-common.h
HUGE_PAGE = 2 << 20


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process, and advise its heap for
    huge pages; False where the C library is not glibc (nothing changes)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # numpy imports it too

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    kept = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) \
        and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    if kept:
        _heap_in_huge_pages(ctypes, libc)
    return kept


def _heap_in_huge_pages(ctypes, libc) -> None:
    """Grow the heap once by 256 MB of address space and advise transparent huge pages
    over it: the heap's next 256 MB then fault in 2 MB at a time instead of 4 kB. glibc's
    ``glibc.malloc.hugetlb=1`` tunable does this for every growth, but can only be set
    before the process starts. The padding goes back to glibc's default at once, so later
    growths ask for no more than they need (strict overcommit, ``ulimit -v``); the grown
    top stays, under the 1 GB trim threshold. Where the kernel has huge pages off, the
    heap is only 256 MB of address space larger; where the block is not carved from the
    heap (another allocator preloaded), nothing is advised."""
    libc.sbrk.restype = ctypes.c_void_p
    libc.sbrk.argtypes = (ctypes.c_ssize_t,)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = (ctypes.c_size_t,)
    libc.free.argtypes = (ctypes.c_void_p,)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    if not libc.mallopt(M_TOP_PAD, TOP_PAD):
        return
    try:
        start = libc.sbrk(0)
        block = libc.malloc(GROW_BYTES)  # more than the heap has free: it grows
        libc.free(block)
        end = libc.sbrk(0)
    finally:
        libc.mallopt(M_TOP_PAD, DEFAULT_TOP_PAD)
    if start is None or end is None:
        return
    first = -(-start // HUGE_PAGE) * HUGE_PAGE
    last = end // HUGE_PAGE * HUGE_PAGE
    if last > first:
        libc.madvise(first, last - first, MADV_HUGEPAGE)
