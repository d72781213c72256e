"""Memory from traces, allocator snapshots and memory categories: peaks, lifetimes, growth,
what fits.
"""
