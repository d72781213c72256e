"""Analyses of event tables: hotspots, timeline, steps, memory, recommendations, comparison.

They return frozen dataclasses (raw ns and bytes) and never print. Never imports torch.
"""
