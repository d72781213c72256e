"""What competed with each timed round, and whether it should change a verdict.

A timing on a shared machine (a laptop with a browser, a VM with noisy neighbours, a GPU
node with other jobs) measures the strategy *and* the other work. The measuring side
(:mod:`profiler_kit.measure.contention_watch`) records, for every timed round, the CPU
time other processes used, profkit's own busy threads against the cores it had, the load
average, the CPU frequency, and on CUDA other processes on the GPU and clock throttling.
This module, torch-free like :mod:`profiler_kit.results`, judges those records:

- a round is **contended** when other processes used a meaningful share of the cores;
- a round is **oversubscribed** when profkit's busy threads (intra-op threads times
  concurrent workers) outnumber the cores left free by the other work: threads then wait
  for each other's time slices and a step can take many times longer than when quiet;
- two sides of a comparison **ran under different contention** when the other work's
  share differed between them, when only one side was oversubscribed by it, or when
  the other work made profkit's busy threads wait for a core longer on one side than on
  the other (beyond the wait for each other that threads outnumbering the cores have on
  a quiet machine too). The last is the scheduler's own account, and it matters most on a
  saturated machine: one thread that another process leaves a whole core runs at full
  speed, one that two other processes leave 0.6 of a core runs 1.6 times slower, though
  the other work's share differs by a third of a core only (the kernel shares the cores
  among sessions, and a rank runs in its own).

Where the slower side had it worse, a speedup is "not judged" rather than "beyond noise":
the difference may be the machine's, not the strategy's, and need not hold on a quiet
machine. Where the faster side had it worse, the verdict stands (quiet, the gain would
be larger, not reversed), and says so.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from profiler_kit.noise import CONTENDED, NoiseVerdict, doubted

# other processes' CPU use below this many cores is background (daemons, the shell)
CONTENDED_MIN_CORES = 0.25
CONTENDED_MIN_FRACTION = 0.10  # ... or below this share of the cores
# the two sides' mean use of the cores by other work may differ by this much
DIFFERENT_MIN_CORES = 0.35
DIFFERENT_MIN_FRACTION = 0.15
# profkit's threads may be slowed this much more on one side than the other by waiting for
# a core (the margin a change between repeated runs must clear, see noise.py)
DIFFERENT_MIN_SLOWDOWN = 0.05
MAX_WAITING_SHARE = 0.95  # a thread that waited all the time: slowed 20 times, not infinitely
# a thread counts as busy in a round when it ran this share of the round's wall time
BUSY_THREAD_FRACTION = 0.10
SHOWN_MIN_CORES = 0.05  # other processes named in the run's summary use at least this


class Competitor(msgspec.Struct, frozen=True):
    """A process (or processes of one name) that used the machine during a round."""

    name: str  # "python (pytest)", "chrome"
    cores: float  # CPU time used / the round's wall time


class RoundContention(msgspec.Struct, frozen=True):
    """The machine during one timed round of one strategy."""

    wall_s: float
    cores: int  # cores profkit may run on (its CPU affinity)
    others_cores: float  # CPU time other processes used / wall time
    # CPU time the hypervisor gave to other machines (steal) / wall time: a VM's neighbours
    steal_cores: float = 0.0
    busiest: tuple[Competitor, ...] = ()  # other processes by CPU use, largest first
    own_cores: float = 0.0  # CPU time of profkit's own processes / wall time
    own_threads: int = 0  # profkit's threads busy for >= BUSY_THREAD_FRACTION of the round
    intra_op_threads: int | None = None  # torch.get_num_threads() in the measuring process
    load_avg_1m: float | None = None  # at the round's end
    cpu_freq_fraction: float | None = None  # current / maximum CPU frequency
    cpu_governor: str | None = None  # "powersave" and "ondemand" scale the frequency
    gpu_others: tuple[Competitor, ...] = ()  # other processes on the GPU (cores: 0)
    gpu_throttle: tuple[str, ...] = ()  # NVML clock-throttle reasons seen at the round's end
    # seconds profkit's threads waited for a core while ready to run / wall time (Linux)
    own_wait_cores: float | None = None

    @property
    def taken_cores(self) -> float:
        """The cores other work took: other processes, and other machines (steal)."""
        return self.others_cores + self.steal_cores

    @property
    def free_cores(self) -> float:
        return max(self.cores - self.taken_cores, 0.0)

    @property
    def contended(self) -> bool:
        """Other work used a meaningful share of the cores, or the GPU was shared."""
        return (self.taken_cores >= max(CONTENDED_MIN_CORES,
                                        CONTENDED_MIN_FRACTION * self.cores)
                or bool(self.gpu_others) or bool(self.gpu_throttle))

    @property
    def waiting_share(self) -> float | None:
        """The share of the round a busy thread of profkit's spent ready to run but
        waiting for a core (the wait of all its threads over the busy ones, at most 95 %);
        None where the wait was not recorded. Without that wait the round would have taken
        1 - share of its time; a thread that mostly sleeps waits little, however small its
        CPU time."""
        if self.own_wait_cores is None:
            return None
        return min(self.own_wait_cores / max(self.own_threads, 1), MAX_WAITING_SHARE)

    @property
    def slowed_by_others(self) -> float | None:
        """How many times longer the other work made the round, from the wait: a busy
        thread waited ``waiting_share`` of the time, where on a quiet machine it would
        have waited only for its own threads beyond the cores (four threads on two cores:
        half the time); at least 1. None where the wait was not recorded."""
        share = self.waiting_share
        if share is None:
            return None
        own_share = max(0.0, 1.0 - self.cores / max(self.own_threads, 1))
        return max(1.0, (1.0 - own_share) / (1.0 - share))

    @property
    def oversubscribed(self) -> bool:
        """Several busy threads of profkit's, more than the cores left free by the other
        work (at least one core short, so that a thread doing a moment's bookkeeping does
        not count). One thread on a busy machine is slowed, not oversubscribed: it waits
        for no other thread of its own."""
        return self.own_threads >= 2 and self.own_threads >= self.free_cores + 1.0

    @property
    def oversubscribed_by_others(self) -> bool:
        """Oversubscribed here, though its threads would fit the cores of a quiet machine:
        the other work's doing, not the strategy's own."""
        return self.oversubscribed and self.own_threads < self.cores + 1.0


class SideContention(msgspec.Struct, frozen=True):
    """One side of a comparison over its rounds."""

    rounds: int
    contended_rounds: int
    oversubscribed_rounds: int
    others_cores: float  # mean over the rounds, steal included
    own_threads: int  # the most busy threads in a round
    free_cores: float  # the least free cores in a round
    cores: int
    waiting_share: float | None = None  # mean over the rounds; None where unrecorded
    slowed_by_others: float | None = None  # mean over the rounds; None where unrecorded
    oversubscribed_by_others_rounds: int = 0


def side(rounds: Sequence[RoundContention]) -> SideContention | None:
    if not rounds:
        return None
    return SideContention(
        rounds=len(rounds),
        contended_rounds=sum(r.contended for r in rounds),
        oversubscribed_rounds=sum(r.oversubscribed for r in rounds),
        others_cores=sum(r.taken_cores for r in rounds) / len(rounds),
        own_threads=max(r.own_threads for r in rounds),
        free_cores=min(r.free_cores for r in rounds),
        cores=max(r.cores for r in rounds),
        waiting_share=_mean_or_none([r.waiting_share for r in rounds]),
        slowed_by_others=_mean_or_none([r.slowed_by_others for r in rounds]),
        oversubscribed_by_others_rounds=sum(r.oversubscribed_by_others for r in rounds),
    )


def _mean_or_none(values: Sequence[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return sum(values) / len(values)  # type: ignore[arg-type]


BASELINE_SIDE = "baseline"
STRATEGY_SIDE = "strategy"


class Difference(msgspec.Struct, frozen=True):
    """How the two sides' contention differed, and which side had it worse."""

    reason: str
    harder: str  # BASELINE_SIDE or STRATEGY_SIDE


def different(base: Sequence[RoundContention], other: Sequence[RoundContention]
              ) -> Difference | None:
    """How the two sides did not run under the same contention, or None when they did
    (or when either side has no record). The sentence names both sides' figures."""
    a, b = side(base), side(other)
    if a is None or b is None:
        return None
    cores = max(a.cores, b.cores)
    gap = abs(a.others_cores - b.others_cores)
    if gap >= max(DIFFERENT_MIN_CORES, DIFFERENT_MIN_FRACTION * cores):
        return Difference(
            f"other processes used {a.others_cores:.1f} of {cores} cores while the "
            f"baseline ran and {b.others_cores:.1f} while this strategy ran",
            BASELINE_SIDE if a.others_cores > b.others_cores else STRATEGY_SIDE)
    # the same other work, but it starved only one side's threads (a side with more
    # threads than a quiet machine's cores is oversubscribed by itself, and counts as not)
    if (a.oversubscribed_by_others_rounds > 0) != (b.oversubscribed_by_others_rounds > 0) and (
            a.contended_rounds or b.contended_rounds):
        harder, worse, s = ((BASELINE_SIDE, "the baseline", a)
                            if a.oversubscribed_by_others_rounds
                            else (STRATEGY_SIDE, "this strategy", b))
        return Difference(
            f"{worse} ran {s.own_threads} busy threads on {s.free_cores:.1f} free cores "
            f"(other processes used {s.others_cores:.1f} of {s.cores}): oversubscribed, so "
            "its time is the other work's as much as its own", harder)
    # the same share of other work, but the scheduler gave one side's threads less of it
    if (a.slowed_by_others is not None and b.slowed_by_others is not None
            and a.waiting_share is not None and b.waiting_share is not None
            and (a.contended_rounds or b.contended_rounds)
            and max(a.slowed_by_others, b.slowed_by_others)
            >= (1 + DIFFERENT_MIN_SLOWDOWN) * min(a.slowed_by_others, b.slowed_by_others)):
        return Difference(
            f"other work slowed profkit's busy threads by {a.slowed_by_others - 1:.0%} while "
            f"the baseline ran and {b.slowed_by_others - 1:.0%} while this strategy ran "
            f"(they waited for a core {a.waiting_share:.0%} and {b.waiting_share:.0%} of "
            f"the time; other processes used {a.others_cores:.1f} and {b.others_cores:.1f} "
            f"of {cores} cores)",
            BASELINE_SIDE if a.slowed_by_others > b.slowed_by_others else STRATEGY_SIDE)
    return None


def judged(v: NoiseVerdict, diff: Difference | None, faster: str | None) -> NoiseVerdict:
    """``v`` in the light of how the two sides' contention differed (``diff``) and which
    side was faster (``faster``: BASELINE_SIDE, STRATEGY_SIDE or None when unknown): not
    judged where the slower side had it worse; where the faster side had it worse the
    verdict stands with the reason, since quiet the gap would only grow."""
    if diff is None or v.doubt:
        return v
    if v.beyond_noise and diff.harder == faster:
        return msgspec.structs.replace(v, reason=f"{v.reason}; {diff.reason}; the faster "
                                       "side had it worse, so the change stands")
    return doubted(v, CONTENDED, diff.reason)


def oversubscription(rounds: Sequence[RoundContention]) -> str | None:
    """A sentence naming a strategy's oversubscription, or None: its busy threads
    (intra-op threads times concurrent workers) against the cores the other work left."""
    s = side(rounds)
    if s is None or not s.oversubscribed_rounds:
        return None
    intra = next((r.intra_op_threads for r in rounds if r.intra_op_threads), None)
    threads = f"{s.own_threads} busy threads"
    if intra:
        threads += f" ({intra} intra-op threads per worker)"
    where = (f"{s.free_cores:.1f} free of {s.cores} cores" if s.others_cores >= 0.05
             else f"{s.cores} cores")
    return (f"oversubscribed in {s.oversubscribed_rounds} of {s.rounds} rounds: "
            f"{threads} on {where}")


class RunContention(msgspec.Struct, frozen=True):
    """The whole run: how many rounds other work competed in, and with what."""

    rounds: int
    contended_rounds: int
    others_cores: float  # mean over the contended rounds (other processes)
    steal_cores: float  # mean over the contended rounds (other machines, on a VM)
    cores: int
    busiest: tuple[Competitor, ...]  # mean use over the contended rounds, largest first
    gpu_others: tuple[str, ...] = ()
    gpu_throttle: tuple[str, ...] = ()
    frequency_scaled: bool = False  # a governor that scales the clock, or a lowered clock

    @property
    def mattered(self) -> bool:
        return self.contended_rounds > 0 or self.frequency_scaled


def of_run(all_rounds: Sequence[RoundContention], top: int = 3) -> RunContention | None:
    """Every timed round of a run summarized; None where none was recorded."""
    if not all_rounds:
        return None
    hit = [r for r in all_rounds if r.contended]
    by_name: dict[str, float] = {}
    for r in hit:
        for c in r.busiest:
            by_name[c.name] = by_name.get(c.name, 0.0) + c.cores / len(hit)
    busiest = sorted((Competitor(n, c) for n, c in by_name.items() if c >= SHOWN_MIN_CORES),
                     key=lambda c: -c.cores)
    scaled = any((r.cpu_governor or "") in ("powersave", "ondemand", "conservative")
                 or (r.cpu_freq_fraction is not None and r.cpu_freq_fraction < 0.9)
                 for r in all_rounds)
    return RunContention(
        rounds=len(all_rounds),
        contended_rounds=len(hit),
        others_cores=sum(r.others_cores for r in hit) / len(hit) if hit else 0.0,
        steal_cores=sum(r.steal_cores for r in hit) / len(hit) if hit else 0.0,
        cores=max(r.cores for r in all_rounds),
        busiest=tuple(busiest[:top]),
        gpu_others=tuple(sorted({c.name for r in all_rounds for c in r.gpu_others})),
        gpu_throttle=tuple(sorted({t for r in all_rounds for t in r.gpu_throttle})),
        frequency_scaled=scaled,
    )
