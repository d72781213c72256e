"""Inside a recorded process: find the script's steps, drive the profiler, write the traces.

:func:`start` is called by :mod:`.bootstrap` before the script runs; it imports nothing
heavy. The hooks go in once the script imports torch (a finder on ``sys.meta_path`` watches
for it), so a script that sets ``OMP_NUM_THREADS`` before its ``import torch`` still gets
its way. Steps are, in this order: the script's own ``torch.profiler`` (its traces are
used, never clashed with); optimizer steps (several optimizers per iteration, as in a GAN,
make one step: the step ends with the optimizer that steps least often; what an optimizer
step calls is part of it, as the ``backward()`` calls of L-BFGS's closure); ``backward()``
calls where no optimizer steps; DataLoader batches; otherwise a time window.

Outside the recorded steps a hook costs a few attribute reads and a counter: the profiler
is created only when the capture begins.
"""

from __future__ import annotations

import _thread
import importlib.abc
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from profiler_kit.measure import gpu_counters
from profiler_kit.record import ENV_CONFIG, ENV_DIR, STATUS_DIR

# order of the step sources: a source found later replaces an earlier one of lower rank
PRIORITY = {"dataloader": 1, "backward": 2, "optimizer": 3, "profiler": 4}
# the internal signal that brings the time window's start and end to the main thread
# (``_thread.interrupt_main``: no signal is sent; the handler runs between bytecodes)
_TIMER_SIGNAL = getattr(signal, "SIGRTMAX", signal.SIGUSR2) - (
    5 if hasattr(signal, "SIGRTMAX") else 0)
_MAX_DURATIONS = 4096
_MAX_ERROR = 300  # characters of the script's error kept
_RECORDER: Recorder | None = None


def _now_ns() -> int:
    return time.perf_counter_ns()


class Recorder:
    """The state of one recorded process (see the module's docstring)."""

    def __init__(self, config: dict[str, Any], run_dir: str, target: str,
                 spawn_index: int | None = None) -> None:
        self.cfg = config
        self.run_dir = run_dir
        self.target = target
        self.pid = os.getpid()
        self.enabled = True
        self.spawn_index = spawn_index
        self.spawner = False  # started ranks with torch.multiprocessing: they record
        self.t0 = time.time()
        self.t0_ns = _now_ns()
        self.torch_s: float | None = None
        self.torch = None
        # what was seen
        self.seen = {"profiler": 0, "optimizer": 0, "backward": 0, "dataloader": 0}
        self.opt_counts: dict[int, int] = {}
        self.opt_order: list[int] = []
        self.opt_names: dict[int, str] = {}
        self.closer: int | None = None
        self.backward_depth = 0
        # optimizer steps under way on each thread: what they call is part of them (per
        # thread: another thread's step, running meanwhile, is no part of this one's)
        self._depth = threading.local()
        # the steps
        self.source: str | None = None
        self.base = 0  # completed steps when the source last changed
        self.since = 0  # events of the source since then
        self.completed = 0  # steps completed so far (the next step is ProfilerStep#completed)
        self.frozen = False
        self.last_ns: int | None = None
        self.durations: list[tuple[int, int, str]] = []  # (step, ns, phase)
        # the capture
        self.phase = "wait"  # wait, warmup, active, done, window, yielded, stopping
        self.armed = not config.get("on_signal", False)
        self.start_at = int(config.get("wait", 5))
        self.active_at = self.end_at = 0
        self.kp: Any = None
        self.mark: Any = None  # the open ProfilerStep# record_function
        self.kept: list[Any] = []  # marks never closed (a cut step), kept past the export
        self.captures: list[dict[str, Any]] = []
        self.capture_no = 0
        self.window_file: str | None = None
        self.window_started: float | None = None
        self.pending: str | None = None
        self.busy = False
        self.counters_refused = False  # --counters where they cannot be: said once
        self.notes: list[str] = []
        self.own: dict[str, Any] = {"used": False, "exports": [], "steps": 0, "started": 0}
        self.own_profilers: list[Any] = []
        self.exit: dict[str, Any] | None = None
        self.worker: str | None = None

    # ---- who we are ------------------------------------------------------------------
    def rank(self) -> int | None:
        torch = self.torch
        try:
            if torch is not None and torch.distributed.is_available() \
                    and torch.distributed.is_initialized():
                return int(torch.distributed.get_rank())
        except Exception:  # noqa: BLE001 - a broken process group is not ours to report
            pass
        if os.environ.get("RANK", "").isdigit():
            return int(os.environ["RANK"])
        return self.spawn_index

    def world_size(self) -> int | None:
        torch = self.torch
        try:
            if torch is not None and torch.distributed.is_available() \
                    and torch.distributed.is_initialized():
                return int(torch.distributed.get_world_size())
        except Exception:  # noqa: BLE001
            pass
        if os.environ.get("WORLD_SIZE", "").isdigit():
            return int(os.environ["WORLD_SIZE"])
        return None

    def worker_name(self) -> str:
        r = self.rank()
        return "main" if r is None else f"rank{r}"

    def speaks(self) -> bool:
        """Whether this process prints profkit's lines (one process per job does)."""
        r = self.rank()
        return r in (None, 0) and not self.spawner

    def say(self, line: str) -> None:
        if self.speaks():
            sys.stderr.write(f"profkit: {line}\n")
            sys.stderr.flush()

    # ---- the step sources --------------------------------------------------------------
    def _use(self, source: str) -> bool:
        """Whether ``source`` marks the steps now (switching to it when it ranks higher)."""
        if self.source == source:
            return True
        if self.frozen or self.phase in ("yielded", "done", "stopping"):
            return False
        if self.source is not None and PRIORITY[source] < PRIORITY[self.source]:
            return False
        if self.source is not None:
            # steps counted another way (a backward() before the first optimizer step):
            # the count starts again, so that step N is the script's iteration N
            if self.phase == "warmup":
                self._end(cut=True)
                self.capture_no -= 1
                self.phase = "wait"
            self.completed = 0
            self.last_ns = None
            self.durations.clear()
            if self.cfg.get("on_signal") and self.armed:
                self.start_at = 1
        self.source = source
        self.base = self.completed
        self.since = 0
        if source == "optimizer":
            self.opt_counts = {}
        return True

    @property
    def step_depth(self) -> int:
        return getattr(self._depth, "n", 0)

    @step_depth.setter
    def step_depth(self, value: int) -> None:
        self._depth.n = value

    def on_optimizer_step(self, opt: Any) -> None:
        self.seen["optimizer"] += 1
        if self.step_depth:  # inside another optimizer's step (a wrapper's, a closure's)
            return
        key = id(opt)
        if key not in self.opt_names:
            self.opt_order.append(key)
            self.opt_names[key] = type(opt).__name__
        if self.source != "optimizer" and not self._use("optimizer"):
            return
        counts = self.opt_counts
        count = counts[key] = counts.get(key, 0) + 1
        if not self.frozen:
            order = self.opt_order
            if len(order) == 1:
                self.closer = key
            else:  # the one that steps least often; of equals, the one first seen last
                self.closer = min(reversed(order), key=lambda k: counts.get(k, 0))
        if key == self.closer:
            self._boundary(self.base + count)

    def on_backward(self) -> None:
        self.seen["backward"] += 1
        if self.step_depth:  # a closure's, called by the optimizer's step (L-BFGS)
            return
        if self._use("backward"):
            self.since += 1
            self._boundary(self.base + self.since)

    def on_batch(self) -> None:
        """Before a batch is fetched (the batches counted are those that came)."""
        if self.step_depth:  # fetched by a closure, inside an optimizer step
            return
        if self._use("dataloader"):
            self.since += 1
            if self.since == 1:  # the first batch starts the first step
                self.last_ns = _now_ns()
                if self.phase == "window":
                    self._drop_window()
                return
            self._boundary(self.base + self.since - 1)

    # ---- the schedule --------------------------------------------------------------------
    def _boundary(self, completed: int) -> None:
        """Step ``completed - 1`` ended, step ``completed`` begins (when it is new)."""
        last = self.last_ns
        if completed <= self.completed and last is not None:
            return
        now = _now_ns()
        if last is not None and len(self.durations) < _MAX_DURATIONS:
            self.durations.append((self.completed, now - last, self.phase))
        self.last_ns = now
        self.completed = completed
        phase = self.phase
        if phase == "wait" and not (self.armed and completed >= self.start_at):
            if self.pending:
                self._run_pending()
            return  # the common case, outside the capture: nothing more to do
        if phase in ("window", "window-done"):
            self._drop_window()
            phase = self.phase
        self.busy = True
        try:
            if phase == "wait":
                if self.armed and completed >= self.start_at:
                    self._begin()
            elif phase == "warmup":
                if completed >= self.active_at:
                    self._go_active()
            elif phase == "active":
                self._close_mark()
                if completed >= self.end_at:
                    self._end(cut=False)
                else:
                    self._open_mark()
            elif phase == "stopping":  # the script went on after SystemExit: stop it now
                self._hard_stop()
        finally:
            self.busy = False
        if self.pending:
            self._run_pending()

    def _profiler(self) -> Any:
        torch = self.torch
        from torch.profiler import ProfilerActivity
        from torch.profiler.profiler import _KinetoProfile

        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_initialized():  # the script uses CUDA: no probe otherwise
            activities.append(ProfilerActivity.CUDA)
        else:
            os.environ.setdefault("KINETO_LOG_LEVEL", "6")
        memory = bool(self.cfg.get("memory"))
        kp = _KinetoProfile(activities=activities,
                            record_shapes=bool(self.cfg.get("shapes")) or memory,
                            profile_memory=memory,
                            with_stack=bool(self.cfg.get("stack")) or memory,
                            **self._counters(torch.cuda.is_initialized()))
        kp._profkit_own = True
        return kp

    def _counters(self, cuda: bool) -> dict[str, Any]:
        """The profiler's config that samples the GPU counters (``--counters``), said in
        one line (once) where they cannot be sampled."""
        if not self.cfg.get("counters"):
            return {}
        why = gpu_counters.why_not(cuda)
        if why is None:
            return gpu_counters.experimental_config(True, False)
        if not self.counters_refused:
            self.counters_refused = True
            self.say(f"GPU counters not sampled: {why}")
        return {}

    def _prepare(self, kp: Any) -> None:
        """``kp.prepare_trace()``, without importing torch._inductor when the script has not
        (torch's ``prepare_trace`` asks ``hasattr(torch, "_inductor")``, which imports it:
        seconds, for a setting that matters only to a script that uses it)."""
        torch = self.torch
        original = torch.__dict__.get("__getattr__")
        if "torch._inductor" in sys.modules or original is None:
            kp.prepare_trace()
            return

        def without_inductor(name: str) -> Any:
            if name == "_inductor":
                raise AttributeError(name)
            return original(name)

        torch.__getattr__ = without_inductor
        try:
            kp.prepare_trace()
        finally:
            torch.__getattr__ = original

    def _begin(self) -> None:
        self.kp = self._profiler()
        warmup = int(self.cfg.get("warmup", 2))
        active = max(1, int(self.cfg.get("active", 3)))
        self.active_at = self.completed + warmup
        self.end_at = self.active_at + active
        self.capture_no += 1
        self._prepare(self.kp)
        self.phase = "warmup"
        if warmup == 0:
            self._go_active()

    def _go_active(self) -> None:
        self.frozen = True
        self.kp.start_trace()
        self.phase = "active"
        self._open_mark()
        first, last = self.active_at, self.end_at - 1
        span = f"step {first}" if first == last else f"steps {first}-{last}"
        self.say(f"recording {span} (steps found: {self.found_by()})")

    def _open_mark(self) -> None:
        from torch.autograd.profiler import record_function

        self.mark = record_function(f"ProfilerStep#{self.completed}")
        self.mark.__enter__()

    def _close_mark(self) -> None:
        if self.mark is not None:
            self.mark.__exit__(None, None, None)
            self.mark = None

    def _trace_path(self) -> str:
        self.worker = self.worker or self.worker_name()
        suffix = ".pt.trace.json.gz" if self.cfg.get("gzip") else ".pt.trace.json"
        stem = self.worker if self.capture_no <= 1 else f"{self.worker}.{self.capture_no}"
        return os.path.join(self.run_dir, stem + suffix)

    def _export(self, kind: str, steps: list[int], cut: bool, reason: str) -> dict[str, Any]:
        path = self._trace_path()
        capture: dict[str, Any] = {"n": self.capture_no, "kind": kind, "steps": steps,
                                   "complete": not cut, "reason": reason, "files": []}
        try:
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        except (AttributeError, ValueError, OSError):
            old = None
        try:
            self.kp.export_chrome_trace(path)
            capture["files"].append(os.path.basename(path))
            self._inductor_provenance(path)
            if self.cfg.get("memory"):
                categories = self._memory_categories()
                if categories:
                    capture["files"].append(categories)
        except Exception as exc:  # noqa: BLE001 - the script must go on; say why
            capture["error"] = f"the trace could not be written: {exc}"
        finally:
            if old is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, old)
        self.captures.append(capture)
        self.write_status()
        return capture

    def _inductor_provenance(self, trace: str) -> None:
        """Inductor's provenance of the graphs the script compiled, beside the trace."""
        if "torch._inductor.output_code" not in sys.modules:
            return
        from profiler_kit.measure import inductor_provenance

        stem = os.path.basename(trace).split(".pt.trace.json", 1)[0]
        try:
            inductor_provenance.write_beside(self.run_dir, stem)
        except Exception as exc:  # noqa: BLE001 - the trace is written; say why not this
            self.notes.append(f"Inductor's provenance could not be written: {exc}")

    def _memory_categories(self) -> str | None:
        """Memory by category beside the trace (what ``profkit memory`` reads)."""
        try:
            from profiler_kit.measure.memory_categories import SUFFIX, timeline_doc

            devices = ["cpu"]
            if self.torch.cuda.is_initialized():
                devices += [f"cuda:{i}" for i in range(self.torch.cuda.device_count())]
            doc = timeline_doc(self.kp, devices)
            name = f"{self.worker}{SUFFIX}"
            _write_json(os.path.join(self.run_dir, name), doc)
            return name
        except Exception as exc:  # noqa: BLE001 - private torch API: keep the capture
            self.notes.append(f"memory by category not written: {exc}")
            return None

    def _end(self, cut: bool, reason: str = "") -> dict[str, Any] | None:
        """Stop the profiler and write what the active steps recorded."""
        kp, phase = self.kp, self.phase
        self.kp = None
        if kp is None:
            return None
        if phase == "warmup":  # nothing recorded yet
            try:
                kp.start_trace()
                kp.stop_trace()
            except Exception:  # noqa: BLE001
                pass
            self.phase = "done"
            return None
        if self.mark is not None:
            if cut:  # the step never ended: left open, so the trace holds no half step
                self.kept.append(self.mark)
                self.mark = None
            else:
                self._close_mark()
        kp.stop_trace()
        self.kp = kp
        steps = list(range(self.active_at, min(self.completed, self.end_at)))
        capture = self._export("steps", steps, cut, reason)
        self.kp = None
        self.phase = "done"
        if not cut:
            self._after_capture(capture)
        return capture

    def _after_capture(self, capture: dict[str, Any]) -> None:
        steps = capture["steps"]
        span = f"step {steps[0]}" if len(steps) == 1 else f"steps {steps[0]}-{steps[-1]}"
        if self.cfg.get("on_signal"):
            self.armed = False
            self.say(f"recorded {span}; the script runs on (signal again for another capture)")
            return
        if self.cfg.get("keep_running"):
            self.say(f"recorded {span}; the script runs on (--keep-running)")
            return
        self.say(f"recorded {span}; stopping the script "
                 "(profkit record --keep-running lets it finish)")
        self.phase = "stopping"
        self.exit = {"status": 0, "how": "stopped", "after_s": round(time.time() - self.t0, 3)}
        self.write_status()
        raise SystemExit(0)

    def _hard_stop(self) -> None:
        self.say("the script went on after being stopped; ending it")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def found_by(self) -> str:
        src = self.source
        if src == "optimizer":
            names = [self.opt_names[k] for k in self.opt_order]
            if len(names) == 1:
                return f"optimizer steps ({names[0]})"
            listed = ", ".join(names[:-1]) + f" and {names[-1]}"
            return (f"optimizer steps ({len(names)} optimizers, {listed}: one step per round "
                    "of them)")
        return {"backward": "backward() calls (no optimizer steps)",
                "dataloader": "DataLoader batches (no optimizer step or backward())",
                "profiler": "the script's own profiler steps (prof.step())",
                None: "none"}[src]

    # ---- the signal: record on demand ------------------------------------------------------
    def on_user_signal(self, signum: int, frame: Any) -> None:
        if self.phase in ("warmup", "active", "window", "stopping", "yielded"):
            return
        if self.source is None:  # nothing steps: a time window from now
            self.pending = "window"
        else:
            self.armed = True
            self.phase = "wait"
            self.start_at = self.completed + 1
            self.say("signal received: recording the next steps")
        if not self.busy:
            self._run_pending()

    # ---- the time window ---------------------------------------------------------------------
    def _timer(self, delay: float, action: str) -> None:
        def fire() -> None:
            time.sleep(delay)
            if not self.enabled or os.getpid() != self.pid:
                return
            if action == "window" and (self.source is not None or self.phase != "wait"
                                       or self.captures or self.spawner):
                return
            self.pending = action
            try:
                _thread.interrupt_main(_TIMER_SIGNAL)
            except (ValueError, RuntimeError):
                pass

        threading.Thread(target=fire, name="profkit-record-timer", daemon=True).start()

    def on_timer_signal(self, signum: int, frame: Any) -> None:
        if not self.busy:
            self._run_pending(frame)

    def _run_pending(self, frame: Any = None) -> None:
        action, self.pending = self.pending, None
        if not self.enabled or action is None:
            return
        if action == "window" and self.phase in ("wait", "window-done") \
                and self.source is None and not self.spawner:
            if _importing_or_compiling(frame):  # try again a little later
                self._timer(0.05, "window")
                return
            self._begin_window()
        elif action == "window-end" and self.phase == "window":
            if _importing_or_compiling(frame):
                self._timer(0.05, "window-end")
                return
            self._end_window(cut=False)

    def _begin_window(self) -> None:
        self.kp = self._profiler()
        self.capture_no += 1
        self._prepare(self.kp)
        self.kp.start_trace()
        self.phase = "window"
        self.window_started = time.time()
        self._timer(float(self.cfg.get("window", 3.0)), "window-end")

    def _end_window(self, cut: bool) -> None:
        kp, self.kp = self.kp, None
        kp.stop_trace()
        self.kp = kp
        seconds = time.time() - (self.window_started or time.time())
        capture = self._export("window", [], cut, "")
        capture["window_s"] = round(seconds, 3)
        capture["window_from_s"] = round((self.window_started or self.t0) - self.t0, 3)
        self.kp = None
        self.window_file = capture["files"][0] if capture["files"] else None
        self.phase = "window-done"
        self.write_status()

    def _drop_window(self) -> None:
        """Steps began: a time window (being recorded or written) gives way to them."""
        if self.phase == "window" and self.kp is not None:
            kp, self.kp = self.kp, None
            try:
                kp.stop_trace()
            except Exception:  # noqa: BLE001
                pass
            self.capture_no -= 1
            self.notes.append("a time window was begun before the first step and dropped")
        elif self.phase == "window-done":
            for capture in [c for c in self.captures if c["kind"] == "window"]:
                for name in capture["files"]:
                    try:
                        os.unlink(os.path.join(self.run_dir, name))
                    except OSError:
                        pass
                self.captures.remove(capture)
                self.capture_no -= 1
            self.notes.append("a time window recorded before the first step was dropped")
        self.phase = "wait"
        self.write_status()

    # ---- the script's own profiler ----------------------------------------------------
    def on_own_profiler(self, prof: Any) -> None:
        """The script starts its own profiler: ours gives way, its traces are used."""
        self.own["used"] = True
        self.own["started"] += 1
        if prof not in self.own_profilers:
            self.own_profilers.append(prof)
        if self.phase in ("yielded", "done", "stopping"):
            return
        if self.phase in ("warmup", "active", "window"):
            kp, self.kp = self.kp, None
            if self.mark is not None:
                self.kept.append(self.mark)
                self.mark = None
            try:
                kp.stop_trace()
            except Exception:  # noqa: BLE001
                pass
            self.notes.append("the script started its own profiler during profkit's "
                              "capture, which gave way to it")
        elif self.phase == "window-done":
            self._drop_window()
        self.phase = "yielded"
        self.source = "profiler"
        self.write_status()
        self.say("the script runs its own torch.profiler: its traces are used")

    def on_own_step(self) -> None:
        self.seen["profiler"] += 1
        if self.phase == "yielded":
            self.own["steps"] += 1

    def on_own_export(self, path: str) -> None:
        self.own["exports"].append(os.path.abspath(path))
        self.write_status()

    # ---- the end ------------------------------------------------------------------------
    def finish(self, status: int | None, how: str, error: str | None = None) -> None:
        """The script ended (``how``: exit, exception, interrupt; ``error``: the last line
        of its error): keep what was recorded."""
        if not self.enabled or os.getpid() != self.pid:
            return
        if self.phase == "stopping":
            self.write_status()
            return
        # nothing begins now: a time window falling due at the end started a profiler that
        # python's shutdown never stopped (the script ended with 139, not its own status)
        self.enabled = False
        now = _now_ns()
        if self.last_ns is not None and self.phase == "active":
            self.durations.append((self.completed, now - self.last_ns, "cut"))
        try:
            if self.phase in ("warmup", "active"):
                self._end(cut=True, reason=how)
            elif self.phase == "window":
                self._end_window(cut=True)
        except Exception as exc:  # noqa: BLE001 - never hide the script's own error
            self.notes.append(f"the capture could not be written at the end: {exc}")
        self._export_own()
        self.exit = {"status": status, "how": how, "after_s": round(time.time() - self.t0, 3)}
        if error:
            self.exit["error"] = error
        self.write_status()

    def _export_own(self) -> None:
        """The script's profilers that wrote no trace themselves: their last cycle here."""
        if self.own["exports"]:
            return
        for i, prof in enumerate(self.own_profilers):
            if getattr(prof, "profiler", None) is None and \
                    getattr(prof, "kineto_results", None) is None:
                continue
            name = f"{self.worker_name()}.own{i or ''}.pt.trace.json"
            try:
                prof.export_chrome_trace(os.path.join(self.run_dir, name))
            except Exception as exc:  # noqa: BLE001
                self.notes.append(f"the script's profiler results could not be written: {exc}")
                continue
            self.captures.append({"n": 0, "kind": "own", "steps": [], "complete": True,
                                  "reason": "", "files": [name]})

    def status(self) -> dict[str, Any]:
        return {
            "pid": self.pid, "rank": self.rank(), "world_size": self.world_size(),
            "local_rank": _int_env("LOCAL_RANK"), "worker": self.worker or self.worker_name(),
            "host": os.uname().nodename if hasattr(os, "uname") else "",
            "spawner": self.spawner, "target": self.target,
            "python": sys.version.split()[0],
            "torch": getattr(self.torch, "__version__", None),
            "cuda": bool(self.torch is not None and self.torch.cuda.is_initialized()),
            "started": self.t0, "torch_imported_s": self.torch_s,
            "seen": dict(self.seen),
            "optimizers": [self.opt_names[k] for k in self.opt_order],
            "source": self.source, "found_by": self.found_by(),
            "completed_steps": self.completed, "phase": self.phase,
            "captures": self.captures, "own_profiler": self.own,
            "durations": self.durations, "notes": self.notes, "exit": self.exit,
            "config": self.cfg,
        }

    def write_status(self) -> None:
        folder = os.path.join(self.run_dir, STATUS_DIR)
        try:
            os.makedirs(folder, exist_ok=True)
            _write_json(os.path.join(folder, f"{self.pid}.json"), self.status())
        except OSError:
            pass

    def disable(self) -> None:
        """In a forked child (a DataLoader worker): nothing is recorded."""
        self.enabled = False
        self.kp = None
        self.mark = None


def _importing_or_compiling(frame: Any = None) -> bool:
    """Whether the main thread is inside an import or inside torch.compile's machinery
    (compiling or running compiled code). A signal handler may run in the middle of
    either, and a profiler started or stopped there is not safe: one begun while Dynamo
    and AOTAutograd compiled the first step recorded every later event twice, or
    crashed the script (exit 139)."""
    for module in list(sys.modules.values()):
        spec = getattr(module, "__spec__", None)
        if spec is not None and getattr(spec, "_initializing", False):
            return True
    guards = sys.modules.get("torch._guards")
    if guards is not None:
        try:
            if guards.CompileContext.try_get() is not None \
                    or guards.TracingContext.try_get() is not None:
                return True
        except AttributeError:
            pass
    frame = frame if frame is not None else sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename
        if _TORCH_PART in name and any(part in name for part in _COMPILER_PARTS):
            return True
        frame = frame.f_back
    return False


# torch's packages that compile (Dynamo, AOTAutograd, Inductor, FX, fake tensors,
# decompositions, export) or run what they compiled
_TORCH_PART = f"{os.sep}torch{os.sep}"
_COMPILER_PARTS = tuple(f"{os.sep}torch{os.sep}{name}" for name in (
    f"_dynamo{os.sep}", f"_inductor{os.sep}", f"_functorch{os.sep}", f"fx{os.sep}",
    f"_subclasses{os.sep}", f"_higher_order_ops{os.sep}", f"_decomp{os.sep}",
    f"_refs{os.sep}", f"_prims{os.sep}", f"_prims_common{os.sep}", f"_export{os.sep}",
    f"export{os.sep}", f"_library{os.sep}", f"utils{os.sep}_sympy{os.sep}", "_guards.py",
    "_compile.py"))


# the file name the hooks' wrappers show in stacks: "<...>" names no user code, so the
# per-line attributions of --stack and --memory name the script's line, not profkit's
WRAPPER_FILE = "<profkit record>"


def _wrapper(fn: Any) -> Any:
    """``fn`` shown in Python stacks and tracebacks as profkit's, not as a line of code."""
    fn.__code__ = fn.__code__.replace(co_filename=WRAPPER_FILE)
    return fn


def _int_env(name: str) -> int | None:
    v = os.environ.get(name, "")
    return int(v) if v.isdigit() else None


def _write_json(path: str, data: Any) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, separators=(",", ":"))
    os.replace(tmp, path)


# ---- installing the hooks ----------------------------------------------------------------------
def _install(torch: Any, rec: Recorder) -> None:
    """Patch torch's step points; each patch leaves the original behaviour intact."""
    import functools

    rec.torch = torch
    rec.torch_s = time.time() - rec.t0
    if not rec.own["used"]:
        rec.write_status()

    # optimizer steps, seen after the step returns, outside its record_function; while one
    # runs, what it calls (a closure's backward(), another optimizer's step) is part of it
    from torch.optim import optimizer as optim_mod

    Optimizer = optim_mod.Optimizer
    original_hook_step = Optimizer.__dict__.get("profile_hook_step")
    if isinstance(original_hook_step, staticmethod):
        inner_wrap = original_hook_step.__func__

        def profile_hook_step(func):
            wrapped = inner_wrap(func)

            @functools.wraps(wrapped)
            @_wrapper
            def step(*args, **kwargs):
                if not rec.enabled:
                    return wrapped(*args, **kwargs)
                rec.step_depth += 1
                try:
                    out = wrapped(*args, **kwargs)
                finally:
                    rec.step_depth -= 1
                if args:
                    rec.on_optimizer_step(args[0])
                return out

            return step

        Optimizer.profile_hook_step = staticmethod(profile_hook_step)
    else:  # an older or newer torch: the public hooks (inside the step's own range; a step
        # that raises runs no post hook, and the steps after one caught are not seen)
        def pre_hook(opt, args, kwargs):
            rec.step_depth += 1

        def post_hook(opt, args, kwargs):
            rec.step_depth = max(0, rec.step_depth - 1)
            if rec.enabled:
                rec.on_optimizer_step(opt)

        optim_mod.register_optimizer_step_pre_hook(pre_hook)
        optim_mod.register_optimizer_step_post_hook(post_hook)

    # backward(): Tensor.backward calls torch.autograd.backward
    original_backward = torch.autograd.backward

    @functools.wraps(original_backward)
    @_wrapper
    def backward(*args, **kwargs):
        if not rec.enabled:
            return original_backward(*args, **kwargs)
        rec.backward_depth += 1
        try:
            out = original_backward(*args, **kwargs)
        finally:
            rec.backward_depth -= 1
        if rec.backward_depth == 0:  # a reentrant checkpoint's inner backward is not a step
            rec.on_backward()
        return out

    torch.autograd.backward = backward

    # torch.compile: Inductor's provenance on before it compiles (saved beside the trace)
    original_compile = torch.compile

    @functools.wraps(original_compile)
    @_wrapper
    def compile(*args, **kwargs):
        from profiler_kit.measure import inductor_provenance

        inductor_provenance.enable()
        return original_compile(*args, **kwargs)

    torch.compile = compile

    # DataLoader batches: the boundary before the batch is fetched
    from torch.utils.data import dataloader as dl

    base_iter = dl._BaseDataLoaderIter
    original_next = base_iter.__next__

    @functools.wraps(original_next)
    @_wrapper
    def __next__(self):
        if not rec.enabled:
            return original_next(self)
        rec.on_batch()
        batch = original_next(self)
        rec.seen["dataloader"] += 1
        return batch

    base_iter.__next__ = __next__

    _install_profiler_watch(torch, rec)
    _install_spawn(torch, rec)


def _install_profiler_watch(torch: Any, rec: Recorder) -> None:
    """The script's own torch.profiler: seen when it starts, steps and writes traces."""
    import functools

    from torch.profiler import profiler as prof_mod

    def own(p: Any) -> bool:
        return rec.enabled and not getattr(p, "_profkit_own", False)

    profile_cls = prof_mod.profile
    original_start = profile_cls.start

    @functools.wraps(original_start)
    @_wrapper
    def start(self):
        if own(self):
            rec.on_own_profiler(self)
        return original_start(self)

    profile_cls.start = start
    original_prepare = prof_mod._KinetoProfile.prepare_trace

    @functools.wraps(original_prepare)
    @_wrapper
    def prepare_trace(self):
        if own(self):
            rec.on_own_profiler(self)
        return original_prepare(self)

    prof_mod._KinetoProfile.prepare_trace = prepare_trace
    original_step = profile_cls.step

    @functools.wraps(original_step)
    @_wrapper
    def step(self):
        if own(self):
            rec.on_own_step()
        return original_step(self)

    profile_cls.step = step
    original_export = prof_mod._KinetoProfile.export_chrome_trace

    @functools.wraps(original_export)
    @_wrapper
    def export_chrome_trace(self, path, *args, **kwargs):
        out = original_export(self, path, *args, **kwargs)
        if own(self):
            rec.on_own_export(str(path))
        return out

    prof_mod._KinetoProfile.export_chrome_trace = export_chrome_trace
    # the legacy autograd profiler (torch.autograd.profiler.profile)
    legacy = torch.autograd.profiler.profile
    original_enter = legacy.__enter__

    @functools.wraps(original_enter)
    @_wrapper
    def __enter__(self):
        if rec.enabled:
            rec.on_own_profiler(self)
        return original_enter(self)

    legacy.__enter__ = __enter__


class _SpawnedFn:
    """A function started by torch.multiprocessing in new processes, recorded there too."""

    def __init__(self, fn: Any, config: dict[str, Any], run_dir: str, target: str) -> None:
        self.fn, self.config, self.run_dir, self.target = fn, config, run_dir, target

    def __call__(self, index: int, *args: Any) -> Any:
        rec = _RECORDER
        if rec is None or rec.pid != os.getpid():  # a new interpreter (spawn)
            rec = Recorder(self.config, self.run_dir, self.target, spawn_index=index)
            _set_recorder(rec)
            import torch

            _install(torch, rec)
        else:  # forked: this process is a rank of its own
            rec.__init__(self.config, self.run_dir, self.target, spawn_index=index)
            import torch

            rec.torch = torch
        rec.spawn_index = index
        rec.write_status()
        try:
            out = self.fn(index, *args)
        except SystemExit as exc:
            rec.finish(_exit_status(exc), "exit", error_line(exc))
            raise
        except KeyboardInterrupt as exc:
            rec.finish(130, "interrupt", error_line(exc))
            raise
        except BaseException as exc:
            rec.finish(1, "exception", error_line(exc))
            raise
        rec.finish(0, "exit")
        return out


def _install_spawn(torch: Any, rec: Recorder) -> None:
    """torch.multiprocessing.spawn/start_processes: every process it starts is recorded."""
    import functools

    spawn_mod = sys.modules.get("torch.multiprocessing.spawn")
    if spawn_mod is None or not hasattr(spawn_mod, "start_processes"):
        return
    original = spawn_mod.start_processes

    @functools.wraps(original)
    @_wrapper
    def start_processes(fn, *args, **kwargs):
        if rec.enabled and not isinstance(fn, _SpawnedFn):
            if rec.phase in ("window", "window-done"):  # it waits for its ranks, which record
                rec._drop_window()
            rec.spawner = True
            rec.write_status()
            fn = _SpawnedFn(fn, rec.cfg, rec.run_dir, rec.target)
        return original(fn, *args, **kwargs)

    spawn_mod.start_processes = start_processes
    if getattr(torch.multiprocessing, "start_processes", None) is original:
        torch.multiprocessing.start_processes = start_processes


def _exit_status(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def error_line(exc: BaseException) -> str | None:
    """The last line of the error python shows for ``exc`` (``ValueError: bad batch``, not
    its notes; ``sys.exit("message")``: the message); None for an exit with a number."""
    if isinstance(exc, SystemExit):
        if exc.code is None or isinstance(exc.code, int):
            return None
        text = str(exc.code)
    else:
        import traceback

        try:
            shown = traceback.TracebackException(type(exc), exc, None, compact=True)
            shown.__notes__ = None
            text = "".join(shown.format_exception_only())
        except Exception:  # noqa: BLE001 - an error that cannot be shown: its type
            text = type(exc).__name__
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    # a SyntaxError's line of code and its caret are indented: its error is the line after
    lines = [line for line in lines if not line[0].isspace()] or lines
    if not lines:
        return None
    line = lines[-1].strip()
    return line if len(line) <= _MAX_ERROR else line[:_MAX_ERROR - 3] + "..."


class _TorchLoader(importlib.abc.Loader):
    """torch's own loader; once torch has run, the hooks go in."""

    def __init__(self, inner: Any, done: Any) -> None:
        self.inner, self.done = inner, done

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.inner.exec_module(module)
        module.__loader__ = self.inner
        if module.__spec__ is not None:
            module.__spec__.loader = self.inner
        self.done(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _TorchWatcher(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of ``torch`` when the script imports it."""

    def __init__(self, done: Any) -> None:
        self.done = done

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _TorchLoader(spec.loader, self.done)
                return spec
        return None


def _set_recorder(rec: Recorder) -> None:
    global _RECORDER
    _RECORDER = rec


def start(target: str) -> Recorder | None:
    """Set up recording for this process (from the environment profkit record set);
    the hooks go in when torch is imported. None when not asked to record."""
    run_dir = os.environ.get(ENV_DIR)
    if not run_dir:
        return None
    try:
        config = json.loads(os.environ.get(ENV_CONFIG) or "{}")
    except ValueError:
        config = {}
    rec = Recorder(config, run_dir, target)
    _set_recorder(rec)
    os.register_at_fork(after_in_child=rec.disable)
    try:
        signal.signal(_TIMER_SIGNAL, rec.on_timer_signal)
        if config.get("on_signal"):
            signal.signal(signal.SIGUSR2, rec.on_user_signal)
    except (ValueError, OSError):
        pass

    def torch_imported(torch: Any) -> None:
        try:
            _install(torch, rec)
        except Exception as exc:  # noqa: BLE001 - never break the script
            rec.enabled = False
            rec.notes.append(f"profkit could not hook into torch {torch.__version__}: {exc}")
            rec.write_status()
            return
        after = float(config.get("window_after", 5.0))
        if not config.get("on_signal") and after >= 0:
            rec._timer(after, "window")

    if "torch" in sys.modules:
        torch_imported(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _TorchWatcher(torch_imported))
    rec.write_status()
    return rec


def finish(status: int | None, how: str, error: str | None = None) -> None:
    if _RECORDER is not None:
        _RECORDER.finish(status, how, error)
