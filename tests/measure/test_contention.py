"""Contention: what competed with each timed round, and the verdicts it overrides.

The figures of a round are held to hand computations; the verdicts to the cases that
misled users on a busy machine (a baseline thrashing beside other work, bimodal rounds,
an explanation that contradicted the timing). The watch itself is tested against a real
busy process that is not profkit's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import msgspec
import pytest

from profiler_kit import contention, results
from profiler_kit.contention import Competitor, RoundContention
from profiler_kit.noise import (
    CONTENDED,
    PAIRED_BY_ROUND,
    UNSTABLE,
    bimodal,
    clustered,
    explanation_conflict,
    rounds_disagree,
    speedup_verdict,
)
from profiler_kit.results import OK, StrategyResult

MS = 1_000_000


def _round(others: float, threads: int = 1, cores: int = 2, **kw) -> RoundContention:
    return RoundContention(wall_s=1.0, cores=cores, others_cores=others, own_threads=threads,
                           **kw)


def test_a_round_is_contended_when_other_work_uses_a_share_of_the_cores() -> None:
    assert not _round(0.1).contended  # a daemon or the shell: background
    assert _round(0.3).contended  # over 0.25 cores, and 10 % of 2
    assert not _round(0.5, cores=16).contended  # under 10 % of 16 cores
    assert _round(0.0, gpu_others=(Competitor("python (train)", 0.0),)).contended


def test_oversubscribed_needs_several_own_threads_beyond_the_free_cores() -> None:
    # two intra-op threads beside work that left 0.3 of 2 cores: they wait for each other
    assert _round(1.7, threads=2).oversubscribed
    assert _round(1.7, threads=2).free_cores == pytest.approx(0.3)
    # the same threads on a quiet machine fit the cores
    assert not _round(0.05, threads=2).oversubscribed
    # one thread beside a hog is slowed, but waits for no thread of its own
    assert not _round(2.0, threads=1).oversubscribed
    # two workers x two intra-op threads on two quiet cores: oversubscribed by itself
    assert _round(0.0, threads=4).oversubscribed


def test_sides_that_ran_beside_different_work_are_named_with_both_figures() -> None:
    same = [_round(1.6), _round(1.7)]
    assert contention.different(same, [_round(1.65), _round(1.6)]) is None
    diff = contention.different([_round(0.9), _round(1.7)], [_round(1.7), _round(1.8)])
    # 1.3 against 1.75 cores: a gap of 0.45, above 0.35 and 15 % of 2 cores
    assert diff == contention.Difference(
        "other processes used 1.3 of 2 cores while the baseline ran and 1.8 while this "
        "strategy ran", contention.STRATEGY_SIDE)
    assert contention.different([], same) is None  # a run recorded before contention


def test_the_same_other_work_that_starved_only_one_side_is_named() -> None:
    """The main job on a busy 2-core machine: the baseline's two intra-op threads beside
    1.6 cores of other work, the threads strategy's workers one thread each."""
    base = [_round(1.6, threads=2, intra_op_threads=2)] * 3
    other = [_round(1.5, threads=1)] * 3
    diff = contention.different(base, other)
    assert diff.harder == contention.BASELINE_SIDE
    assert diff.reason.startswith("the baseline ran 2 busy threads on 0.4 free")
    assert contention.oversubscription(base) == (
        "oversubscribed in 3 of 3 rounds: 2 busy threads (2 intra-op threads per worker) "
        "on 0.4 free of 2 cores")
    assert contention.oversubscription(other) is None


def test_a_strategy_oversubscribed_by_its_own_design_does_not_hide_a_starved_baseline(
        ) -> None:
    """The main job beside one busy process in its own session: the baseline's two
    intra-op threads on the one free core took 3.6 s a step (127 ms quiet), the threads
    strategy's four 164 ms. Both are oversubscribed, but the threads strategy is so on a
    quiet machine too (four threads, two cores): only the baseline's is the other work's
    doing, and its spinning threads run rather than wait, so the time waited (99 % against
    129 %) would name the wrong side."""
    base = [_round(1.0, threads=2, own_cores=1.0, own_wait_cores=0.99)] * 3
    other = [_round(1.0, threads=4, own_cores=1.0, own_wait_cores=1.29)] * 3
    assert base[0].oversubscribed_by_others and not other[0].oversubscribed_by_others
    assert other[0].oversubscribed
    diff = contention.different(base, other)
    assert diff.harder == contention.BASELINE_SIDE
    assert diff.reason.startswith("the baseline ran 2 busy threads on 1.0 free cores")


def test_a_side_whose_threads_waited_longer_for_a_core_is_named() -> None:
    """The A/A pair that once failed the regression gate on a busy 2-core machine: one
    rank beside one other process, then beside two others in their own sessions. The
    other work's share differed by a third of a core only (under the 0.35 asked of it),
    but the scheduler left the second run's thread 0.6 of a core: it waited for one 40 %
    of the time, and the run took 1.6 times as long."""
    base = [_round(1.02, own_cores=0.97, own_wait_cores=0.01)] * 3
    other = [_round(1.35, own_cores=0.6, own_wait_cores=0.4)] * 3
    assert contention.side(base).waiting_share == pytest.approx(0.01)
    assert contention.side(other).waiting_share == pytest.approx(0.4)
    assert contention.side(other).slowed_by_others == pytest.approx(1 / 0.6)
    diff = contention.different(base, other)
    assert diff == contention.Difference(
        "other work slowed profkit's busy threads by 1% while the baseline ran and 67% "
        "while this strategy ran (they waited for a core 1% and 40% of the time; other "
        "processes used 1.0 and 1.4 of 2 cores)", contention.STRATEGY_SIDE)
    # 0.99 against 0.96 of the time running: 3 % apart, under the 5 % asked
    near = [_round(1.3, own_cores=0.7, own_wait_cores=0.04)] * 3
    assert contention.different(base, near) is None
    # a thread that mostly sleeps: twice the wait is still 1 % of the round
    sleepy = [_round(1.0, own_cores=0.1, own_wait_cores=0.01)] * 3
    assert contention.different(sleepy, [_round(1.0, own_cores=0.1, own_wait_cores=0.02)] * 3
                                ) is None
    # two busy threads: their waits are shared between them
    assert _round(1.0, threads=2, own_wait_cores=0.5).waiting_share == pytest.approx(0.25)
    # waiting on a quiet machine is the strategy's own (threads that outnumber the cores)
    quiet = [_round(0.02, threads=4, own_cores=2.0, own_wait_cores=2.0)] * 3
    assert contention.different([_round(0.02, own_cores=1.0, own_wait_cores=0.0)] * 3,
                                quiet) is None
    # a run recorded before the wait was: nothing to compare
    assert contention.different([_round(1.02)] * 3, other) is None
    assert _round(1.0).waiting_share is None and _round(1.0).slowed_by_others is None


def test_the_wait_threads_have_for_each_other_is_not_the_other_work_s() -> None:
    """The main job beside a little other work (0.3 of 2 cores): ``threads`` runs four
    busy threads on two cores, so each waits half the time even on a quiet machine; the
    other work adds a little to that. ``sequential``'s two threads wait 15 % of the
    time, all of it the other work's. Both were slowed by it about alike (1.11x and 1.18x:
    the baseline a little more); the raw waits (55 % against 15 %) would have named the
    wrong side, and made a slower ``threads`` "not judged" for its own threads."""
    base = [_round(0.3, threads=2, own_cores=1.7, own_wait_cores=0.3)] * 3
    threads = [_round(0.3, threads=4, own_cores=1.7, own_wait_cores=2.2)] * 3
    assert threads[0].slowed_by_others == pytest.approx(0.5 / 0.45)
    assert base[0].slowed_by_others == pytest.approx(1 / 0.85)
    diff = contention.different(base, threads)
    assert diff.harder == contention.BASELINE_SIDE
    assert diff.reason.startswith("other work slowed profkit's busy threads by 18% while "
                                  "the baseline ran and 11% while this strategy ran")
    # the same, with the other work's share of the wait equal: no difference
    alike = [_round(0.3, threads=4, own_cores=1.7, own_wait_cores=4 * (1 - 0.5 * 0.85))] * 3
    assert alike[0].slowed_by_others == pytest.approx(base[0].slowed_by_others)
    assert contention.different(base, alike) is None


def test_the_run_summary_averages_the_contended_rounds_by_process() -> None:
    hog = Competitor("python (hog)", 1.2)
    rounds = [_round(1.5, busiest=(hog, Competitor("chrome", 0.3))),
              _round(1.9, busiest=(Competitor("python (hog)", 1.6),)),
              _round(0.02)]
    run = contention.of_run(rounds)
    assert run is not None and run.mattered
    assert (run.rounds, run.contended_rounds, run.cores) == (3, 2, 2)
    assert run.others_cores == pytest.approx((1.5 + 1.9) / 2)
    assert run.busiest == (Competitor("python (hog)", pytest.approx(1.4)),
                           Competitor("chrome", pytest.approx(0.15)))
    assert not contention.of_run([_round(0.02)]).mattered
    assert contention.of_run([]) is None
    assert contention.of_run([_round(0.0, cpu_governor="powersave")]).frequency_scaled


def _rounds(*medians_ms: float, n: int = 8, jitter: float = 0.01):
    return tuple(tuple(int(m * MS * (1 + jitter * ((i % 3) - 1))) for i in range(n))
                 for m in medians_ms)


def test_bimodal_rounds_are_unstable_never_beyond_noise() -> None:
    """``profkit tune`` on a small MLP on a busy machine: the baseline's rounds 125.7,
    1.34 and 123.9 ms gave "threads 86.36x" beyond noise."""
    base = _rounds(125.7, 1.34, 123.9)
    cand = _rounds(1.45, 1.44, 1.46)
    assert rounds_disagree(cand, base, change=85) is not None
    v = speedup_verdict(base, cand)
    assert v.method == PAIRED_BY_ROUND and v.beyond_noise is not True and v.doubt == UNSTABLE
    assert v.reason.startswith("the rounds disagree: round medians 1.45 ms / 1.44 ms / "
                               "1.46 ms against the baseline's 126 ms / 1.34 ms / 124 ms")
    # one round whose samples fall in two clusters
    one = (tuple(int(x * MS) for x in [125.7, 1.34, 123.9, 1.35, 125.0, 124.2, 126.1, 125.5]),)
    assert bimodal(one[0]) == (pytest.approx(1.345 * MS), pytest.approx(125.25 * MS))
    within = speedup_verdict(one, cand[:1])
    assert within.beyond_noise is not True and within.doubt == UNSTABLE
    assert within.reason == ("the baseline is unstable: its samples fall in two clusters, "
                             "around 1.34 ms and 125 ms")
    # steady rounds with the same change stay beyond noise
    steady = speedup_verdict(_rounds(125.7, 124.0, 123.9), cand)
    assert steady.beyond_noise is True and steady.doubt == ""


def test_rounds_disagree_when_their_ratios_spread_wider_than_the_change() -> None:
    base = _rounds(10, 10, 10)
    assert rounds_disagree(_rounds(10, 13, 10.5), base, change=0.05) is not None  # 30 %
    assert rounds_disagree(_rounds(10, 13, 10.5), base, change=2.0) is None  # 3x stands
    assert rounds_disagree(_rounds(10, 10.3, 10.1), base, change=0.0) is None  # 3 %
    # drift that both sides share (the machine slowed in round 2) cancels in the ratio
    assert rounds_disagree(_rounds(8, 10.4, 8.1), _rounds(10, 13, 10.1), 0.25) is None
    assert clustered(_rounds(10, 13)) is None  # rounds apart, each one tight


def _strategy(name: str, rounds, rounds_contention, items: int = 1) -> StrategyResult:
    pooled = tuple(v for r in rounds for v in r)
    st = results.stats(pooled)
    return StrategyResult(name=name, status=OK, samples_ns=pooled, stats=st,
                          repeat_samples_ns=rounds, items_per_step=items,
                          throughput_items_per_s=results.throughput(items, st.median_ns),
                          contention=tuple(rounds_contention))


def test_the_busy_machine_speedup_is_not_judged_and_names_the_oversubscription() -> None:
    """The main job beside other work: sequential's two intra-op threads thrashed (2.07 s
    a step) while the threads strategy ran at 258 ms, 8x "beyond noise"; quiet, 0.92x."""
    base = _strategy("sequential", _rounds(2070, 1680, 2090),
                     [_round(1.6, threads=2, intra_op_threads=2)] * 3)
    threads = _strategy("threads", _rounds(258, 212, 213), [_round(1.5, threads=1)] * 3)
    judged = {s.name: s for s in results.against_baseline((base, threads), "sequential")}
    n = judged["threads"].noise
    assert n.beyond_noise is None and n.doubt == CONTENDED
    assert "the baseline ran 2 busy threads on 0.4 free cores" in n.reason
    assert results.best(tuple(judged.values())) is None
    # the same samples on a quiet machine: beyond noise, as measured
    quiet = [_round(0.05, threads=2)] * 3
    calm = results.against_baseline(
        (msgspec.structs.replace(base, contention=tuple(quiet)),
         msgspec.structs.replace(threads, contention=tuple(quiet))), "sequential")
    assert calm[1].noise.beyond_noise is True and calm[1].noise.doubt == ""
    # the faster side oversubscribed instead: quiet, its gain would grow; the verdict stands
    slowed = results.against_baseline(
        (msgspec.structs.replace(base, contention=tuple([_round(1.5, threads=1)] * 3)),
         msgspec.structs.replace(threads, contention=tuple(
             [_round(1.6, threads=2, intra_op_threads=2)] * 3))), "sequential")
    n = slowed[1].noise
    assert n.beyond_noise is True and n.doubt == ""
    assert n.reason.startswith("3 rounds; this strategy ran 2 busy threads")
    assert n.reason.endswith("the faster side had it worse, so the change stands")


def test_contention_travels_through_run_json(tmp_path) -> None:
    r = _round(1.2, threads=2, intra_op_threads=2, busiest=(Competitor("python (hog)", 1.1),),
               load_avg_1m=3.5, cpu_governor="performance")
    s = _strategy("sequential", _rounds(10, 10.1), [r, r])
    doc = s.to_json()
    assert doc["contention"][0]["others_cores"] == 1.2
    assert doc["contention"][0]["busiest"] == [{"name": "python (hog)", "cores": 1.1}]
    back = msgspec.convert(doc, StrategyResult)
    assert back.contention == (r, r)


def test_an_explanation_that_contradicts_the_timing_is_caught() -> None:
    # channels_last: 1.51x faster when timed, +100.2 % in the profiled steps
    assert explanation_conflict(1 / 1.51, 2.002) == (
        "the profiled steps say +100.2% where the timed medians say -33.8%")
    # an A/A pair whose single profiled step came out 15 % faster
    assert explanation_conflict(1.0, 0.85) is not None
    # the same story, the profiled steps a little slower for the profiler's cost
    assert explanation_conflict(2.0, 2.27) is None
    assert explanation_conflict(1.02, 0.97) is None  # both: no change
    assert explanation_conflict(0.5, 1.1 / 0.5 * 0.5 * 2.2) is not None  # 0.5 against 2.42


# ---------------------------------------------------------------- the watch, for real

HOG = "import time\nend = time.time() + 60\nwhile time.time() < end:\n    pass\n"


@pytest.fixture
def hog(tmp_path):
    """A busy process that is not profkit's: started through a shell that exits, so it
    is no descendant of this process; killed at the end."""
    script = tmp_path / "cpu_hog.py"
    script.write_text(HOG)
    out = subprocess.run(["sh", "-c", f"{sys.executable} {script} >/dev/null 2>&1 & echo $!"],
                         capture_output=True, text=True, check=True)
    pid = int(out.stdout.strip())
    try:
        yield pid
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.timing
def test_the_watch_sees_another_process_and_names_it(hog, monkeypatch) -> None:
    from profiler_kit.measure import contention_watch

    monkeypatch.setenv(contention_watch.ROOT_ENV, str(os.getpid()))
    watch = contention_watch.Watch()
    time.sleep(0.3)  # the hog's interpreter is up
    watch.start()
    end = time.perf_counter() + 1.0
    while time.perf_counter() < end:  # one busy thread of our own
        pass
    r = watch.stop(intra_op_threads=3)
    assert r is not None and r.wall_s >= 1.0
    # our loop's CPU time is ours, however little of it a busy machine gave us
    assert r.intra_op_threads == 3 and r.own_cores > 0
    # the hog ran for the whole second on one of the cores it shares with this loop
    # and whatever else runs: at least a fifth of a core, however busy the machine is
    assert r.others_cores >= 0.2
    named = {c.name for c in r.busiest}
    assert "python3 (cpu_hog)" in named or f"{os.path.basename(sys.executable)} (cpu_hog)" \
        in named or len(r.busiest) == 3


@pytest.mark.timing
def test_the_watch_sees_our_thread_wait_beside_work_in_other_sessions(tmp_path,
                                                                      monkeypatch) -> None:
    """One busy process per core, each in its own session (as other jobs' ranks are): the
    kernel shares the cores among sessions, so our busy loop waits for a core, and the
    watch reads that wait from the scheduler's account of our threads."""
    from profiler_kit.measure import contention_watch

    monkeypatch.setenv(contention_watch.ROOT_ENV, str(os.getpid()))
    script = tmp_path / "cpu_hog.py"
    script.write_text(HOG)
    hogs = [subprocess.Popen([sys.executable, str(script)], start_new_session=True)
            for _ in os.sched_getaffinity(0)]
    try:
        time.sleep(0.3)
        watch = contention_watch.Watch()
        watch.start()
        end = time.perf_counter() + 1.0
        while time.perf_counter() < end:
            pass
        r = watch.stop()
    finally:
        for p in hogs:
            p.kill()
            p.wait()
    assert r is not None and r.own_wait_cores is not None
    # n busy sessions on n cores, and ours: a fair share is n / (n + 1) of a core, so our
    # loop waits 1 / (n + 1) of the time, and longer the busier the machine is; half of
    # that leaves room for the scheduler's slack
    n = len(os.sched_getaffinity(0))
    assert r.waiting_share >= 0.5 / (n + 1), r


def test_process_labels_say_which_python() -> None:
    from profiler_kit.measure.contention_watch import process_label

    assert process_label("python3", ["python3", "-m", "pytest", "-q"]) == "python3 (pytest)"
    assert process_label("python", ["/usr/bin/python", "-u", "/x/train.py"]) == "python (train)"
    assert process_label("chrome", ["chrome", "--type=renderer"]) == "chrome"
    assert process_label("python", []) == "python"


def test_gpu_clock_slowdowns_are_read_from_nvml_masks() -> None:
    """NVML's mask of clock-event reasons: idle, application clocks and sync boost are
    not slowdowns; power caps and thermal ones are (pynvml's own constants)."""
    import pynvml

    from profiler_kit.measure.contention_watch import slowdowns

    mask = (pynvml.nvmlClocksEventReasonGpuIdle | pynvml.nvmlClocksEventReasonSwPowerCap
            | pynvml.nvmlClocksEventReasonHwThermalSlowdown)
    assert slowdowns(mask, pynvml) == ("SwPowerCap", "HwThermalSlowdown")
    assert slowdowns(pynvml.nvmlClocksEventReasonGpuIdle
                     | pynvml.nvmlClocksEventReasonSyncBoost, pynvml) == ()
    assert slowdowns(0, pynvml) == ()


def _ddp_report(seconds: float, others: float) -> dict:
    """A ddp_report.json of one configuration, three rounds of 8 steps, each round timed
    beside ``others`` cores of other work."""
    rounds = [[seconds * (1 + 0.01 * (i % 3) + 0.004 * k) for i in range(8)] for k in range(3)]
    return {"schema": "profkit.ddp-benchmark/1", "benchmark_results": [{
        "model": "m", "batch_size": 4, "result": [{
            "configuration": "ddp-w1", "world_size": 1, "ranks": [0],
            "measurements": [v for r in rounds for v in r], "repeat_measurements": rounds,
            "contention": [msgspec.to_builtins(_round(others))] * 3}]}]}


def test_two_runs_beside_different_work_are_not_judged_by_diff() -> None:
    """An A/A pair of ddp runs 2.5 minutes apart on a shared machine read -56 % "beyond
    noise": the first ran beside 1.8 cores of other work, the second beside 0.2."""
    from profiler_kit.ddp_benchmark.diff import diff_reports

    (c,) = diff_reports(_ddp_report(0.324, 1.8), _ddp_report(0.141, 0.2)).benchmarks[0] \
        .configurations
    assert c.beyond_noise is None and c.percentiles[0].noise.doubt == "contended"
    assert "while the baseline ran and 0.2 while this strategy ran" in \
        c.percentiles[0].noise.reason
    # the same runs beside the same work: the change is real
    (same,) = diff_reports(_ddp_report(0.324, 0.2), _ddp_report(0.141, 0.2)).benchmarks[0] \
        .configurations
    assert same.beyond_noise is True
    # the faster run had the busier machine: quiet, it would only be faster still
    (harder,) = diff_reports(_ddp_report(0.324, 0.2), _ddp_report(0.141, 1.8)).benchmarks[0] \
        .configurations
    assert harder.beyond_noise is True
    assert harder.percentiles[0].noise.reason.endswith("so the change stands")
