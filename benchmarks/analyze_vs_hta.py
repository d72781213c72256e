"""Whole-process ``profkit analyze`` against Holistic Trace Analysis on the same real traces.

Each measurement is a fresh process (wall time, CPU time, peak RSS via ``os.wait4``):

* profkit: ``profkit analyze TRACE --json`` (output discarded);
* HTA: ``TraceAnalysis(trace_dir=...)`` then ``get_gpu_kernel_breakdown()``, run with
  the Python of a separate environment that has HolisticTraceAnalysis installed
  (see benchmarks/README.md; nothing is installed by this script).

The two take turns, and the speed-up is the median of the paired ratios, so a machine
whose speed drifts during the benchmark weighs on both alike. profkit's bytecode is
cached first, as an installed HTA's is.

Targets: profkit at least 6x faster, with at most half HTA's peak memory.

``--before REV`` also runs profkit as it was at the git revision REV (a worktree under
benchmarks/.cache), taking turns with today's and HTA, so a change is measured against
what it replaced in the same run: "no slower" is today's wall time over REV's, paired.

    python benchmarks/analyze_vs_hta.py [--repeat 5] [--hta-python PATH] [--before REV]
                                        [TRACE ...]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CACHE = HERE / ".cache"
DATA = ROOT / "tests" / "data"
DEFAULT_TRACES = [DATA / "a100_ddp_nccl_rank0.json.gz",
                  DATA / "mi300_resnet_act_checkpoint.json.gz"]
DEFAULT_HTA_PYTHON = CACHE / "hta-venv" / "bin" / "python"
SPEEDUP_TARGET = 6.0
MEMORY_TARGET = 0.5

sys.path.insert(0, str(HERE))
from measure import measure_alternating, mib, paired_ratio  # noqa: E402

HTA_CODE = """
import sys
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
kernel_type_df, kernel_df = analyzer.get_gpu_kernel_breakdown(visualize=False)
print(len(kernel_df))
"""

def profkit_command(python: str, trace: Path, root: Path | None = None) -> list[str]:
    """``profkit analyze TRACE --json``; from the source tree ``root`` when given.

    ``-P``: the working directory is not put first on ``sys.path``, so a run from the
    repository's root still imports ``root``'s profkit, not the checkout's.
    """
    run = [python, "-P", "-m", "profiler_kit", "analyze", str(trace), "--json"]
    return ["env", f"PYTHONPATH={root}", *run] if root is not None else run


def worktree(rev: str) -> Path:
    """A checkout of ``rev`` under benchmarks/.cache (made once, byte-compiled)."""
    commit = subprocess.run(["git", "rev-parse", "--short", rev], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout.strip()
    where = CACHE / f"profkit-{commit}"
    if not where.exists():
        subprocess.run(["git", "worktree", "add", "--detach", str(where), commit], cwd=ROOT,
                       check=True, capture_output=True)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(where / "profiler_kit")],
                       check=True)
    return where


def byte_compile_profkit(python: str) -> None:
    """Cache profkit's bytecode, as pip does for a regular install (and did for HTA's).

    An editable install under ``PYTHONDONTWRITEBYTECODE`` never caches it, and would
    then compile its modules in every run (about 40 ms here).
    """
    code = ("import compileall, pathlib, profiler_kit; "
            "compileall.compile_dir(pathlib.Path(profiler_kit.__file__).parent, quiet=1)")
    subprocess.run([python, "-c", code], check=True, cwd=ROOT)


def hta_dir(trace: Path) -> Path:
    """A folder holding only ``trace``: HTA analyzes every trace in its folder."""
    folder = CACHE / "hta-traces" / trace.name.split(".")[0]
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / trace.name
    if not target.exists():
        shutil.copyfile(trace, target)
    return folder


def ranks_dir(trace: Path, ranks: int) -> Path:
    """A folder with ``ranks`` copies of ``trace``, told apart by ``distributedInfo.rank``
    (a job's per-rank traces, as both tools read a folder of them)."""
    import gzip
    import json

    folder = CACHE / "hta-traces" / f"{trace.name.split('.')[0]}_x{ranks}"
    if not folder.exists():
        folder.mkdir(parents=True)
        with gzip.open(trace, "rt") as fh:
            doc = json.load(fh)
        for rank in range(ranks):
            doc["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": rank,
                                      "world_size": ranks}
            with gzip.open(folder / f"rank{rank}.pt.trace.json.gz", "wt") as fh:
                json.dump(doc, fh)
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--python", default=sys.executable, help="Python that runs profkit")
    parser.add_argument("--hta-python", type=Path, default=DEFAULT_HTA_PYTHON,
                        help="Python of the environment with HolisticTraceAnalysis")
    parser.add_argument("--ranks", type=int, default=0, metavar="N",
                        help="also measure a folder of N copies of each trace as N ranks")
    parser.add_argument("--before", metavar="REV",
                        help="also measure profkit at the git revision REV, taking turns")
    args = parser.parse_args(argv)
    before = worktree(args.before) if args.before else None
    if not args.hta_python.exists():
        print(f"{args.hta_python}: no HTA environment; see benchmarks/README.md", file=sys.stderr)
        return 2

    byte_compile_profkit(args.python)
    ok = True
    cases = [(t, hta_dir(t)) for t in args.traces]
    if args.ranks > 1:
        cases += [(d, d) for d in (ranks_dir(t, args.ranks) for t in args.traces)]
    for trace, folder in cases:
        size = sum(f.stat().st_size for f in folder.iterdir())
        print(f"\n{trace.name} ({size / 1e6:.1f} MB on disk), "
              f"median of {args.repeat} runs each, taking turns, each a fresh process")
        commands = {"profkit": profkit_command(args.python, trace),
                    "HTA": [str(args.hta_python), "-c", HTA_CODE, str(folder)]}
        if before is not None:
            commands[f"at {args.before}"] = profkit_command(args.python, trace, before)
        ours, theirs, *then = measure_alternating(commands, args.repeat)
        for s in (ours, theirs, *then):
            print(f"  {s.label:8s} wall {s.wall_s:7.2f} s  cpu {s.cpu_s:7.2f} s  "
                  f"peak RSS {mib(s.peak_rss_bytes):>10s}")
        speedup = paired_ratio(theirs, ours)
        cpu_speedup = paired_ratio(theirs, ours, "cpu_s")
        memory = ours.peak_rss_bytes / theirs.peak_rss_bytes
        passed = speedup >= SPEEDUP_TARGET and memory <= MEMORY_TARGET
        ok &= passed
        print(f"  profkit is {speedup:.1f}x faster (wall; {cpu_speedup:.1f}x in CPU time; "
              f"median of the paired ratios) with {memory:.2f}x HTA's peak memory "
              f"(targets >= {SPEEDUP_TARGET:.0f}x, <= {MEMORY_TARGET}x): "
              f"{'PASS' if passed else 'FAIL'}")
        if then:
            print(f"  today's profkit takes {paired_ratio(ours, then[0]):.2f}x the wall time "
                  f"and {paired_ratio(ours, then[0], 'cpu_s'):.2f}x the CPU time of profkit "
                  f"at {args.before} (median of the paired ratios; above 1: slower)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
