"""Load (and analyze) a ~1 GB trace: wall time and peak RSS against 12 s and 1 GB on 2 cores.

The trace is a real one tiled with time offsets: every copy of its events is shifted
past the previous copy's end, and correlation ids, external ids and flow ids are offset
so that every copy links its own kernels to its own launches. Events are written one
per line without indentation (denser than Kineto's indented output, so more events per
GB than a real trace of that size). The file is built once into ``benchmarks/.cache/``.

    python benchmarks/large_trace.py [--size-mb 1024] [--repeat 1] [--gzip]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
DEFAULT_SOURCE = ROOT / "tests" / "data" / "a100_ddp_nccl_rank0.json.gz"
TIME_LIMIT_S = 12.0
RSS_LIMIT_BYTES = 10**9

sys.path.insert(0, str(HERE))
from measure import measure, mib  # noqa: E402


def read_doc(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rb") as fh:
        return json.load(fh)


def _max_arg(events: list[dict[str, Any]], key: str) -> int:
    vals = [e["args"][key] for e in events if isinstance(e.get("args"), dict)
            and isinstance(e["args"].get(key), int)]
    return max(vals, default=0) + 1


def build(source: Path, out: Path, size_bytes: int) -> None:
    """Write ``out``: ``source``'s events tiled until the file reaches ``size_bytes``."""
    doc = read_doc(source)
    events = doc.pop("traceEvents")
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    start = min(e["ts"] for e in timed)
    end = max(e["ts"] + (e.get("dur") or 0) for e in timed)
    span = int(end - start) + 1000  # 1 ms gap between copies
    corr_step = max(_max_arg(events, "correlation"),
                    max((e.get("id", 0) for e in events if isinstance(e.get("id"), int)),
                        default=0) + 1)
    ext_step = _max_arg(events, "External id")
    per_tile = [e for e in events if e.get("ph") != "M"]
    header = {k: v for k, v in doc.items() if k not in ("traceName",)}
    tmp = out.with_suffix(".partial")
    written = 0
    with open(tmp, "wb") as fh:
        head = msgspec.json.encode(header)[:-1] + b', "traceEvents": [\n'
        fh.write(head)
        first = True
        tile = 0
        while written < size_bytes:
            batch = events if tile == 0 else [_shift(e, tile, span, corr_step, ext_step)
                                              for e in per_tile]
            chunk = b",\n".join(msgspec.json.encode(e) for e in batch)
            if not first:
                fh.write(b",\n")
            fh.write(chunk)
            first = False
            written += len(chunk) + 2
            tile += 1
        fh.write(b'\n], "traceName": ' + msgspec.json.encode(str(out)) + b"}\n")
    tmp.replace(out)
    print(f"built {out} ({out.stat().st_size / 1e9:.2f} GB, {tile} copies of {source.name})")


def _shift(e: dict[str, Any], k: int, span: int, corr_step: int, ext_step: int) -> dict[str, Any]:
    e = dict(e)
    if isinstance(e.get("ts"), (int, float)):
        e["ts"] = e["ts"] + k * span
    if e.get("ph") in ("s", "f", "t") and isinstance(e.get("id"), int):
        e["id"] = e["id"] + k * corr_step
    args = e.get("args")
    if isinstance(args, dict) and ("correlation" in args or "External id" in args):
        args = copy.copy(args)
        if isinstance(args.get("correlation"), int):
            args["correlation"] += k * corr_step
        if isinstance(args.get("External id"), int):
            args["External id"] += k * ext_step
        e["args"] = args
    return e


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--gzip", action="store_true", help="also measure a .json.gz copy")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)

    CACHE.mkdir(parents=True, exist_ok=True)
    trace = CACHE / f"large_{args.source.name.split('.')[0]}_{args.size_mb}MB.json"
    if not trace.exists():
        t0 = time.perf_counter()
        build(args.source, trace, args.size_mb * 2**20)
        print(f"  (built in {time.perf_counter() - t0:.0f} s)")
    paths = [trace]
    if args.gzip:
        gz = trace.with_suffix(".json.gz")
        if not gz.exists():
            with open(trace, "rb") as src, gzip.open(gz, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 16 << 20)
        paths.append(gz)

    # BLAS threads off, as in the CLI: a process with one thread may load in parts
    load_code = ("import os, sys; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); "
                 "from profiler_kit.trace.loader import load; "
                 "t = load(sys.argv[1]); print(len(t), len(t.names), t.skipped)")
    ok = True
    for path in paths:
        size = path.stat().st_size
        print(f"\n{path.name}: {size / 1e9:.2f} GB on disk")
        cases = [("load (EventTable)", [args.python, "-c", load_code, str(path)]),
                 ("profkit analyze --json",
                  [args.python, "-m", "profiler_kit", "analyze", str(path), "--json"])]
        for label, cmd in cases:
            s = measure(label, cmd, args.repeat)
            passed = s.wall_s < TIME_LIMIT_S and s.peak_rss_bytes < RSS_LIMIT_BYTES
            ok &= passed
            print(f"  {label:24s} wall {s.wall_s:6.1f} s  cpu {s.cpu_s:6.1f} s  "
                  f"peak RSS {mib(s.peak_rss_bytes):>10s}  "
                  f"(limits {TIME_LIMIT_S:.0f} s, {RSS_LIMIT_BYTES / 1e9:.0f} GB)  "
                  f"{'PASS' if passed else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
