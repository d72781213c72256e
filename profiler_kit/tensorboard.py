"""Start TensorBoard with the PyTorch profiler plugin on a run, and stop it again.

``profkit run`` writes one TensorBoard run per strategy (``<run>/<strategy>/*.pt.trace.json``);
this module finds the run to show, starts ``tensorboard --logdir <run>`` on a free loopback
port with the torch-tb-profiler plugin, and waits until the server answers, so the URL it
hands back works when the user opens it. It does not import torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from profiler_kit.errors import UsageError
from profiler_kit.record import RECORD_JSON
from profiler_kit.util import child_processes
from profiler_kit.util.artifacts import RUN_JSON
from profiler_kit.util.ports import LOOPBACK, free_port, port_in_use

PLUGIN_NAME = "pytorch_profiler"  # the plugin's name in TensorBoard's URLs
INSTALL_HINT = 'pip install "tensorboard>=2.21" "torch-tb-profiler==0.4.3"'

# The file names torch-tb-profiler accepts as traces (its consts.WORKER_PATTERN):
# <worker>[.<span digits>].pt.trace.json[.gz]. Anything else in a run folder is ignored by it.
TRACE_FILE = re.compile(r"^(.*?)(\.\d+)?\.pt\.trace\.json(?:\.gz)?$")


def latest_run(out_dir: Path) -> Path:
    """The newest run under ``out_dir``: ``<out>/<scenario>/<run-id>/`` holding a run.json
    (``profkit run``), or ``<out>/<script>/<id>/`` holding a record.json (``profkit record``).

    "Newest" is the run whose record was written last (the runner rewrites run.json as
    strategies finish), with the folder name breaking ties.
    """
    if not out_dir.is_dir():
        raise UsageError(
            f"no runs: output folder {out_dir} does not exist (run `profkit run` first)"
        )
    records = {p.parent: p for name in (RUN_JSON, RECORD_JSON)
               for p in out_dir.glob(f"*/*/{name}") if p.is_file()}
    if not records:
        raise UsageError(f"no runs under {out_dir} (run `profkit run` or `profkit record` "
                         "first, or name a run folder)")
    return max(records, key=lambda run: (records[run].stat().st_mtime_ns, run.name))


def resolve_logdir(run_dir: str | None, out_dir: Path) -> Path:
    """The folder to show: ``run_dir`` when given, else the latest run under ``out_dir``."""
    logdir = latest_run(out_dir) if run_dir is None else Path(run_dir)
    if logdir.is_file():  # a trace or another file: what to give instead
        raise UsageError(f"{logdir}: a file, not a folder (give a run folder or a folder "
                         "of traces)")
    if not logdir.is_dir():
        raise UsageError(f"run folder {logdir} does not exist")
    if not trace_files(logdir):
        raise UsageError(
            f"no torch.profiler traces (*.pt.trace.json[.gz]) under {logdir}: nothing to show"
        )
    return logdir.resolve()


def trace_files(logdir: Path) -> list[Path]:
    """Every file under ``logdir`` that the profiler plugin loads as a trace."""
    return sorted(p for p in logdir.rglob("*.pt.trace.json*") if TRACE_FILE.match(p.name))


def tensorboard_command() -> list[str]:
    """How to start TensorBoard: this interpreter's ``tensorboard.main`` when it has the
    plugin (so the plugin is the one installed beside profkit), else ``tensorboard`` on PATH."""
    if _importable("tensorboard") and _importable("torch_tb_profiler"):
        return [sys.executable, "-m", "tensorboard.main"]
    if not _importable("torch_tb_profiler") and _importable("tensorboard"):
        raise UsageError(f"TensorBoard's PyTorch profiler plugin is not installed: {INSTALL_HINT}")
    executable = shutil.which("tensorboard")
    if executable is None:
        raise UsageError(f"TensorBoard is not installed: {INSTALL_HINT}")
    return [executable]


@dataclass
class TensorBoardServer:
    """A running TensorBoard child process; ``stop()`` ends it (and its data server)."""

    process: subprocess.Popen[bytes]
    logdir: Path
    port: int
    log_path: Path
    host: str = LOOPBACK
    # the child's own temporary folder (TMPDIR): what it and the plugin's loader processes
    # leave there (multiprocessing's pymp-* folders, when killed) goes with it at stop()
    tmp_dir: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """Where the user opens the profiler plugin."""
        return f"{self.base_url}/#{PLUGIN_NAME}"

    def plugin_url(self, route: str) -> str:
        return f"{self.base_url}/data/plugin/{PLUGIN_NAME}/{route.lstrip('/')}"

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def discard_log(self) -> None:
        """Remove the log after a clean stop; a failed start keeps it for the user."""
        self.log_path.unlink(missing_ok=True)

    def stop(self, timeout_s: float = 5.0) -> int | None:
        """End TensorBoard and everything it started; its return code.

        SIGTERM first; TensorBoard then waits for the plugin's trace-loading threads and
        processes, so after ``timeout_s`` (or at a second Ctrl-C) the whole process group
        (TensorBoard, its data server, the plugin's loaders) is killed.
        """
        status = child_processes.stop(self.process, timeout_s)
        if self.tmp_dir is not None:
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
        return status


def start(
    logdir: Path,
    port: int | None = None,
    host: str = LOOPBACK,
    timeout_s: float = 90.0,
    command: Sequence[str] | None = None,
) -> TensorBoardServer:
    """Start TensorBoard on ``logdir`` and return once its profiler plugin answers.

    Raises UsageError when the port is taken, TensorBoard exits, the plugin is missing,
    or nothing answers within ``timeout_s``; the child is stopped in every such case.
    """
    if port is not None and port_in_use(port, host):
        raise UsageError(f"port {port} on {host} is already in use (pick another with --port)")
    chosen = free_port(host) if port is None else port
    argv = [*(command or tensorboard_command()), "--logdir", str(logdir),
            "--host", host, "--port", str(chosen)]
    # The child's output goes to a file that outlives profkit, for the user to read.
    log_file = tempfile.NamedTemporaryFile(
        prefix="profkit-tensorboard-", suffix=".log", delete=False
    )
    tmp_dir = Path(tempfile.mkdtemp(prefix="profkit-tensorboard-tmp-"))
    try:
        process = _spawn(argv, log_file, tmp_dir)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    finally:
        log_file.close()
    server = TensorBoardServer(process, logdir, chosen, Path(log_file.name), host, tmp_dir)
    try:
        _wait_until_ready(server, timeout_s)
    except BaseException:
        server.stop()
        raise
    return server


def _spawn(argv: list[str], log: IO[bytes], tmp_dir: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"),
               TMPDIR=str(tmp_dir))
    try:
        return child_processes.start(argv, log, env)
    except OSError as exc:
        raise UsageError(f"cannot start TensorBoard ({exc}): {INSTALL_HINT}") from exc


def _wait_until_ready(server: TensorBoardServer, timeout_s: float) -> None:
    """Poll TensorBoard's plugin listing until it answers and names the profiler plugin."""
    deadline = time.monotonic() + timeout_s
    listing_url = f"{server.base_url}/data/plugins_listing"
    while time.monotonic() < deadline:
        if not server.running():
            raise UsageError(
                f"TensorBoard exited with status {server.process.returncode} before answering; "
                f"its log ({server.log_path}) ends with: {_one_line(server.log_tail(3))}"
            )
        listing = get_json(listing_url, timeout_s=2.0)
        if isinstance(listing, dict):
            if PLUGIN_NAME not in listing:
                raise UsageError(
                    f"TensorBoard runs without the PyTorch profiler plugin: {INSTALL_HINT}"
                )
            return
        time.sleep(0.25)
    raise UsageError(
        f"TensorBoard did not answer on {server.base_url} within {timeout_s:.0f} s "
        f"(log: {server.log_path})"
    )


def get_json(url: str, timeout_s: float = 5.0) -> Any:
    """GET ``url`` and decode its JSON body; None when nothing (valid) answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = response.read()
            if response.headers.get("Content-Encoding") == "gzip":
                import gzip

                body = gzip.decompress(body)
            return json.loads(body)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def wait_for_runs(server: TensorBoardServer, timeout_s: float = 60.0) -> list[str]:
    """The runs the plugin lists once it has finished loading (it parses traces in the
    background), or what it lists when ``timeout_s`` runs out.

    The plugin's ``loading`` goes false when a run's parsing thread ends, a moment before
    another of its threads adds that run to the list: so the list counts only when two
    answers half a second apart agree and neither is loading."""
    deadline = time.monotonic() + timeout_s
    runs: list[str] = []
    settled: list[str] | None = None  # the last answer that was not loading
    while time.monotonic() < deadline and server.running():
        answer = get_json(server.plugin_url("runs"), timeout_s=2.0)
        if isinstance(answer, dict):
            runs = list(answer.get("runs", []))
            if runs and not answer.get("loading", True):
                if runs == settled:
                    return runs
                settled = runs
            else:
                settled = None
        time.sleep(0.5)
    return runs


def runs_without_views(server: TensorBoardServer, runs: Sequence[str]) -> list[str]:
    """Runs the plugin lists but could not parse (it logs why and shows them empty)."""
    empty = []
    for run in runs:
        views = get_json(server.plugin_url("views") + "?" + urllib.parse.urlencode({"run": run}))
        if not views:
            empty.append(run)
    return empty


def wait_while_running(server: TensorBoardServer, poll_s: float = 0.5) -> int:
    """Block until TensorBoard exits by itself (a Ctrl-C raises KeyboardInterrupt)."""
    while server.running():
        time.sleep(poll_s)
    return int(server.process.returncode or 0)


@contextmanager
def interrupt_on_termination() -> Iterator[None]:
    """Turn SIGTERM/SIGHUP into KeyboardInterrupt inside the block, so that ending profkit
    by any of them still stops its TensorBoard child instead of orphaning it."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous: dict[int, Any] = {}
    for name in ("SIGTERM", "SIGHUP"):
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            previous[signum] = signal.signal(signum, interrupt)
        except ValueError:  # not the main thread: keep the default behaviour
            pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _one_line(text: str) -> str:
    return " | ".join(line.strip() for line in text.splitlines() if line.strip()) or "(empty)"
