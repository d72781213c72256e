"""The allocator snapshot reader, torch-free.

No GPU is here and torch cannot record CUDA allocator history without CUDA, so the
snapshots are small fixtures written by hand to the format of
``torch.cuda.memory._snapshot()`` (segments with blocks, device_traces with actions);
nothing in them claims to be a recorded snapshot.
"""

from __future__ import annotations

import pickle

import pytest

from profiler_kit.analysis.memory.snapshot import fragmentation, live_sites, oom_events
from profiler_kit.errors import TraceError
from profiler_kit.sources.allocator_snapshot import load_snapshot

MB = 1 << 20
USER = {"filename": "/home/u/train.py", "line": 42, "name": "forward"}
LIB = {"filename": "/x/site-packages/torch/nn/modules/linear.py", "line": 125, "name": "forward"}
USER2 = {"filename": "/home/u/train.py", "line": 77, "name": "step"}


def _block(addr, size, state, frames=(), requested=None):
    return {"address": addr, "size": size, "requested_size": requested or size,
            "state": state, "frames": list(frames)}


def _fixture(frames=True):
    f1 = [LIB, USER] if frames else []
    f2 = [USER2] if frames else []
    seg0 = {"device": 0, "address": 0, "total_size": 20 * MB, "allocated_size": 12 * MB,
            "active_size": 12 * MB, "stream": 0, "segment_type": "large",
            "blocks": [_block(0, 8 * MB, "active_allocated", f1, 8 * MB - 100),
                       _block(8 * MB, 2 * MB, "inactive"),
                       _block(10 * MB, 4 * MB, "active_allocated", f2),
                       _block(14 * MB, 6 * MB, "inactive")]}
    seg1 = {"device": 0, "address": 1 << 30, "total_size": 10 * MB, "allocated_size": 0,
            "active_size": 0, "stream": 0, "segment_type": "large",
            "blocks": [_block(1 << 30, 10 * MB, "inactive")]}
    traces = [[{"action": "alloc", "addr": 0, "size": 8 * MB, "stream": 0, "frames": f1,
                "time_us": 1},
               {"action": "oom", "addr": 0, "size": 30 * MB, "stream": 0, "frames": f2,
                "device_free": 5 * MB, "time_us": 2}]]
    return {"segments": [seg0, seg1], "device_traces": traces}


def _write(tmp_path, obj, name="snap.pickle"):
    path = tmp_path / name
    path.write_bytes(pickle.dumps(obj))
    return path


def test_fragmentation_matches_hand_computation(tmp_path):
    snap = load_snapshot(_write(tmp_path, _fixture()))
    (frag,) = fragmentation(snap)
    # by hand: reserved 20+10 MB, active blocks 8+4 MB, free 18 MB in blocks of 2, 6, 10 MB;
    # the largest live block is 8 MB, so the 2 and 6 MB blocks cannot serve it again.
    assert frag.reserved_bytes == 30 * MB
    assert frag.allocated_bytes == 12 * MB
    assert frag.requested_bytes == 12 * MB - 100
    assert frag.free_bytes == 18 * MB
    assert frag.largest_free_bytes == 10 * MB
    assert frag.unusable_share == pytest.approx(8 / 18)
    assert [s.largest_free_bytes for s in snap.segments] == [6 * MB, 10 * MB]


def test_sites_fold_library_frames_and_oom(tmp_path):
    snap = load_snapshot(_write(tmp_path, _fixture()))
    sites = live_sites(snap)
    assert [(s.frame.line, s.bytes) for s in sites] == [(42, 8 * MB), (77, 4 * MB)]
    (oom,) = oom_events(snap)
    assert (oom.requested_bytes, oom.device_free_bytes, oom.largest_free_bytes) == (
        30 * MB, 5 * MB, 10 * MB)
    assert oom.frame.line == 77


def test_without_stacks_sites_are_unnamed(tmp_path):
    snap = load_snapshot(_write(tmp_path, _fixture(frames=False)))
    assert not snap.has_frames
    assert [(s.frame, s.bytes) for s in live_sites(snap)] == [(None, 12 * MB)]


class _Evil:
    def __reduce__(self):
        return (print, ("executed",))


@pytest.mark.parametrize("payload, words", [
    (pickle.dumps(_fixture())[:50], "not an allocator snapshot pickle"),
    (pickle.dumps(_Evil()), "refuses to load"),
    (pickle.dumps({"a": 1}), "no 'segments' list"),
    (b"{\"segments\": []}", "not an allocator snapshot pickle"),
])
def test_bad_input_is_one_line(tmp_path, payload, words, capsys):
    path = tmp_path / "bad.pickle"
    path.write_bytes(payload)
    with pytest.raises(TraceError) as info:
        load_snapshot(path)
    assert words in str(info.value) and "\n" not in str(info.value)
    assert "executed" not in capsys.readouterr().out


def test_trace_stacks_shared_as_in_pytorch_and_malformed_events(tmp_path):
    """PyTorch shares one dict per distinct frame between stacks; the events keep them and
    name the same frames. A trace event of the wrong type is one line; a frame list that is
    not frames leaves that event unnamed instead of failing the whole file."""
    data = _fixture()
    shared = data["device_traces"][0][1]["frames"][0]
    data["device_traces"][0].append({"action": "oom", "addr": 0, "size": MB, "stream": 0,
                                     "frames": [shared], "time_us": 3})
    data["device_traces"][0].append({"action": "alloc", "addr": 0, "size": MB,
                                     "frames": ["not a frame"]})
    snap = load_snapshot(_write(tmp_path, data))
    events = snap.traces[0]
    assert [e.frames[0].line for e in events[1:3]] == [77, 77]
    assert events[3].frames == ()
    assert [(o.requested_bytes, o.frame.line) for o in oom_events(snap)] == [(30 * MB, 77),
                                                                              (MB, 77)]
    data["device_traces"][0].append({"action": "alloc", "addr": "0x10", "size": MB})
    with pytest.raises(TraceError, match="malformed allocator snapshot") as info:
        load_snapshot(_write(tmp_path, data, "typed.pickle"))
    assert "\n" not in str(info.value)


def test_history_peak_replays_allocs_and_completed_frees(tmp_path):
    from profiler_kit.analysis.memory.snapshot import history_peaks

    data = _fixture()
    # 12 MB live at the dump. History: +8 (alloc), +6, free_requested 6 (still held),
    # free_completed 6, +2: net +10, so 2 MB were live before it; levels 2+8, 2+14, 2+8,
    # 2+10: the peak is 16 MB.
    data["device_traces"] = [[
        {"action": "alloc", "addr": 0, "size": 8 * MB},
        {"action": "alloc", "addr": 1, "size": 6 * MB},
        {"action": "free_requested", "addr": 1, "size": 6 * MB},
        {"action": "segment_alloc", "addr": 2, "size": 20 * MB},
        {"action": "free_completed", "addr": 1, "size": 6 * MB},
        {"action": "alloc", "addr": 3, "size": 2 * MB}]]
    (peak,) = history_peaks(load_snapshot(_write(tmp_path, data)))
    assert (peak.device, peak.peak_allocated_bytes, peak.actions) == (0, 16 * MB, 4)
