"""The console, one module per command (Rich tables). Formats only.
"""
