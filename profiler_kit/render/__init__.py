"""Renderers: turn results into console tables, JSON and Markdown. They never compute."""
