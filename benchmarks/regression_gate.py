"""Does ``--fail-on-regression 5`` flake? Separate invocations of a small real workload,
in pairs: an A/A pair (the same command twice) must pass the gate, and a pair whose
second run does about twice the work must fail it.

Gates:

- ``compare``: ``profkit run tests/noise_scenario.py`` (three strategies that sleep
  ``--sleep-ms`` per step, one round), then ``profkit compare RUN_A RUN_B
  --fail-on-regression 5``, each strategy of B against the same strategy of A by its
  timed steps (run.json); the slow run sleeps twice as long per step. The gate is also
  run with the two runs the other way round, since which comes first is chance.
- ``diff``: ``profkit run ddp`` (resnet18 on small images, ``--repeats 3`` by default),
  then ``profkit diff RUN_A RUN_B --fail-on-regression 5``. ``diff`` pairs reports by
  model and batch size, so the slow run's lever is the image size (``--slow-image-size``,
  default 128 against 32: 16x the pixels, which at these sizes about doubles the step,
  whose optimizer and per-op overhead do not grow); the measured change is printed.

Pair i runs A_i, A'_i and S_i one after another and gates (A_i, A'_i) and (A_i, S_i).

    python benchmarks/regression_gate.py --gate compare --pairs 20
    python benchmarks/regression_gate.py --gate diff --pairs 20
    python benchmarks/regression_gate.py --gate diff --pairs 5 --test-repeats 1
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "tests" / "noise_scenario.py"


def profkit(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "profiler_kit", *args], capture_output=True,
                          text=True, cwd=ROOT, check=check,
                          env={**os.environ, "COLUMNS": "200"})


def run_once(args: argparse.Namespace, out: Path, slow: bool, repeats: int) -> Path:
    """One ``profkit run``; its run folder. A run that fails (not a gate's verdict) is
    said and tried again, twice at most."""
    for attempt in range(3):
        shutil.rmtree(out, ignore_errors=True)
        try:
            return _run_once(args, out, slow, repeats)
        except RuntimeError as exc:
            if attempt == 2:
                raise SystemExit(str(exc)) from None
            print(f"         run failed, again: {str(exc).splitlines()[0]}", flush=True)
    raise AssertionError("unreachable")


def _run_once(args: argparse.Namespace, out: Path, slow: bool, repeats: int) -> Path:
    if args.gate == "compare":
        sleep = args.sleep_ms * (2 if slow else 1)
        cmd = [str(SCENARIO), "--iterations", str(args.iterations), "--warmup", "2",
               "--repeats", str(repeats), "--sleep-ms", f"{sleep:g}"]
    else:
        size = args.slow_image_size if slow else args.image_size
        cmd = ["ddp", "--strategies", args.strategies, "--batch-size", str(args.batch_size),
               "--image-size", str(size), "--iterations", str(args.iterations),
               "--warmup", "2", "--repeats", str(repeats), "--profile-active", "1"]
    done = profkit("run", *cmd, "--out", str(out), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"profkit run {' '.join(cmd)} failed ({done.returncode}):\n"
                           f"{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    (run_dir,) = [p.parent for p in out.glob("*/*/run.json")]
    return run_dir


def gate(args: argparse.Namespace, a: Path, b: Path) -> tuple[int, str, str, bool]:
    """The gate's exit status, its stderr lines, the change it saw in words, and whether
    the gate would have failed with the runs the other way round (a change beyond PCT,
    and beyond noise for diff, in the faster direction)."""
    pct = str(args.pct)
    limit = args.pct / 100
    if args.gate == "compare":
        done = profkit("compare", str(a), str(b), "--fail-on-regression", pct, check=False)
        # the gate reads the timed steps of run.json: the change it saw, per strategy
        from profiler_kit.results import read_run

        before = {s.label: statistics.median(s.samples_ns)
                  for s in read_run(a).strategies if s.samples_ns}
        after = {s.label: statistics.median(s.samples_ns)
                 for s in read_run(b).strategies if s.samples_ns and s.label in before}
        seen = ", ".join(f"{label} {100 * (m / before[label] - 1):+.1f} %"
                         for label, m in after.items())
        # which run comes first is chance: the same gate with the runs the other way round
        reversed_fails = profkit("compare", str(b), str(a), "--fail-on-regression", pct,
                                 check=False).returncode == 1
    else:
        done = profkit("diff", str(a), str(b), "--fail-on-regression", pct, "--json", "-",
                       check=False)
        doc = json.loads(done.stdout)
        parts = []
        reversed_fails = False
        for bench in doc["benchmarks"]:
            for c in bench["configurations"]:
                reversed_fails |= any(
                    1 / (1 + p["change_fraction"]) - 1 > limit
                    and p["noise"]["beyond_noise"] is not False
                    and p["noise"]["method"] != "one run a side"
                    for p in c["percentiles"])
                p50 = c["percentiles"][0]
                n = p50["noise"]
                ci = ("" if n["ci_low_fraction"] is None else
                      f" [{100 * n['ci_low_fraction']:+.0f}, {100 * n['ci_high_fraction']:+.0f}]")
                parts.append(f"{c['configuration']} p50 {100 * p50['change_fraction']:+.1f} %"
                             f"{ci} {n['beyond_noise']}")
        seen = ", ".join(parts)
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    if done.returncode not in (0, 1):
        raise SystemExit(f"the gate failed to run ({done.returncode}): {done.stderr[-2000:]}")
    return done.returncode, "; ".join(lines), seen, reversed_fails


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gate", choices=("compare", "diff"), default="compare")
    ap.add_argument("--pairs", type=int, default=20, help="A/A pairs, and as many slow pairs")
    ap.add_argument("--pct", type=float, default=5, help="--fail-on-regression PCT")
    ap.add_argument("--iterations", type=int, default=None,
                    help="timed steps a round (default 20 for compare, 10 for diff)")
    ap.add_argument("--base-repeats", type=int, default=None,
                    help="rounds of the A runs (default 1 for compare, 3 for diff)")
    ap.add_argument("--test-repeats", type=int, default=None,
                    help="rounds of the A' and slow runs (default: --base-repeats)")
    ap.add_argument("--sleep-ms", type=float, default=4.0, help="compare: sleep per step")
    ap.add_argument("--strategies", default="no-ddp", help="diff: ddp configurations")
    ap.add_argument("--batch-size", type=int, default=2, help="diff: images per step")
    ap.add_argument("--image-size", type=int, default=32, help="diff: the A runs' images")
    ap.add_argument("--slow-image-size", type=int, default=128, help="diff: the slow runs'")
    args = ap.parse_args()
    if args.iterations is None:
        args.iterations = 20 if args.gate == "compare" else 10
    if args.base_repeats is None:
        args.base_repeats = 1 if args.gate == "compare" else 3
    if args.test_repeats is None:
        args.test_repeats = args.base_repeats
    print(f"gate {args.gate}, --fail-on-regression {args.pct:g}, {args.pairs} pairs, "
          f"repeats {args.base_repeats}/{args.test_repeats}, load {os.getloadavg()[0]:.1f}",
          flush=True)
    aa_passed = slow_failed = aa_reversed = 0
    started = time.monotonic()
    for i in range(1, args.pairs + 1):
        tmp = Path(tempfile.mkdtemp(prefix="regression_gate_"))
        try:
            a = run_once(args, tmp / "a", slow=False, repeats=args.base_repeats)
            a2 = run_once(args, tmp / "a2", slow=False, repeats=args.test_repeats)
            s = run_once(args, tmp / "s", slow=True, repeats=args.test_repeats)
            rc_aa, err_aa, seen_aa, rev_aa = gate(args, a, a2)
            rc_s, err_s, seen_s, _ = gate(args, a, s)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        aa_passed += rc_aa == 0
        aa_reversed += rev_aa and rc_aa == 0
        slow_failed += rc_s == 1
        print(f"pair {i:2d} (load {os.getloadavg()[0]:.1f}): A/A "
              f"{'pass' if rc_aa == 0 else 'FAIL'} ({seen_aa})"
              + (f" [{err_aa}]" if err_aa else "")
              + (" (would FAIL the other way round)" if rev_aa and rc_aa == 0 else "")
              + f"; slow {'fail' if rc_s == 1 else 'PASS'} ({seen_s})", flush=True)
        if rc_s == 0 and err_s:
            print(f"         slow pair's gate said: {err_s}", flush=True)
    minutes = (time.monotonic() - started) / 60
    print(f"A/A pairs passed: {aa_passed}/{args.pairs} (and {aa_reversed} of them would "
          f"have failed with the runs the other way round); slow pairs failed: "
          f"{slow_failed}/{args.pairs} ({minutes:.0f} min)", flush=True)
    return 0 if aa_passed == slow_failed == args.pairs else 1


if __name__ == "__main__":
    sys.exit(main())
