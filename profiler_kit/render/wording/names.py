"""Kernel and op names cut to fit a column (full names stay in JSON)."""

from __future__ import annotations


def short_name(name: str, width: int = 70) -> str:
    """A kernel or op name cut to fit: no ``void``, no argument list, ``…`` when cut."""
    if name.startswith("void "):
        name = name[5:]
    name = name.replace("(anonymous namespace)::", "")
    depth = 0
    for i, ch in enumerate(name):  # drop the parameter list after the template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0 and name[i - 1] != " " and name.endswith(")"):
            name = name[:i]
            break
    return name if len(name) <= width else name[: width - 1] + "…"
