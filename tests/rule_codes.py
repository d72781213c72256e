"""The rules the source can fire, read with ``ast`` (nothing imported): each rule's code,
the branches its words depend on (variants) and the names of its figures, so a test can
hold the rules' words, or their what-if changes, to exactly the rules the analyses make."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path


def _returned(fn: ast.FunctionDef) -> set[str]:
    """The string constants a function returns (a variant chosen in a helper)."""
    return {c.value for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value
            for c in ast.walk(r.value) if isinstance(c, ast.Constant)
            and isinstance(c.value, str)}


def rule_entries(paths: Iterable[Path]) -> dict[str, frozenset[str]]:
    """entry -> the names of its figures, for every rule the source fires: a
    ``Recommendation(rule="...", variant=..., figures={...})`` call, or a call of a helper
    that takes the rule and variant as arguments (``_idle_rule``)."""
    found: dict[str, frozenset[str]] = {}
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defs = {f.name: f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)}
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
                continue
            given: dict[str, ast.expr] = {k.arg: k.value for k in call.keywords if k.arg}
            helper = defs.get(call.func.id)
            if helper is not None:
                given.update(zip((a.arg for a in helper.args.args), call.args, strict=False))
            rule = given.get("rule")
            if not (isinstance(rule, ast.Constant) and isinstance(rule.value, str)):
                continue
            figures = given.get("figures")
            names = frozenset(k.value for k in figures.keys if isinstance(k, ast.Constant)) \
                if isinstance(figures, ast.Dict) else frozenset()
            variant = given.get("variant")
            if isinstance(variant, ast.Call) and isinstance(variant.func, ast.Name):
                variants = _returned(defs[variant.func.id])
            else:
                variants = {c.value for c in ast.walk(variant) if isinstance(c, ast.Constant)} \
                    if variant is not None else set()
            for v in variants or {""}:
                key = f"{rule.value}/{v}" if v else rule.value
                assert found.setdefault(key, names) == names, key
    return found
