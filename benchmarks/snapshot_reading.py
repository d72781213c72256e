"""Reading a large allocator snapshot: profkit's restricted reader against plain ``pickle``.

Budget (issue "Memory, explained"): a 100 MB snapshot read in under 5 s and under 1 GiB.
No GPU records one here, so the snapshot is built to the format of
``torch.cuda.memory._snapshot()`` as the tests' fixtures are: segments with blocks and
their frames, ``device_traces`` of alloc / free_requested / free_completed actions with
frames. As in PyTorch's own pickles (``py_symbolize`` makes one dict per distinct frame),
frame dicts are shared between stacks, so each stack costs a few bytes per frame in the
file. Each reader runs in a fresh process (wall, CPU, peak RSS via ``os.wait4``), taking
turns: plain ``pickle.load`` (the floor, no checks, no typed objects), profkit's reader
(``load_snapshot``) and the whole ``profkit memory SNAPSHOT --json``.

Run: ``python benchmarks/snapshot_reading.py [--mb 100] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import measure_alternating, mib  # noqa: E402

MB = 1 << 20
BLOCK = 2 * MB


def _frame_pool(rng: random.Random, n: int) -> list[dict]:
    user = [f"/home/u/project/model_{i}.py" for i in range(20)]
    lib = [f"/usr/lib/python3.11/site-packages/torch/nn/modules/mod_{i}.py" for i in range(60)]
    return [{"filename": rng.choice(user if i % 4 == 0 else lib), "line": rng.randrange(1, 900),
             "name": f"fn_{i % 300}"} for i in range(n)]


def _stacks(rng: random.Random, pool: list[dict], n: int) -> list[list[dict]]:
    return [[rng.choice(pool) for _ in range(rng.randrange(12, 32))] for _ in range(n)]


def build(target_bytes: int, seed: int = 0) -> dict:
    """A snapshot whose pickle is about ``target_bytes``: 1/8 in segments, the rest in traces."""
    rng = random.Random(seed)
    stacks = _stacks(rng, _frame_pool(rng, 4000), 3000)
    per_event = 100  # pickle bytes per trace event of these stacks (about)
    n_events = target_bytes // per_event
    n_blocks = n_events // 8
    segments, addr = [], 1 << 32
    for _ in range(max(1, n_blocks // 16)):
        blocks, seg_addr = [], addr
        for _ in range(16):
            size = rng.choice((512, 4096, 65536, BLOCK // 4, BLOCK // 2))
            state = rng.choice(("active_allocated", "active_allocated", "inactive"))
            blocks.append({"address": addr, "size": size,
                           "requested_size": size - rng.randrange(0, 512), "state": state,
                           "frames": list(rng.choice(stacks)) if state != "inactive" else []})
            addr += size
        total = addr - seg_addr
        active = sum(b["size"] for b in blocks if b["state"] != "inactive")
        segments.append({"device": 0, "address": seg_addr, "total_size": total,
                         "allocated_size": active, "active_size": active,
                         "requested_size": active, "stream": 0,
                         "segment_type": "large", "segment_pool_id": (0, 0),
                         "is_expandable": False, "frames": [], "blocks": blocks})
    events, live, t = [], [], 0
    actions = ("alloc", "free_requested", "free_completed")
    while len(events) < n_events:
        t += rng.randrange(1, 50)
        if live and rng.random() < 0.5:
            a, s, frames = live.pop(rng.randrange(len(live)))
            for action in actions[1:]:
                events.append({"action": action, "addr": a, "size": s, "stream": 0,
                               "time_us": t, "frames": frames})
        else:
            a, s = (1 << 33) + rng.randrange(1 << 28) * 512, rng.choice((512, 4096, 65536, BLOCK))
            frames = list(rng.choice(stacks))
            live.append((a, s, frames))
            events.append({"action": "alloc", "addr": a, "size": s, "stream": 0,
                           "time_us": t, "frames": frames})
    return {"segments": segments, "device_traces": [events],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""}, "external_annotations": []}


_PLAIN = ("import gc,pickle,sys\ngc.disable()\n"
          "with open(sys.argv[1],'rb') as fh: pickle.load(fh)\n")
_READER = ("import sys\n"
           "from profiler_kit.sources.allocator_snapshot import load_snapshot\n"
           "load_snapshot(sys.argv[1])\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=float, default=100, help="pickle size (default 100 MB)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.memory_snapshot.pickle"
        with open(path, "wb") as fh:
            pickle.dump(build(int(args.mb * MB)), fh, protocol=pickle.HIGHEST_PROTOCOL)
        size = path.stat().st_size
        snap = pickle.loads(path.read_bytes())
        print(f"snapshot: {size / MB:.1f} MiB, {len(snap['segments'])} segments, "
              f"{sum(len(s['blocks']) for s in snap['segments'])} blocks, "
              f"{len(snap['device_traces'][0])} trace events")
        del snap
        py = sys.executable
        commands = {"pickle.load": [py, "-c", _PLAIN, str(path)],
                    "profkit reader (load_snapshot)": [py, "-c", _READER, str(path)],
                    "profkit memory SNAPSHOT --json": [py, "-m", "profiler_kit", "memory",
                                                       str(path), "--json"]}
        for s in measure_alternating(commands, args.repeat):
            verdict = ""
            if s.label != "pickle.load":
                ok = s.wall_s < 5 and s.peak_rss_bytes < 1 << 30
                verdict = "  PASS" if ok else "  FAIL (budget: under 5 s and 1 GiB)"
            print(f"{s.label:32s} wall {s.wall_s:6.2f} s  cpu {s.cpu_s:6.2f} s  "
                  f"peak RSS {mib(s.peak_rss_bytes):>10s}{verdict}")


if __name__ == "__main__":
    main()
