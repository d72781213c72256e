"""What differs between traces: each trace's step terms and op and kernel profile, and the
differences of two, term by term and name by name (:mod:`profiler_kit.analysis.compare` sets
traces side by side).
"""
