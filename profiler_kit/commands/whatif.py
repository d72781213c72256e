"""``profkit whatif TRACE|RUN [changes]``: replay a trace's dependency graph and predict the
step after a change, each change alone and all together. Never imports torch."""

from __future__ import annotations

import argparse
import os

from profiler_kit.commands import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="a trace, or a run or strategy folder (each trace in it is replayed)")
    p.add_argument("--kernels", action="append", default=[], metavar="CLASS=FACTOR",
                   help="GPU activities of a class (gemm, convolution, attention, "
                        "elementwise, communication, ...) or whose name matches a regular "
                        "expression run FACTOR times faster; repeatable")
    p.add_argument("--precision", choices=("bf16", "fp16"),
                   help="the fp32 GEMM and convolution kernels autocast would change run at "
                        "the device's bf16/fp16 matrix rate (bounded by memory bandwidth)")
    p.add_argument("--channels-last", action="store_true",
                   help="4-D inputs in channels_last (with --measure: each hot op timed so)")
    p.add_argument("--compile", action="store_true",
                   help="the trace's chains of elementwise ops fused by torch.compile (with "
                        "--measure: each of the hottest chains compiled and timed)")
    p.add_argument("--tf32", action="store_true",
                   help="float32 matmuls and convolutions allowed TF32 (with --measure: each "
                        "hot op timed so; NVIDIA GPUs only)")
    p.add_argument("--measure", action="store_true",
                   help="time each hot op of the trace on this machine from its recorded "
                        "shapes, as recorded and with the change (--precision, "
                        "--channels-last, --tf32), and replay the measured ratios instead of the "
                        "device's peak ratios (needs torch; a GPU trace needs a GPU)")
    p.add_argument("--repro", metavar="DIR",
                   help="write one standalone script per hot op into DIR (a new or empty "
                        "folder): its recorded inputs rebuilt, timed as recorded and with the "
                        "change (--precision, --channels-last, --tf32), for a bug report; "
                        "needs torch")
    p.add_argument("--cuda-graphs", nargs="?", const="", default=None, metavar="REGION",
                   help="the host's op and launch overhead collapses to one graph launch per "
                        "step, or per instance of REGION (a record_function or module name)")
    p.add_argument("--fusion", action="store_true",
                   help="each run of elementwise and normalization kernels back to back on a "
                        "stream fuses into one kernel, as torch.compile fuses them")
    p.add_argument("--no-dataloader-wait", action="store_true",
                   help="the host's time in DataLoader __next__ is removed")
    p.add_argument("--no-sync", action="store_true",
                   help="blocking synchronizations inside the steps no longer wait")
    p.add_argument("--overlap-comm", action="store_true",
                   help="communication kernels run beside compute, off its stream")
    p.add_argument("--no-straggler", action="store_true",
                   help="no rank waits for another in a collective (the traces of two or "
                        "more ranks of one job, matched by their collectives)")
    p.add_argument("--json", metavar="FILE",
                   help="write the result as JSON (schema profkit.whatif/1) to FILE, or to "
                        "stdout with -")
    p.add_argument("--force", action="store_true",
                   help="replace a JSON file profkit wrote earlier")


def changes_of(args: argparse.Namespace) -> list:
    """The changes the arguments ask for, in the order the options are listed."""
    import re

    from profiler_kit.analysis.core.classify import CLASSES
    from profiler_kit.analysis.whatif import changes as c
    from profiler_kit.errors import UsageError

    out: list = []
    for spec in args.kernels:
        pattern, sep, factor = spec.rpartition("=")
        try:
            value = float(factor)
        except ValueError:
            value = -1.0
        if not sep or not pattern or not value > 0:
            raise UsageError(f"--kernels {spec}: expected CLASS=FACTOR or REGEX=FACTOR with "
                             f"FACTOR > 0 (classes: {', '.join(CLASSES)})")
        if pattern not in CLASSES:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"--kernels {spec}: not a class nor a regular expression "
                                 f"({exc})") from None
        out.append(c.Kernels(pattern, value))
    for flag, on in (("--channels-last", args.channels_last), ("--tf32", args.tf32),
                     ("--compile", args.compile)):
        if on and not (args.measure or args.repro):
            raise UsageError(f"{flag} is measured, not modeled: add --measure")
    if args.precision and not args.measure:
        out.append(c.Precision(args.precision))
    if args.cuda_graphs is not None:
        if args.cuda_graphs:
            try:
                re.compile(args.cuda_graphs)
            except re.error as exc:
                raise UsageError(f"--cuda-graphs {args.cuda_graphs}: not a name nor a "
                                 f"regular expression ({exc})") from None
        out.append(c.CudaGraphs(args.cuda_graphs or None))
    if args.fusion:
        out.append(c.Fusion())
    if args.no_dataloader_wait:
        out.append(c.NoDataloaderWait())
    if args.no_sync:
        out.append(c.NoSync())
    if args.overlap_comm:
        out.append(c.OverlapComm())
    return out


def whatif(args: argparse.Namespace) -> int:
    from profiler_kit.trace.load_ahead import loading_ahead
    from profiler_kit.util import outputs

    changes = changes_of(args)
    target = outputs.check(args.json, "--json", inputs=args.paths, force=args.force)
    with loading_ahead(args.paths, None) as ahead:  # one trace: loads while the replay
        return _whatif(args, changes, target, ahead)  # imports


def _whatif(args: argparse.Namespace, changes: list, target: object, ahead: object) -> int:
    import shutil

    from profiler_kit import api
    from profiler_kit.render.console.whatif import report_lines
    from profiler_kit.render.json.whatif import document
    from profiler_kit.util import outputs

    tables = _tables(args, ahead) if args.repro or args.measure else []  # once for both
    if args.repro:
        _repros(args, tables)
    if args.measure:
        changes = _measured(args, tables) + changes
    results = api.whatif(args.paths, changes, no_straggler=args.no_straggler, ahead=ahead)
    if args.json is not None:
        outputs.write(target, document(results))
    if args.json is None or target is not None:
        print("\n".join(report_lines(results, shutil.get_terminal_size((0, 0)).columns)))
        timed = _alternatives(args, "--measure") if args.measure else []
        if len(timed) > 1:
            print(f"note: 'all together' adds the effects of {' and '.join(timed)} as each "
                  f"was timed alone; they were not timed together")
    return 0


def _alternatives(args: argparse.Namespace, option: str) -> list[str]:
    from profiler_kit.errors import UsageError

    wanted = ([args.precision] if args.precision else []) + \
        (["channels_last"] if args.channels_last else []) + (["tf32"] if args.tf32 else []) \
        + (["compile"] if args.compile and option == "--measure" else [])
    if not wanted:
        raise UsageError(f"{option} times a change: add --precision, --channels-last, "
                         f"--tf32" + (" or --compile" if option == "--measure" else ""))
    return wanted


def _tables(args: argparse.Namespace, ahead: object) -> list:
    from profiler_kit import api
    from profiler_kit.trace.loader import load

    return [load(f, ahead=ahead) for f in api.trace_files(args.paths)]  # type: ignore[arg-type]


def _measured(args: argparse.Namespace, tables: list) -> list:
    """The measured changes --measure asks for, timed over every trace's hot ops."""
    from profiler_kit.errors import UsageError
    from profiler_kit.sources.measured_ops import NEEDS_TORCH, measure_tables, torch_available

    wanted = _alternatives(args, "--measure")
    if not torch_available():
        raise UsageError(NEEDS_TORCH)
    return [measure_tables(tables, alternative) for alternative in wanted]


def _repros(args: argparse.Namespace, tables: list) -> None:
    from profiler_kit.sources.measured_ops import write_repros

    (alternative, *others) = _alternatives(args, "--repro")
    paths = write_repros(tables, alternative, args.repro)
    also = f"; with {alternative} only, not {', '.join(others)}" if others else ""
    print(f"repro scripts ({len(paths)}, one per hot op that can be rebuilt{also}; python FILE "
          f"runs one): {args.repro}")


def region_before_an_input(argv: list[str]) -> list[str]:
    """``--cuda-graphs PATH``: an existing trace or folder after ``--cuda-graphs`` is an
    input, not a region (argparse would take it as REGION)."""
    out = list(argv)
    for i, a in enumerate(out[:-1]):
        if a == "--cuda-graphs" and os.path.exists(out[i + 1]):
            out[i] = "--cuda-graphs="
    return out


COMMAND = Command("whatif", "replay a trace's dependency graph and predict the step after a "
                  "change: faster kernels, bf16/fp16, CUDA graphs, no DataLoader wait, no "
                  "syncs, overlapped communication, no straggler", add_arguments, whatif,
                  data_only=True, prepare_argv=region_before_an_input)
