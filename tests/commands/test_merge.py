"""``profkit merge``: the ranks of a real two-rank gloo run in one Perfetto trace, read
back with profkit's own loader: every rank's events there, on its own pids, moved by the
clock shift the merge reports; the matched all-reduces linked by flows."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from merge_helpers import GLOO, shifted_copy

from profiler_kit import api
from profiler_kit.cli import main
from profiler_kit.errors import UsageError
from profiler_kit.trace.loader import load

OFFSET_US = 2_500_000  # rank 1's host clock runs 2.5 s ahead


def _rows(table, shift_ns: int = 0, pids: set[int] | None = None) -> Counter:
    keep = [i for i in range(len(table)) if pids is None or int(table.pid[i]) in pids]
    return Counter((table.names[int(table.name[i])], int(table.ts_ns[i]) - shift_ns,
                    int(table.dur_ns[i])) for i in keep)


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    folder = shifted_copy(tmp_path_factory.mktemp("hosts") / "job", 1, OFFSET_US)
    out = folder.parent / "job.json.gz"
    report = api.merge([folder], out)
    return folder, out, report


def test_every_rank_is_there_shifted_by_the_reported_offset(merged):
    folder, out, report = merged
    table = load(out)
    assert [r.rank for r in report.ranks] == [0, 1]
    assert report.ranks[0].shift_ns == 0
    assert abs(report.ranks[1].shift_ns - OFFSET_US * 1000) <= 0.05 * OFFSET_US * 1000
    all_pids: set[int] = set()
    for r in report.ranks:
        pids = set(r.pids.values())
        assert not pids & all_pids  # no pid shared between ranks
        all_pids |= pids
        original = load(Path(r.path))
        assert _rows(table, pids=pids) == _rows(original, shift_ns=r.shift_ns)
    assert len(table) == sum(len(load(Path(r.path))) for r in report.ranks)
    # the straggler's collectives line up again: rank 0 waits ~50 ms before each
    (job,) = api.job_view([folder])
    assert job.straggler is not None and job.straggler.rank == 1


def test_process_names_flows_and_the_header(merged):
    _, out, report = merged
    doc = json.loads(gzip.decompress(out.read_bytes()))
    assert doc["schema"] == "profkit.merged-trace/1"
    assert doc["profkitMerge"]["flows"] == report.flows
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    for r in report.ranks:
        for pid in r.pids.values():
            assert names[pid] == f"rank {r.rank} ({r.host})" if r.host else f"rank {r.rank}"
    starts = {e["id"]: e for e in events if e.get("ph") == "s"
              and e.get("cat") == "profkit.collective"}
    ends = {e["id"]: e for e in events if e.get("ph") == "f"
            and e.get("cat") == "profkit.collective"}
    assert len(starts) == len(ends) == report.flows == 3  # three all-reduces, one waiter
    slices = [e for e in events if e.get("ph") == "X" and e.get("name") == "gloo:all_reduce"]
    rank_of = {p: r.rank for r in report.ranks for p in r.pids.values()}

    def inside(flow):
        return any(s["pid"] == flow["pid"] and s["tid"] == flow["tid"]
                   and s["ts"] <= flow["ts"] <= s["ts"] + s["dur"] for s in slices)

    for fid, s in starts.items():
        f = ends[fid]
        assert f["bp"] == "e"
        assert rank_of[s["pid"]] == 1 and rank_of[f["pid"]] == 0  # the straggler to its waiter
        assert inside(s) and inside(f)


def test_small_pieces_give_the_same_file(merged, tmp_path):
    from profiler_kit.sources.merge import merge_job

    folder, out, _ = merged
    found = api.summarize([folder])
    (job,) = api.job_view(found)
    with open(tmp_path / "small.json", "wb") as fh:
        merge_job(list(found), job, fh, piece_bytes=512)
    small = json.loads((tmp_path / "small.json").read_bytes())
    assert small == json.loads(gzip.decompress(out.read_bytes()))


def test_outputs_are_never_inputs_or_foreign_files(merged, tmp_path, capsys):
    folder, out, _ = merged
    trace = next(folder.glob("rank0.*"))
    with pytest.raises(UsageError, match="existing trace|one of the"):
        api.merge([folder], trace)
    foreign = tmp_path / "notes.json.gz"
    foreign.write_bytes(gzip.compress(b"{}"))
    with pytest.raises(UsageError, match="did not write"):
        api.merge([folder], foreign)
    assert main(["merge", str(folder), "-o", str(out)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["merge", str(folder), "-o", str(out), "--force"]) == 0
    assert "2 ranks" in capsys.readouterr().err
    # the merged trace lying beside the ranks is not taken for a rank
    inside = folder / "job.json"
    assert main(["merge", str(folder), "-o", str(inside)]) == 0
    assert main(["merge", str(folder), "-o", str(inside), "--force"]) == 0


def test_no_job_is_a_clear_error(tmp_path):
    with pytest.raises(UsageError, match="no job of several ranks"):
        api.merge([GLOO / "rank0.pt.trace.json.gz"], tmp_path / "x.json.gz")


@pytest.mark.parametrize("name", ["job.pftrace", "job.pftrace.gz"])
def test_a_perfetto_native_merge_holds_the_same_events(merged, tmp_path, name):
    """``-o job.pftrace``: the same merged events, as Perfetto's protobuf, read back by
    profkit to the same table; it is known for a merged trace (not a rank) beside the
    ranks and replaced only with --force."""
    folder, out, report = merged
    native = folder / name
    again = api.merge([folder], native)
    assert again.flows == report.flows and again.ranks == report.ranks
    from_json, from_pftrace = load(out), load(native)
    assert _rows(from_pftrace) == _rows(from_json)
    for column in ("cat", "device", "stream", "correlation", "external_id"):
        assert sorted(getattr(from_pftrace, column).tolist()) == \
            sorted(getattr(from_json, column).tolist()), column
    from profiler_kit.util.path_kinds import is_merged_trace

    assert is_merged_trace(native)
    assert main(["merge", str(folder), "-o", str(native)]) == 2  # exists: --force
    assert main(["merge", str(folder), "-o", str(native), "--force"]) == 0
    native.unlink()


def test_each_ranks_gpu_counters_stay_its_gpus(tmp_path):
    """Counters on PyTorch's "GPU N Counters" process keep their GPU through the merge,
    named by rank (``rank R GPU N Counters``), in either format."""
    from merge_helpers import shifted_copy as copy_job

    folder = copy_job(tmp_path / "job", 1, 0)
    for rank, watts in ((0, 100.0), (1, 600.0)):
        trace = next(folder.glob(f"rank{rank}.*"))
        raw = trace.read_bytes()
        doc = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
        start = min(e["ts"] for e in doc["traceEvents"] if e.get("ph") == "X")
        doc["traceEvents"] += [{"ph": "C", "name": "Power (W)", "pid": "GPU 0 Counters",
                                "ts": start + k, "args": {"": watts}} for k in range(3)]
        trace.write_bytes(gzip.compress(json.dumps(doc).encode()) if raw[:2] == b"\x1f\x8b"
                          else json.dumps(doc).encode())
    for name in ("job.json.gz", "job.pftrace"):
        out = tmp_path / name
        api.merge([folder], out)
        c = load(out).counters
        assert set(c.device.tolist()) == {0}
        assert sorted(set(c.value.tolist())) == [100.0, 600.0]
    merged = json.loads(gzip.decompress((tmp_path / "job.json.gz").read_bytes()))
    assert {(e["pid"], e["args"][""]) for e in merged["traceEvents"] if e.get("ph") == "C"} \
        == {("rank 0 GPU 0 Counters", 100.0), ("rank 1 GPU 0 Counters", 600.0)}
