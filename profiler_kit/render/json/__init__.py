"""JSON documents: ``profkit analyze --json`` (schema ``profkit.analysis/3``).
"""
