"""Recommendations: each rule fires on measured evidence and says what it saw.
"""
