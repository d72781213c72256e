"""The words and numbers every format shares: units, names cut to fit, the answer line, noise
verdicts, perf and diff rows as text. Formats only.
"""
