"""Shared utilities of profkit: run folders and atomic writes (`artifacts`), output paths
checked before any work (`outputs`), what kind of input a path is (`path_kinds`), loopback
ports (`ports`), child processes that are not ranks (`child_processes`), and how a data-only
command tunes its own process (`process_tuning`)."""
