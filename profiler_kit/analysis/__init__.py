"""Analyses of event tables: hotspots, timeline, steps, memory, recommendations, comparison.

They return frozen records (msgspec Structs: quick to define, so the command starts
fast; raw ns and bytes) and never print. Never imports torch.
"""
