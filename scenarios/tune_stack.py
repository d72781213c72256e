"""Greedy stacking of the knobs that won: never 2^N combinations.

Start from the knob that beat float32 eager by the most, beyond noise; try it with the
next winner; keep the pair only when it is faster than the best so far beyond noise (and
computed what the baseline computes, which the runner checks before timing); go on down
the list. Every decision is recomputed from the results measured so far, so an
interrupted run keeps a consistent answer. Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profiler_kit.contention import BASELINE_SIDE, STRATEGY_SIDE, different, judged
from profiler_kit.noise import NoiseVerdict, percentile_verdict
from profiler_kit.results import OK

STACK_SEPARATOR = "+"
# groups of knobs of which a stack holds at most one: the compile modes replace one
# another, and CUDA graphs are what reduce-overhead already does (and torch.compile cannot
# capture a graph replay); one autocast dtype at a time
EXCLUSIVE = (frozenset({"compile", "compile_reduce_overhead", "compile_max_autotune",
                        "cuda_graphs"}),
             frozenset({"autocast", "autocast_bf16"}))


def is_winner(s: Any) -> bool:
    """Faster than the baseline beyond noise, with the baseline's results: a verdict whose
    ``beyond_noise`` is True (None is no verdict: too few samples, or a doubt) and whose
    whole interval lies on the faster side."""
    n = s.noise
    return (_computes_the_same(s) and s.speedup is not None and s.speedup > 1
            and n is not None and n.beyond_noise is True and not doubt(n)
            and n.ci_low_fraction is not None and n.ci_low_fraction > 0)


def doubt(n: NoiseVerdict | None) -> str:
    """Why a noise verdict is not judged whatever its interval (``profiler_kit.noise``):
    ``unstable`` (a side's rounds disagree, e.g. bimodal baseline rounds of 125.7 / 1.34 /
    123.9 ms on a busy machine) or ``contended`` (the two sides ran beside different
    work); "" when there is none. Such a speedup is never a winner, whatever its size."""
    return n.doubt if n is not None else ""


def _computes_the_same(s: Any) -> bool:
    eq_ok = s.equivalence is None or not s.equivalence.checked or s.equivalence.ok
    return s.status == OK and eq_ok


def single_winners(done: Sequence[Any], baseline: str) -> list[Any]:
    """The single knobs that won, fastest first."""
    singles = [s for s in done if STACK_SEPARATOR not in s.name and s.name != baseline]
    return sorted((s for s in singles if is_winner(s)), key=lambda s: -(s.speedup or 0.0))


def faster_than(candidate: Any, best: Any) -> NoiseVerdict:
    """Whether ``candidate``'s median step is shorter than ``best``'s beyond noise: the two
    were measured one after the other, not in turns, so the model is the one for
    independent runs (Welch's t over the rounds' medians, or a bootstrap within one round
    each), not the paired one. Not judged where the two ran beside different work and the
    slower had it worse (:func:`profiler_kit.contention.judged`): measured at different
    times, a change in the machine's load alone can move one median beyond the other's
    interval."""
    v = percentile_verdict(_rounds(best), _rounds(candidate), 50)
    faster = (STRATEGY_SIDE if (v.ci_high_fraction or 0) < 0 else
              BASELINE_SIDE if (v.ci_low_fraction or 0) > 0 else None)
    return judged(v, different(best.contention, candidate.contention), faster)


def _rounds(s: Any) -> tuple[tuple[int, ...], ...]:
    return s.repeat_samples_ns or (s.samples_ns,)


def _beats(candidate: Any, best: Any) -> bool:
    if not _computes_the_same(candidate) or not candidate.stats or not best.stats:
        return False
    v = faster_than(candidate, best)
    return (v.beyond_noise is True and not doubt(v) and v.ci_high_fraction is not None
            and v.ci_high_fraction < 0)


def _compatible(stack: str, knob: str) -> bool:
    held = set(stack.split(STACK_SEPARATOR))
    return knob not in held and not any(knob in group and held & group for group in EXCLUSIVE)


def walk(done: Sequence[Any], baseline: str) -> tuple[Any | None, str | None, list[str]]:
    """Replay the greedy search over the results so far: the best stack (a result, None
    when no knob won), the next stack to measure (None when the search is over), and a
    line per decision taken."""
    by_name = {s.name: s for s in done}
    winners = single_winners(done, baseline)
    if not winners:
        return None, None, []
    best = winners[0]
    notes: list[str] = []
    for knob in (w.name for w in winners[1:]):
        if not _compatible(best.name, knob):
            notes.append(f"{knob}: not stacked on {best.name} (one compile mode or CUDA "
                         "graphs, and one autocast dtype, at a time)")
            continue
        name = f"{best.name}{STACK_SEPARATOR}{knob}"
        tried = by_name.get(name)
        if tried is None:
            return best, name, notes
        if _beats(tried, best):
            notes.append(f"{name}: kept, faster than {best.name} beyond noise")
            best = tried
        else:
            notes.append(f"{name}: dropped, {_why_not(tried, best)}")
    return best, None, notes


def _why_not(tried: Any, best: Any) -> str:
    if tried.status != OK:
        return tried.error or tried.reason or tried.status
    if not _computes_the_same(tried):
        return "its results differ from the baseline's"
    v = faster_than(tried, best)
    if v.ci_low_fraction is None or doubt(v):
        return f"not judged ({v.reason})"
    return (f"not faster than {best.name} beyond noise (median step change "
            f"{v.ci_low_fraction:+.0%} to {v.ci_high_fraction:+.0%}, 95 %)")
