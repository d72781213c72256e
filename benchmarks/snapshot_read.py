"""Reading a large CUDA allocator snapshot: time and peak memory, against plain pickle.

Builds a snapshot of about ``--mb`` MB in the format of ``torch.cuda.memory._snapshot()``
(segments with blocks, each live block with its Python frames; device_traces of
alloc/free actions with frames), as a long training job with stacks writes it: no GPU
is needed to write it, and profkit's reader never imports torch. Each reading runs in a
fresh process, which reports its wall time and its peak resident memory (VmHWM):

- the anchor: ``pickle.load`` of the same file, which the restricted reader cannot beat;
- profkit: ``load_snapshot`` then fragmentation, live bytes by line and OOM events.

Run: ``python benchmarks/snapshot_read.py [--mb 100] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import subprocess
import sys
import tempfile
from pathlib import Path

MB = 1 << 20
FILES = ["/home/u/project/train.py", "/home/u/project/model.py",
         "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py",
         "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py",
         "/usr/lib/python3.11/site-packages/torch/nn/functional.py"]


def _frames(rng: random.Random, depth: int) -> list[dict]:
    return [{"filename": rng.choice(FILES), "line": rng.randrange(1, 2000),
             "name": rng.choice(["forward", "_call_impl", "step", "backward", "linear"])}
            for _ in range(depth)]


def build(target_bytes: int, seed: int = 0) -> dict:
    """A snapshot of about ``target_bytes`` pickled: half segments, half trace actions."""
    rng = random.Random(seed)
    segments, actions = [], []
    size, addr = 0, 0
    while size < target_bytes:
        blocks, seg_addr = [], addr
        for _ in range(32):
            state = rng.choice(["active_allocated", "active_allocated", "inactive"])
            block_size = rng.choice([512, 4096, 1 * MB, 2 * MB, 20 * MB])
            frames = _frames(rng, 20) if state == "active_allocated" else []
            blocks.append({"address": addr, "size": block_size,
                           "requested_size": block_size - rng.randrange(0, 512),
                           "state": state, "frames": frames})
            actions.append({"action": "alloc", "addr": addr, "size": block_size, "stream": 0,
                            "time_us": len(actions), "frames": _frames(rng, 20)})
            if state == "inactive":
                actions.append({"action": "free_completed", "addr": addr, "size": block_size,
                                "stream": 0, "time_us": len(actions), "frames": []})
            addr += block_size
        total = addr - seg_addr
        allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
        segments.append({"device": 0, "address": seg_addr, "total_size": total,
                         "allocated_size": allocated, "active_size": allocated, "stream": 0,
                         "segment_type": "large", "blocks": blocks})
        size += 32 * 2 * 20 * 16  # ~16 pickled bytes a frame (names memoized), 2 stacks a block
    actions.append({"action": "oom", "addr": 0, "size": 40 * MB, "stream": 0,
                    "device_free": 10 * MB, "time_us": len(actions), "frames": _frames(rng, 20)})
    return {"segments": segments, "device_traces": [actions]}


READ = {
    "pickle.load": "import pickle; pickle.load(open(PATH, 'rb'))",
    "profkit": ("from profiler_kit.analysis import allocator_snapshot as s; "
                "snap = s.load_snapshot(PATH); s.fragmentation(snap); s.live_sites(snap); "
                "s.oom_events(snap); import sys; assert 'torch' not in sys.modules"),
}
MEASURED = """
import time, json
PATH = {path!r}
t = time.perf_counter()
{read}
wall = time.perf_counter() - t
hwm = next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))
print(json.dumps({{"wall_s": wall, "peak_rss_mb": hwm / 1024}}))
"""


def measure(path: Path, read: str) -> dict:
    code = MEASURED.format(path=str(path), read=read)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snapshot.pickle"
        path.write_bytes(pickle.dumps(build(args.mb * MB)))
        snapshot_mb = path.stat().st_size / MB
        print(f"snapshot: {snapshot_mb:.0f} MB")
        for name, read in READ.items():
            runs = [measure(path, read) for _ in range(args.rounds)]
            best = min(runs, key=lambda r: r["wall_s"])
            print(f"{name:12s} best of {args.rounds}: {best['wall_s']:.2f} s, "
                  f"peak RSS {max(r['peak_rss_mb'] for r in runs):.0f} MB")


if __name__ == "__main__":
    main()
