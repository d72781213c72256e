"""The version of profkit (read by the package root and by what writes it into results)."""

__version__ = "0.1.0"
