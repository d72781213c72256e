"""PyTorch's DDP-benchmark report of a ``ddp`` run, and ``profkit diff`` of two such reports.

Reads run results (``profiler_kit.results``) and report files; never imports torch or
the measuring side.
"""
