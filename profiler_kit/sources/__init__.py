"""Files in and out around the analyses: trace files analyzed one by one or in worker pools or
Dask tasks, rank summaries on disk, the merged job trace, memory files and allocator
snapshots.
"""
