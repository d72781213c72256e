"""The job view on edge cases, from hand-made rank summaries: waits and transfers by
hand, stragglers, mixed jobs, duplicate and missing ranks, offset clocks."""

from __future__ import annotations

import json_docs
import msgspec
import pytest

from profiler_kit.analysis.core.note import note
from profiler_kit.analysis.job_analysis import analyze_job, analyze_jobs
from profiler_kit.analysis.jobs.rank_summary import Call, GroupInfo, RankStep, RankSummary
from profiler_kit.render.wording.notes import say
from profiler_kit.sources.summary_files import dumps, load
from profiler_kit.trace.source import Unreadable

MS = 1_000_000


def summary(rank: int, calls: list[tuple[int, int]], world: int = 2, folder: str = "/job",
            size: int = 1 << 20, kind: str = "allreduce", name: str | None = None,
            exposed: bool = True, groups: tuple[GroupInfo, ...] | None = None,
            step_ms: int = 100) -> RankSummary:
    """A rank whose k-th all-reduce runs from calls[k][0] to calls[k][1] (ms), one per step."""
    out = []
    for k, (s, e) in enumerate(calls):
        ex = (s * MS, e * MS) if exposed else ()
        out.append(Call(kind, "0", k, s * MS, e * MS, size, "float", k, ex))
    steps = tuple(RankStep(k, k * step_ms * MS, step_ms * MS, None) for k in range(len(calls)))
    return RankSummary(
        path=f"{folder}/{name or f'rank{rank}'}.json", label=name or f"rank{rank}", rank=rank,
        world_size=world, backend="gloo", host=None,
        groups=groups or (GroupInfo("0", tuple(range(world))),), on_device=False, steps=steps,
        window_start_ns=0, window_end_ns=len(calls) * step_ms * MS, calls=tuple(out),
        exposed_ns=sum(e - s for s, e in calls) * MS if exposed else 0)


def _with_calls(s: RankSummary, extra: list[Call]) -> RankSummary:
    return msgspec.structs.replace(s, calls=s.calls + tuple(extra))


def test_wait_transfer_and_straggler_by_hand() -> None:
    # rank 2 arrives last in every step; rank 0 first
    r0 = summary(0, [(10, 60), (110, 160), (210, 255)], world=3)
    r1 = summary(1, [(20, 60), (130, 161), (220, 255)], world=3)
    r2 = summary(2, [(50, 61), (150, 160), (240, 256)], world=3)
    job = analyze_job([r2, r0, r1])
    assert job.ranks == (0, 1, 2) and job.missing_ranks == ()
    waits = {r.rank: r.wait_ns for r in job.per_rank}
    assert waits == {0: (40 + 40 + 30) * MS, 1: (30 + 20 + 20) * MS, 2: 0}
    transfers = {r.rank: r.transfer_ns for r in job.per_rank}
    assert transfers == {0: (10 + 10 + 15) * MS, 1: (10 + 11 + 15) * MS, 2: (11 + 10 + 16) * MS}
    assert [i.transfer_ns for i in job.instances] == [11 * MS, 11 * MS, 16 * MS]
    assert [i.last_rank for i in job.instances] == [2, 2, 2]
    assert job.straggler is not None and job.straggler.rank == 2
    assert job.straggler.last_arrivals == 3 and job.straggler.instances == 3
    # the others' mean wait for rank 2, per step: ((40+30) + (40+20) + (30+20)) / 2 / 3
    assert job.straggler.others_wait_per_step_ns == pytest.approx(180 / 2 / 3 * MS)
    assert job.per_rank[0].wait_per_step_ns == pytest.approx(110 / 3 * MS)
    # 1 MiB all-reduce on 3 ranks: busbw = size / transfer x 2 (3 - 1) / 3
    assert job.instances[0].busbw_bytes_per_s == pytest.approx((1 << 20) / 0.011 * 4 / 3)
    # everything was exposed: exposed wait and transfer are the wait and transfer
    for r in job.per_rank:
        assert r.exposed_wait_ns == r.wait_ns and r.exposed_transfer_ns == r.transfer_ns
    (kinds,) = job.kinds
    assert kinds.count == 3 and kinds.size_low_bytes == 1 << 20
    assert kinds.wait_ns == round((110 + 70 + 0) * MS / 3)


def test_no_straggler_when_arrivals_alternate() -> None:
    r0 = summary(0, [(10, 60), (150, 160), (210, 255), (350, 360)])
    r1 = summary(1, [(50, 60), (110, 160), (250, 255), (310, 360)])
    job = analyze_job([r0, r1])
    assert job.straggler is None
    assert [r.last_arrivals for r in job.per_rank] == [2, 2]


def test_exposed_split_counts_only_the_exposed_parts() -> None:
    r0 = summary(0, [(10, 60)])
    # rank 0 computes beside its call from 10 to 30: only 30..60 is exposed
    r0 = RankSummary(**{**{f: getattr(r0, f) for f in r0.__struct_fields__},
                        "calls": (Call("allreduce", "0", 0, 10 * MS, 60 * MS, 64, "float", 0,
                                       (30 * MS, 60 * MS)),)})
    r1 = summary(1, [(50, 60)])
    job = analyze_job([r0, r1])
    p0 = job.per_rank[0]
    assert p0.wait_ns == 40 * MS and p0.exposed_wait_ns == 20 * MS
    assert p0.exposed_transfer_ns == 10 * MS


def test_different_jobs_in_one_folder_are_separated_with_a_warning() -> None:
    a0, a1 = summary(0, [(10, 20)]), summary(1, [(15, 20)])
    b = [summary(r, [(10, 20)], world=4, name=f"other{r}") for r in range(4)]
    jobs = analyze_jobs([a0, a1, *b])
    assert sorted(len(j.ranks) for j in jobs) == [2, 4]
    (warning,) = {w for j in jobs for w in j.warnings}
    assert warning.code == "different_jobs_in_folder" and warning.figures["groups"] == (
        (("rank0", "rank1"), 2), (("other0", "other1", "other2", "other3"), 4))
    assert say(warning) == ("/job: traces of different jobs (world sizes or process groups "
                            "disagree), analyzed as separate groups: rank0, rank1: world size "
                            "2; other0, other1, other2, other3: world size 4")


def test_duplicate_ranks_make_separate_groups() -> None:
    first = [summary(r, [(10, 20)], name=f"a-rank{r}") for r in (0, 1)]
    second = [summary(r, [(10, 20)], name=f"b-rank{r}") for r in (0, 1)]
    jobs = analyze_jobs([*first, *second])
    assert len(jobs) == 2
    assert {j.labels for j in jobs} == {("a-rank0", "a-rank1"), ("b-rank0", "b-rank1")}
    dup = note("ranks_in_several_traces", folder="/job", ranks=(0, 1), groups=2)
    assert all(j.warnings == (dup,) for j in jobs)
    assert say(dup) == "/job: rank 0-1 appears in more than one trace; analyzed as 2 " \
                       "separate groups"


def test_folders_are_jobs_of_their_own_without_warnings() -> None:
    jobs = analyze_jobs([summary(r, [(10, 20)], folder=f"/run/{cfg}")
                         for cfg in ("w2-a", "w2-b") for r in (0, 1)])
    assert len(jobs) == 2 and all(j.warnings == () for j in jobs)


def test_missing_ranks_are_named_and_the_rest_analyzed() -> None:
    ranks = [summary(r, [(10 + r, 30)], world=8) for r in (0, 1, 2, 5)]
    (job,) = analyze_jobs(ranks)
    assert job.missing_ranks == (3, 4, 6, 7)
    (missing,) = job.warnings
    assert missing == note("ranks_without_trace", missing=(3, 4, 6, 7), world=8,
                           ranks=(0, 1, 2, 5))
    assert say(missing) == "ranks 3-4, 6-7 of 8 have no trace here: the job view covers " \
                           "ranks 0-2, 5"
    assert len(job.instances) == 1 and job.instances[0].last_rank == 5


def test_offset_clocks_are_aligned_at_a_common_collective() -> None:
    calls0 = [(10, 60), (110, 160), (210, 260)]
    calls1 = [(50, 60), (150, 160), (250, 260)]
    plain = analyze_job([summary(0, calls0), summary(1, calls1)])
    assert plain.clock_shifts == ()
    offset = 5_000  # rank 1's host clock is 5 s ahead
    shifted = analyze_job([summary(0, calls0),
                           summary(1, [(s + offset, e + offset) for s, e in calls1])])
    assert [(c.rank, c.shift_ns) for c in shifted.clock_shifts] == [(1, offset * MS)]
    assert shifted.clock_reference == ("the median end of 3 collectives common to all ranks "
                                       "(against rank 0)")
    (clocks,) = shifted.warnings
    assert clocks == note("clocks_differ", collectives=3, against=0, shifts=((1, offset * MS),))
    # the sentence names the reference the job view keeps as words (merged traces carry it)
    assert say(clocks) == (f"clocks differ between ranks: aligned at "
                           f"{shifted.clock_reference} (rank 1 +5000.000 ms)")
    assert [r.wait_ns for r in shifted.per_rank] == [r.wait_ns for r in plain.per_rank]
    assert shifted.straggler == plain.straggler


def test_mismatched_sizes_are_reported() -> None:
    r0 = summary(0, [(10, 20), (30, 40)])
    r1 = summary(1, [(10, 20), (30, 40)], size=1 << 10)
    job = analyze_job([r0, r1])
    assert job.mismatched == 2
    assert job.warnings == (note("collectives_mismatched", count=2),)


def test_summaries_file_round_trip(tmp_path) -> None:
    s = [summary(0, [(10, 20)]), summary(1, [(15, 20)])]
    path = tmp_path / "s.json"
    path.write_bytes(dumps(s))
    assert load(path).summaries == s and load(path).unreadable == []
    left_out = [Unreadable("rank2.json", "truncated")]
    path.write_bytes(dumps(s, left_out))
    assert (load(path).summaries, load(path).unreadable) == (s, left_out)


def test_bad_summaries_file_is_one_clear_error(tmp_path) -> None:
    from profiler_kit.errors import TraceError

    path = tmp_path / "s.json"
    path.write_text('{"schema": "profkit.rank-summaries/1", "summaries": [{"x": 1}]}')
    with pytest.raises(TraceError, match="not a profkit rank-summaries file"):
        load(path)


def test_every_job_json_field_is_documented() -> None:

    from profiler_kit.render.json import analysis as analysis_json
    steps_ranks = [summary(r, [(10 + 30 * r, 60)]) for r in (0, 1)]
    steps_ranks = [_with_calls(s, [Call("send" if s.rank == 0 else "recv", "0", 0,
                                        70 * MS, 80 * MS, 64, "float", 0, ())])
                   for s in steps_ranks]
    doc = analysis_json.document([], None, analyze_jobs(steps_ranks))
    keys: set[str] = set()

    def walk(obj: object) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                keys.add(k)
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    walk(doc["jobs"])
    assert doc["jobs"][0]["straggler"] is not None
    assert doc["jobs"][0]["pipeline"]["transfers"]
    text = json_docs.reference()
    missing = sorted(k for k in keys if f"`{k}`" not in text)
    assert not missing, f"fields missing from docs/analysis-json.md: {missing}"


def _stage(rank: int, steps: list[tuple[int, int, int]], calls: list[tuple[str, int, int]],
           world: int = 2) -> RankSummary:
    """A pipeline rank: steps as (start, dur, busy) and send/recv calls as (kind, start,
    end), all in ms."""
    return RankSummary(
        path=f"/pipe/rank{rank}.json", label=f"rank{rank}", rank=rank, world_size=world,
        backend="gloo", host=None, groups=(GroupInfo("0", tuple(range(world))),),
        on_device=False,
        steps=tuple(RankStep(k, s * MS, d * MS, None, None, b * MS, 0)
                    for k, (s, d, b) in enumerate(steps)),
        window_start_ns=0, window_end_ns=1000 * MS,
        calls=tuple(Call(kind, "0", i, s * MS, e * MS, 4096, "float", 0, ())
                    for i, (kind, s, e) in enumerate(calls)),
        exposed_ns=0)


def test_pipeline_pairs_waits_and_bubbles_by_hand() -> None:
    # stage 0 computes 0-40, sends at 40 (ends 45); stage 1 waits in recv from 5 to 45,
    # then computes 45-95; the step window is 0-100 on both ranks
    r0 = _stage(0, [(0, 100, 40)], [("send", 40, 45)])
    r1 = _stage(1, [(0, 100, 50)], [("recv", 5, 45)])
    job = analyze_job([r0, r1])
    p = job.pipeline
    assert p is not None and p.unmatched_calls == 0
    (t,) = p.transfers
    assert (t.src, t.dst, t.waiting_rank) == (0, 1, 1)
    assert t.wait_ns == 35 * MS and t.transfer_ns == 5 * MS
    assert t.busbw_bytes_per_s == pytest.approx(4096 / 0.005)
    s0, s1 = p.stages
    assert (s0.busy_ns, s0.bubble_ns, s0.bubble_share) == (40 * MS, 60 * MS, 0.6)
    assert (s1.busy_ns, s1.bubble_ns, s1.recv_wait_ns, s1.send_wait_ns) == (
        50 * MS, 50 * MS, 35 * MS, 0)
    # one aligned window of 100 ms for 2 ranks, 90 ms of computation
    assert (p.window_ns, p.bubble_ns) == (200 * MS, 110 * MS)
    assert p.bubble_share == pytest.approx(110 / 200)


def test_pipeline_of_three_ranks_pairs_by_nearest_end() -> None:
    # 0 -> 1 ends at 45, 1 -> 2 ends at 95; each recv pairs with the send ending with it
    r0 = _stage(0, [(0, 100, 40)], [("send", 40, 45)], world=3)
    r1 = _stage(1, [(0, 100, 50)], [("recv", 5, 45), ("send", 90, 95)], world=3)
    r2 = _stage(2, [(0, 100, 5)], [("recv", 10, 96)], world=3)
    p = analyze_job([r0, r1, r2]).pipeline
    assert p is not None and p.unmatched_calls == 0
    assert [(t.src, t.dst, t.wait_ns) for t in p.transfers] == [(0, 1, 35 * MS),
                                                                (1, 2, 80 * MS)]
    assert [t.transfer_ns for t in p.transfers] == [5 * MS, 6 * MS]


def test_unpaired_sends_are_counted() -> None:
    r0 = _stage(0, [(0, 100, 40)], [("send", 40, 45), ("send", 50, 55)])
    r1 = _stage(1, [(0, 100, 50)], [("recv", 5, 45)])
    p = analyze_job([r0, r1]).pipeline
    assert p is not None and len(p.transfers) == 1 and p.unmatched_calls == 1


def test_a_folder_of_summaries_gives_the_job_view(tmp_path, capsys) -> None:
    from profiler_kit.cli import main

    calls = {0: [(10, 60), (110, 160)], 1: [(50, 60), (150, 160)]}
    for rank, c in calls.items():  # one file per rank, as one process per trace writes
        (tmp_path / f"rank{rank}.json").write_bytes(dumps([summary(rank, c)]))
    assert main(["analyze", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Straggler: rank 1" in out and "2 of 2 ranks" in out


def test_the_ranks_of_one_job_may_lie_in_one_folder_per_host() -> None:
    ranks = [summary(r, [(10 + r, 30)], world=4, folder=f"/scratch/host{r // 2}")
             for r in range(4)]
    (job,) = analyze_jobs(ranks)
    assert job.ranks == (0, 1, 2, 3) and job.name == "/scratch" and job.warnings == ()
    assert job.instances[0].last_rank == 3


def test_many_ranks_console_shows_the_telling_ones() -> None:
    import io

    from rich.console import Console

    from profiler_kit.render.console.analysis import job_view
    from profiler_kit.render.sections.job import MAX_RANK_ROWS

    world = 40
    late = 17  # arrives 5 ms after everyone else
    ranks = [summary(r, [(10 + (5 if r == late else 0), 30)], world=world)
             for r in range(world)]
    (job,) = analyze_jobs(ranks)
    assert job.straggler is not None and job.straggler.rank == late
    buf = io.StringIO()
    Console(file=buf, width=200, color_system=None).print(job_view(job))
    text = buf.getvalue()
    assert f"the {MAX_RANK_ROWS} of {world} ranks" in text and "Straggler: rank 17" in text
    import re

    rows = [int(m.group(1)) for line in text.splitlines()
            if (m := re.match(r"^\W*(\d+)\s+rank\1\s", line))]
    assert len(rows) == MAX_RANK_ROWS and rows[0] == late  # the straggler first


def test_ranks_on_one_host_share_its_clock() -> None:
    """A two-rank gloo run on one busy host (a CI run): rank 0's all-reduce span ended a
    little before rank 1's began, in every step, which on two hosts would say rank 1's
    clock is behind. Ranks whose traces name the same host share one clock: no shift,
    and the waits are the raw starts' differences. Without host names, or on two hosts,
    the ends are still read as an offset."""
    calls0 = [(10, 58), (110, 158), (210, 258)]
    calls1 = [(59, 60), (159, 160), (259, 260)]

    def on(host: str | None, rank: int, calls: list[tuple[int, int]]) -> RankSummary:
        return msgspec.structs.replace(summary(rank, calls), host=host)

    one_host = analyze_job([on("node-a", 0, calls0), on("node-a", 1, calls1)])
    assert one_host.clock_shifts == ()
    assert one_host.per_rank[0].wait_ns == sum(b[0] - a[0] for a, b in zip(
        calls0, calls1, strict=True)) * MS
    for hosts in ((None, None), ("node-a", "node-b")):
        two = analyze_job([on(hosts[0], 0, calls0), on(hosts[1], 1, calls1)])
        assert [c.rank for c in two.clock_shifts] == [1]
