"""A what-if change measured instead of assumed: a trace's hot ops
(:mod:`profiler_kit.analysis.whatif.hot_ops`) timed as recorded and under the alternative
on this machine, in a fresh process with torch (``python -m
profiler_kit.measure.op_replay``), become a :class:`MeasuredOps` change.

Torch-free: the process it starts imports torch.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec

from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.whatif.changes import MeasuredOps
from profiler_kit.analysis.whatif.hot_ops import OpChain, OpGroup, elementwise_chains, hot_ops
from profiler_kit.errors import ProfkitError, UsageError
from profiler_kit.trace.table import EventTable

# the alternative timed -> the change it stands for
CHANGE_OF = {"bf16": "precision bf16", "fp16": "precision fp16",
             "channels_last": "channels-last", "tf32": "tf32", "compile": "compile"}
MODELED = ("bf16", "fp16")  # the alternatives the replay also models without measuring
# on a GPU, a call whose host issue takes under this share of its wall time is GPU-bound
DEVICE_BOUND = 0.5
MEASURE_TIMEOUT_S = 900  # the measuring process of one command, at the most
NEEDS_TORCH = ("measuring the ops needs torch (the run extra: pip install 'profkit[run]'); "
               "without it, leave out --measure")


class MeasuredOp(msgspec.Struct, frozen=True):
    """One group timed as recorded and under the alternative (ns per call: ``alt_ns`` is
    ``base_ns`` times the median of the paired rounds' ratios), or why it was not."""

    key: str
    name: str
    count: int
    base_ns: float | None = None
    alt_ns: float | None = None
    base_iqr_ns: float | None = None
    alt_iqr_ns: float | None = None
    rounds: int = 0
    host_base_ns: float | None = None  # on a GPU: the host's time to issue one call
    host_alt_ns: float | None = None
    reason: str = ""
    compile_s: float | None = None  # compile: how long torch.compile took (not counted)

    def effect(self) -> tuple[float, float] | None:
        """What a call gains under the alternative: the host time it adds (negative: saves)
        per call, and the factor on its kernels' time; None where it was not timed.
        On the CPU the host time is the op's time, and the difference is added rather
        than the ratio applied: a recorded call also holds the profiler's own cost,
        which the change does not scale."""
        if not self.base_ns or self.alt_ns is None:
            return None
        if self.host_base_ns is None or self.host_alt_ns is None:
            return self.alt_ns - self.base_ns, 1.0
        # a call's wall time is the GPU's only where the host issues it in well under that
        # time; a host-bound call's wall ratio is the host's, already counted: its kernels
        # keep their recorded time
        device_bound = self.host_base_ns < DEVICE_BOUND * self.base_ns
        ratio = self.alt_ns / self.base_ns if device_bound else 1.0
        return self.host_alt_ns - self.host_base_ns, ratio


class OpMeasurements(msgspec.Struct, frozen=True):
    """The measuring process's output: each group, where and with which torch."""

    alternative: str
    device: str
    torch_version: str
    ops: list[MeasuredOp]


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def time_groups(groups: list[OpGroup] | list[OpChain], alternative: str, device: str
                ) -> list[MeasuredOp]:
    """Each group (each chain, for ``compile``) timed in a fresh process (never inside a
    profiled run)."""
    if not torch_available():
        raise UsageError(NEEDS_TORCH)
    if not groups:
        return []
    with tempfile.TemporaryDirectory(prefix="profkit-ops-") as tmp:
        src, out = Path(tmp) / "groups.json", Path(tmp) / "measured.json"
        src.write_bytes(msgspec.json.encode(groups))
        done = _measuring_process([str(src), alternative, device, str(out)])
        if done.returncode != 0 or not out.exists():
            raise ProfkitError(f"timing the ops failed: {_why(done)}")
        return msgspec.json.decode(out.read_bytes(), type=OpMeasurements).ops


def _measuring_process(args: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-m", "profiler_kit.measure.op_replay", *args],
                              capture_output=True, text=True, timeout=MEASURE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ProfkitError(f"timing the ops took over {MEASURE_TIMEOUT_S} s and was "
                           f"stopped") from None


def _why(done: subprocess.CompletedProcess) -> str:
    """What ended the measuring process: its own one-line error, or its exit status."""
    if done.returncode < 0:
        return f"the measuring process was killed by signal {-done.returncode} (out of memory?)"
    own = [x.removeprefix("profkit: ") for x in done.stderr.splitlines()
           if x.startswith("profkit: ")]
    if own:
        return own[-1]
    lines = [x for x in done.stderr.strip().splitlines() if x.strip()]
    return f"exit status {done.returncode}" + (f": {lines[-1]}" if lines else "")


def write_repros(tables: Iterable[EventTable], alternative: str, folder: str) -> list[str]:
    """One standalone script per hot op of the tables (torch alone runs it), in ``folder``
    (which must not hold files already): their paths."""
    if not torch_available():
        raise UsageError(NEEDS_TORCH.replace("measuring the ops", "writing the repros"))
    out = Path(folder)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"--repro {folder}: exists and is not an empty folder (nothing is "
                         f"overwritten)")
    groups, device = _hot_groups(tables)
    with tempfile.TemporaryDirectory(prefix="profkit-ops-") as tmp:
        src = Path(tmp) / "groups.json"
        src.write_bytes(msgspec.json.encode(list(groups.values())))
        done = _measuring_process([str(src), alternative, device, str(out), "--repro"])
    if done.returncode != 0:
        raise ProfkitError(f"writing the repros failed: {_why(done)}")
    written = done.stdout.split()
    if not written:
        why = next((g.reason for g in groups.values() if g.reason), "no hot op")
        raise UsageError(f"--repro {folder}: no op of the trace can be rebuilt (e.g. {why})")
    return written


def _hot_groups(tables: Iterable[EventTable]) -> tuple[dict[str, OpGroup], str]:
    """The tables' hot op groups by key (each distinct op once), and where they ran."""
    groups: dict[str, OpGroup] = {}
    device = "cpu"
    for table in tables:
        tree = build_op_tree(table)
        hot = hot_ops(table, tree, attribute_gpu(table, tree))
        device = "cuda" if hot.by_device else device
        for g in hot.groups:
            groups.setdefault(g.key, g)
    return groups, device


def _hot_chains(tables: Iterable[EventTable]) -> tuple[dict[str, OpChain], str]:
    """The tables' hottest chains of elementwise ops by key, and where they ran."""
    chains: dict[str, OpChain] = {}
    device = "cpu"
    for table in tables:
        tree = build_op_tree(table)
        gpu = attribute_gpu(table, tree)
        device = "cuda" if len(gpu) else device
        for c in elementwise_chains(table, tree, gpu):
            chains.setdefault(c.key, c)
    return chains, device


def measure_tables(tables: Iterable[EventTable], alternative: str,
                   timed: dict[tuple[str, str], MeasuredOp] | None = None) -> MeasuredOps:
    """One change for every table: their hot ops timed once per distinct op (a group's key
    is its name and recorded inputs, the same in every trace that calls it). ``timed``
    keeps what was timed by (alternative, key) across calls: an op timed for one trace
    is not timed again for the next."""
    timed = {} if timed is None else timed
    groups, device = _hot_chains(tables) if alternative == "compile" else _hot_groups(tables)
    todo = [g for g in groups.values() if (alternative, g.key) not in timed]
    for o in time_groups(todo, alternative, device):
        timed[(alternative, o.key)] = o
    ops = [timed[(alternative, k)] for k in groups]
    effects = {o.key: effect for o in ops if (effect := o.effect()) is not None}
    missing = {o.key: f"{o.name}: {o.reason}" for o in ops if o.reason}
    if not effects:
        why = next(iter(missing.values()), "the trace has no chain of elementwise ops"
                   if alternative == "compile" else "the trace has no op with time")
        modeled = "; leave out --measure for the modeled one" if alternative in MODELED else ""
        raise UsageError(f"no op of the trace could be timed (e.g. {why}): no measured "
                         f"prediction{modeled}")
    return MeasuredOps(CHANGE_OF[alternative], device, effects, missing,
                       chains=alternative == "compile")


def measure_on_this_machine() -> Callable[[Sequence[EventTable], str], MeasuredOps] | None:
    """A measuring function that remembers what it timed (for a run's traces), or None
    without torch."""
    if not torch_available():
        return None
    timed: dict[tuple[str, str], MeasuredOp] = {}
    return lambda tables, alternative: measure_tables(tables, alternative, timed)
