"""The HTML report: one self-contained file (plotly.js embedded, readable offline) and its
charts, one module per subject.
"""
