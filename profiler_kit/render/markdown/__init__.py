"""Markdown: ``profkit analyze --markdown`` and a run's summary.md. Formats only.
"""
