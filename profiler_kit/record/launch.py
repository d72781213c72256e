"""Run the user's command recorded, and collect what its processes report. Torch-free.

The command runs in its own process with profkit's options in the environment; every
Python process of the job that starts through the bootstrap writes what it saw into the
run folder's ``.record/`` (one JSON file per process). A capture is complete when every
recording process has written it; ``on_capture`` is then called (after the script was
stopped, or right away when it runs on); what is left is returned as ``pending``.
``record.json`` sums it all up.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profiler_kit.errors import UsageError
from profiler_kit.record import (
    ENV_CONFIG,
    ENV_DIR,
    ENV_HOME,
    RECORD_JSON,
    RECORD_SCHEMA,
    STATUS_DIR,
)
from profiler_kit.record.command_line import Target
from profiler_kit.util import artifacts, outputs

# how long a stopped script may take to end before its capture is analyzed anyway
STOP_GRACE_S = 20.0
_POLL_S = 0.2
_ENV_SHOWN = ("CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "WORLD_SIZE",
              "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PYTORCH_CUDA_ALLOC_CONF",
              "TORCH_COMPILE_DISABLE", "NCCL_DEBUG")


@dataclass
class Capture:
    """One capture of the job: every process's trace files for it, and its steps."""

    n: int
    kind: str  # "steps", "window", "own" (the script's own profiler)
    steps: list[int]
    complete: bool
    files: list[Path]
    reasons: list[str] = field(default_factory=list)
    seconds: float = 0.0  # a time window's length
    start_s: float = 0.0  # ... and its start, after the script's


@dataclass
class Recording:
    """What a recording left: the run folder, the script's exit status, the captures and
    what each process reported (``statuses``); ``record`` is record.json's content."""

    run_dir: Path
    target: Target
    exit_status: int
    statuses: list[dict[str, Any]]
    captures: list[Capture]
    record: dict[str, Any]
    lines: list[str]  # what to tell the user about the steps and the capture
    pending: list[Capture]  # captures not yet handed to ``on_capture``


def run_folder(target: Target, out: str | None, output: str | None) -> Path:
    """The run folder, made before anything runs: ``output`` exactly (new or empty), else a
    new timestamped folder below ``out/<script>``. Nothing of the user's is overwritten."""
    if output is not None:
        folder = Path(output)
        try:
            if folder.exists() and not folder.is_dir():
                raise UsageError(f"-o {output}: an existing file, not a folder; give a new or "
                                 "empty folder for the recording")
            if folder.is_dir():
                inside = [p.name for p in folder.iterdir()]
                if (folder / RECORD_JSON).exists():
                    raise UsageError(f"-o {output}: holds an earlier recording; give a new or "
                                     "empty folder (or --out DIR for a new folder each time)")
                if inside:
                    shown = ", ".join(sorted(inside)[:3]) + (", ..." if len(inside) > 3 else "")
                    raise UsageError(f"-o {output}: holds other files ({shown}); refusing to "
                                     "write into it: give a new or empty folder")
        except OSError as exc:
            raise UsageError(f"-o {output}: {outputs.problem(exc)}") from None
        outputs.check_folder(folder, "-o")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"-o {output}: {outputs.problem(exc)}") from None
        return folder
    out = out or "traces"
    outputs.check_folder(out, "--out")
    try:
        return artifacts.new_run_dir(out, target.name)
    except OSError as exc:
        raise UsageError(f"--out {out}: {outputs.problem(exc)}") from None


def home() -> str:
    """The folder that holds the profiler_kit package (for the bootstrap's import)."""
    return str(Path(__file__).resolve().parents[2])


def read_statuses(run_dir: Path) -> list[dict[str, Any]]:
    found = []
    folder = run_dir / STATUS_DIR
    if not folder.is_dir():
        return found
    for f in sorted(folder.glob("*.json")):
        try:
            found.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda s: (s.get("rank") is None, s.get("rank") or 0,
                                        s.get("pid") or 0))


def _recording(statuses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The processes that record steps (not a launcher that only started ranks)."""
    return [s for s in statuses if not s.get("spawner")]


def captures_of(run_dir: Path, statuses: list[dict[str, Any]], only_complete: bool
                ) -> list[Capture]:
    """The job's captures; with ``only_complete``, those every recording process wrote."""
    procs = _recording(statuses)
    by_n: dict[tuple[int, str], list[tuple[dict, dict]]] = {}
    for s in procs:
        for c in s.get("captures") or []:
            by_n.setdefault((c["n"], c["kind"]), []).append((s, c))
    out = []
    for (n, kind), items in sorted(by_n.items()):
        if only_complete and (len(items) < len(procs) or kind == "window"):
            continue
        files = [run_dir / f for _s, c in items for f in c.get("files", [])]
        steps = sorted({st for _s, c in items for st in c.get("steps", [])})
        out.append(Capture(n, kind, steps, all(c.get("complete") for _s, c in items),
                           files, [c["reason"] for _s, c in items if c.get("reason")],
                           max(c.get("window_s", 0.0) for _s, c in items),
                           min(c.get("window_from_s", 0.0) for _s, c in items)))
    return out


def record(target: Target, run_dir: Path, config: dict[str, Any],
           on_capture: Callable[[Capture], None] | None = None) -> Recording:
    """Run ``target`` recorded into ``run_dir``; see the module's docstring."""
    env = dict(os.environ)
    env[ENV_DIR] = str(run_dir.resolve())
    env[ENV_CONFIG] = json.dumps(config)
    env[ENV_HOME] = home()
    started = time.time()
    try:
        proc = subprocess.Popen(target.argv, env=env)
    except OSError as exc:
        try:
            run_dir.rmdir()  # made for this recording, still empty
        except OSError:
            pass
        raise UsageError(f"{target.argv[0]}: cannot run it: {outputs.problem(exc)}") from None
    done: set[tuple[int, str]] = set()
    complete_at: float | None = None
    stopping = not (config.get("keep_running") or config.get("on_signal"))

    def forward(signum: int, frame: Any) -> None:
        pids = {proc.pid}
        if signum == signal.SIGUSR2:  # every recording process (torchrun does not pass it on)
            pids |= {s["pid"] for s in _recording(read_statuses(run_dir)) if s.get("pid")}
        for pid in pids:
            try:
                os.kill(pid, signum)
            except OSError:
                pass

    previous = {}
    wanted = {signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: forward}
    if config.get("on_signal"):  # else SIGUSR2 would end the script: left as it is
        wanted[signal.SIGUSR2] = forward
    for sig, handler in wanted.items():
        try:
            previous[sig] = signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread: leave the signals alone
            pass
    try:
        while True:
            try:
                code = proc.wait(timeout=_POLL_S)
                break
            except subprocess.TimeoutExpired:
                pass
            if on_capture is None:
                continue
            new = [c for c in captures_of(run_dir, read_statuses(run_dir), True)
                   if (c.n, c.kind) not in done]
            if new and stopping and complete_at is None:
                complete_at = time.monotonic()
            if new and (not stopping or time.monotonic() - complete_at > STOP_GRACE_S):
                for c in new:
                    done.add((c.n, c.kind))
                    on_capture(c)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    ended = time.time()
    statuses = read_statuses(run_dir)
    _adopt_own_traces(run_dir, statuses)
    statuses = read_statuses(run_dir)
    captures = captures_of(run_dir, statuses, False)
    for c in captures:
        if c.kind == "steps" and not c.complete:
            for f in c.files:
                _drop_cut_step(f, set(c.steps))
    lines = _lines(statuses, captures, code, config, ended - started)
    rec = _record_json(target, run_dir, config, statuses, captures, code, started, ended, lines)
    artifacts.write_json_atomic(run_dir / RECORD_JSON, rec)
    pending = [c for c in captures if (c.n, c.kind) not in done and c.files]
    return Recording(run_dir, target, exit_status(code), statuses, captures, rec, lines,
                     pending)


def _drop_cut_step(path: Path, kept: set[int]) -> None:
    """A capture cut short (the script ended mid-step): the half step's ``ProfilerStep#``
    span is taken out of the trace, so that only whole steps count as steps."""
    import gzip

    if not path.name.endswith((".json", ".json.gz")) or not path.is_file():
        return
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        return

    def cut(e: Any) -> bool:
        name = e.get("name") if isinstance(e, dict) else None
        if not isinstance(name, str) or not name.startswith("ProfilerStep#"):
            return False
        number = name[len("ProfilerStep#"):]
        return not number.isdigit() or int(number) not in kept

    kept_events = [e for e in events if not cut(e)]
    if len(kept_events) == len(events):
        return
    doc["traceEvents"] = kept_events
    data = json.dumps(doc).encode()
    artifacts.write_bytes_atomic(path, gzip.compress(data, 3) if path.name.endswith(".gz")
                                 else data)


def listens(pid: int) -> bool | None:
    """Whether process ``pid`` is a recording started with --on-signal (profkit's process,
    or a recorded one), as far as /proc tells; None where it cannot tell."""
    proc = Path("/proc") / str(pid)
    try:
        words = (proc / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    if b"record" in words and b"--on-signal" in words:
        return True
    try:
        environ = (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return None
    prefix = f"{ENV_CONFIG}=".encode()
    for item in environ:
        if item.startswith(prefix):
            try:
                return bool(json.loads(item[len(prefix):]).get("on_signal"))
            except ValueError:
                return None
    return False


def exit_status(code: int) -> int:
    """The shell's view of a child's return code (killed by signal N: 128 + N)."""
    return 128 - code if code < 0 else code


def _adopt_own_traces(run_dir: Path, statuses: list[dict[str, Any]]) -> None:
    """The traces the script's own profiler wrote, linked (or copied) into the run folder."""
    for s in statuses:
        own = s.get("own_profiler") or {}
        files = []
        for path in own.get("exports") or []:
            src = Path(path)
            if not src.is_file():
                continue
            if run_dir.resolve() in src.resolve().parents:
                files.append(str(src.resolve().relative_to(run_dir.resolve())))
                continue
            dest = run_dir / src.name
            if dest.exists():
                dest = run_dir / f"{s.get('worker', 'main')}.{src.name}"
            try:
                os.link(src, dest)
            except OSError:
                try:
                    shutil.copy2(src, dest)
                except OSError:
                    continue
            files.append(dest.name)
        if files:
            s.setdefault("captures", []).append(
                {"n": 0, "kind": "own", "steps": [], "complete": True, "reason": "",
                 "files": files, "from": own.get("exports")})
            artifacts.write_json_atomic(run_dir / STATUS_DIR / f"{s['pid']}.json", s)


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else (v[mid - 1] + v[mid]) / 2


def overhead(status: dict[str, Any]) -> dict[str, Any] | None:
    """The profiler's cost from one process's own step times: the recorded steps against
    the same script's steps without the profiler (after the first two, which hold
    compilation and warm-up, and any after the capture)."""
    durations = status.get("durations") or []
    plain: list[int] = []
    for first in (2, 1):  # without the first steps where there are enough
        plain = [ns for step, ns, phase in durations if phase in ("wait", "done")
                 and step >= first]
        if plain:
            break
    profiled = [ns for _step, ns, phase in durations if phase == "active"]
    if not plain or not profiled:
        return None
    a, b = _median(plain), _median(profiled)
    return {"step_ms_without_profiler": round(a / 1e6, 3),
            "step_ms_profiled": round(b / 1e6, 3),
            "percent": round((b / a - 1) * 100, 1) if a else None,
            "steps": [len(plain), len(profiled)]}


def _lines(statuses: list[dict[str, Any]], captures: list[Capture], code: int,
           config: dict[str, Any], seconds: float) -> list[str]:
    """What happened, in a few lines for the console (and record.json)."""
    procs = _recording(statuses)
    lines: list[str] = []
    if not procs:
        lines.append("the command started no recorded Python process (did it run the script?)")
        return lines
    lead = procs[0]
    failed = _failed_early(procs, code)
    if all(s.get("torch") is None for s in procs):
        if failed:
            return [failed, "it never imported torch: nothing recorded"]
        lines.append(f"the script never imported torch: nothing to record "
                     f"(exit status {exit_status(code)})")
        return lines
    own = [c for c in captures if c.kind == "own"]
    if any((s.get("own_profiler") or {}).get("used") for s in procs):
        steps = max(((s.get("own_profiler") or {}).get("steps", 0) for s in procs), default=0)
        if own:
            n = sum(len(c.files) for c in own)
            used = "its trace is used" if n == 1 else f"its {n} traces are used"
            lines.append(f"the script ran its own torch.profiler ({steps} profiler steps): "
                         f"{used}")
        else:
            lines.append("the script ran its own torch.profiler but wrote no trace that "
                         "could be found")
        return lines
    lines.append(f"steps found: {lead.get('found_by')}")
    steps = [c for c in captures if c.kind == "steps"]
    windows = [c for c in captures if c.kind == "window"]
    if steps:
        for c in steps:
            got = len(c.steps)
            span = (f"step {c.steps[0]}" if got == 1 else
                    f"steps {c.steps[0]}-{c.steps[-1]}") if got else "no complete step"
            if c.complete:
                lines.append(f"recorded {span} ({got} step{'s' if got != 1 else ''})")
            else:
                how = ", ".join(sorted(set(c.reasons))) or "ended"
                lines.append(f"the script ended ({how}) before the capture was complete: "
                             f"kept {span} ({got} of {config.get('active')} steps)")
    elif windows:
        c = windows[0]
        lines[-1] = failed or f"the script never stepped: {_saw(lead)}"
        lines.append(f"recorded a {c.seconds:.1f} s time window instead, from "
                     f"{c.start_s:.1f} s after the script started")
    else:
        done = max(s.get("completed_steps", 0) for s in procs)
        if failed:  # first, then the steps found where one began
            lines = [failed, *(lines if lead.get("source") else []), "nothing recorded"]
        elif lead.get("source") is None:
            lines[-1] = (f"the script never stepped ({_saw(lead)}) and ended before the time "
                         f"window (--window-after {config.get('window_after'):g} s after "
                         "importing torch): nothing recorded")
        elif config.get("on_signal"):
            lines.append(f"no signal came during {done} steps: nothing recorded")
        else:
            lines.append(f"the script ended after {done} steps, before the capture began "
                         f"(--wait {config.get('wait')}, --warmup {config.get('warmup')}): "
                         "nothing recorded; lower --wait")
    return lines


def _failed_early(procs: list[dict[str, Any]], code: int) -> str | None:
    """The line for a script that failed (a status other than 0) before any of its steps
    ended, with the last line of its error; None for any other."""
    status = exit_status(code)
    if not status or any(s.get("completed_steps") for s in procs):
        return None
    began = any(s.get("source") for s in procs)  # a DataLoader batch came: a step began
    errors = [(s.get("exit") or {}).get("error") for s in procs]
    error = next((e for e in errors if e), None)
    return (f"the script exited with status {status} "
            f"{'in' if began else 'before'} its first step" + (f": {error}" if error else ""))


def _saw(status: dict[str, Any]) -> str:
    """What a process that never stepped did see, in words."""
    life = (status.get("exit") or {}).get("after_s")
    torch_s = status.get("torch_imported_s")
    span = (f" in {life - torch_s:.1f} s after importing torch"
            if life is not None and torch_s is not None else "")
    return f"no optimizer step, backward() call, DataLoader batch or profiler step{span}"


def _record_json(target: Target, run_dir: Path, config: dict[str, Any],
                 statuses: list[dict[str, Any]], captures: list[Capture], code: int,
                 started: float, ended: float, lines: list[str]) -> dict[str, Any]:
    from profiler_kit.version import __version__

    procs = _recording(statuses)
    lead = procs[0] if procs else {}
    exits = [(s.get("exit") or {}).get("how") for s in procs]
    stopped = bool(exits) and all(h == "stopped" for h in exits)
    costs = [o for o in (overhead(s) for s in procs) if o]
    cost = dict(costs[0]) if costs else None
    if cost is not None:
        cost["note"] = ("median step time of the recorded steps against the script's own steps "
                        "without the profiler (rank 0's); hooks outside the recorded steps "
                        "cost a counter per step")
    return {
        "schema": RECORD_SCHEMA,
        "profkit": __version__,
        "command": target.given,
        "ran": target.argv,
        "cwd": os.getcwd(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(ended - started, 3),
        "exit_status": exit_status(code),
        "stopped_by_profkit": stopped,
        "options": config,
        "environment": {
            "python": lead.get("python"), "torch": lead.get("torch"),
            "cuda": any(s.get("cuda") for s in procs), "host": platform.node(),
            "platform": platform.platform(), "cpus": os.cpu_count(),
            "world_size": lead.get("world_size"),
            "env": {k: os.environ[k] for k in _ENV_SHOWN if k in os.environ},
        },
        "steps": {
            "found_by": lead.get("found_by"), "source": lead.get("source"),
            "seen": lead.get("seen"), "optimizers": lead.get("optimizers"),
            "completed": lead.get("completed_steps"),
            "captured": [c.steps for c in captures if c.kind == "steps"],
            "complete": all(c.complete for c in captures) if captures else False,
        },
        "captures": [{"n": c.n, "kind": c.kind, "steps": c.steps, "complete": c.complete,
                      "files": [str(f.relative_to(run_dir)) for f in c.files]}
                     for c in captures],
        "processes": [{"rank": s.get("rank"), "pid": s.get("pid"), "worker": s.get("worker"),
                       "host": s.get("host"), "source": s.get("source"),
                       "found_by": s.get("found_by"), "seen": s.get("seen"),
                       "completed": s.get("completed_steps"),
                       "captured": [c.get("steps") for c in s.get("captures") or []],
                       "exit": s.get("exit"), "overhead": overhead(s), "notes": s.get("notes")}
                      for s in procs],
        "profiler_overhead": cost,
        "summary": lines,
    }
