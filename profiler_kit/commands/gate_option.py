"""The ``--fail-on-regression PCT`` option and its percentage type, apart from the gate
itself (:mod:`regression_gate`), which imports numpy and the comparison: every command
module is imported to build the parser, and ``profkit analyze`` should not pay for them."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def percentage(upper: float) -> Callable[[str], float]:
    """An argparse type: ``5`` is 5 %, the fraction 0.05; from 0 up to ``upper`` %."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not 0 <= value < upper:
            raise argparse.ArgumentTypeError(f"{text} is not a percentage from 0 to {upper:g}")
        return value / 100
    return parse


def add_argument(p: argparse.ArgumentParser, what: str, unjudged: str = "") -> None:
    p.add_argument("--fail-on-regression", type=percentage(1000), metavar="PCT",
                   help=f"exit 1 when {what} is slower than the baseline by more than PCT %% "
                        "(beyond noise where noise can be judged), with one line naming "
                        f"what regressed; exit 0 otherwise{unjudged}")
