"""Notes and recommendations carry their figures in dicts and are still hashable values: equal
ones hash alike, in any key order, and one read back from JSON (run.json keeps notes) hashes
as the one written, its tuples come back as lists."""

from __future__ import annotations

import msgspec
from real_traces import analysis

from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.recommendation import Recommendation


def test_equal_notes_hash_alike_and_survive_json():
    n = note("slow_transfer_no_link", why="unknown_gpu", gpus=("A100", "H100"))
    assert hash(n) == hash(Note("slow_transfer_no_link", {"gpus": ("A100", "H100"),
                                                         "why": "unknown_gpu"}))
    back = msgspec.json.decode(msgspec.json.encode(n), type=Note)
    assert back.figures["gpus"] == ["A100", "H100"] and hash(back) == hash(n)
    assert len({n, note("slow_transfer_no_link", why="no_gpu_name")}) == 2


def test_recommendations_of_a_real_trace_are_hashable():
    recs = analysis("h100_bert_small.json.gz").recommendations
    assert len(set(recs)) == len(recs) and all(isinstance(r, Recommendation) for r in recs)
    back = msgspec.json.decode(msgspec.json.encode(recs[0]), type=Recommendation)
    assert hash(back) == hash(recs[0])
