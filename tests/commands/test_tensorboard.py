"""``profkit tensorboard``: a real TensorBoard with the torch-tb-profiler plugin, on runs that
the real runner wrote, checked through the plugin's HTTP API; then Ctrl-C stops it."""

from __future__ import annotations

import gzip
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from profiler_kit import cli
from profiler_kit import tensorboard as tb
from profiler_kit.errors import UsageError

HERE = Path(__file__).parents[1]
STRATEGIES = ("sequential", "threads")
ACTIVE_STEPS = 2  # profile_active of the runs below
MODELS_PER_STEP = 2  # tensorboard_scenario runs two models per step
LOAD_TIMEOUT_S = 90.0


# --- finding the run to show (no TensorBoard needed) ------------------------------------


def _fake_run(out: Path, scenario: str, run_id: str, mtime_ns: int) -> Path:
    run = out / scenario / run_id
    (run / "sequential").mkdir(parents=True)
    (run / "sequential" / "main.123.pt.trace.json").write_text("{}")
    (run / "run.json").write_text("{}")
    os.utime(run / "run.json", ns=(mtime_ns, mtime_ns))
    return run


def test_latest_run_is_the_newest_run_json(tmp_path: Path) -> None:
    base = time.time_ns() - 10**12
    _fake_run(tmp_path, "concurrent", "20260101-000000-aaaa", base)
    newest = _fake_run(tmp_path, "multimodel", "20250101-000000-bbbb", base + 10**9)
    (tmp_path / "concurrent" / "not-a-run").mkdir()  # no run.json: ignored
    assert tb.latest_run(tmp_path) == newest
    assert tb.resolve_logdir(None, tmp_path) == newest.resolve()


def test_a_recording_is_a_run_too(tmp_path: Path) -> None:
    """``profkit record`` writes ``traces/<script>/<id>/record.json``: the newest of the
    runs and the recordings is shown."""
    base = time.time_ns() - 10**12
    _fake_run(tmp_path, "concurrent", "20260101-000000-aaaa", base)
    recording = tmp_path / "train" / "20250101-000000-cccc"
    recording.mkdir(parents=True)
    (recording / "main.pt.trace.json").write_text("{}")
    (recording / "record.json").write_text("{}")
    os.utime(recording / "record.json", ns=(base + 10**9, base + 10**9))
    assert tb.latest_run(tmp_path) == recording
    newer = _fake_run(tmp_path, "ddp", "20240101-000000-dddd", base + 2 * 10**9)
    assert tb.latest_run(tmp_path) == newer


def test_an_explicit_folder_is_shown_as_given(tmp_path: Path) -> None:
    run = _fake_run(tmp_path, "concurrent", "r1", time.time_ns())
    assert tb.resolve_logdir(str(run / "sequential"), tmp_path / "elsewhere") == (
        run / "sequential"
    ).resolve()


@pytest.mark.parametrize("name, is_trace", [
    ("main.1795300270109711441.pt.trace.json", True),
    ("rank0.17953.pt.trace.json.gz", True),
    ("host_1234.pt.trace.json", True),
    ("key_averages.json", False),
    ("main.pt.trace.json.tmp", False),
])
def test_trace_files_are_what_the_plugin_loads(tmp_path: Path, name: str, is_trace: bool) -> None:
    (tmp_path / name).write_text("{}")
    assert (tb.trace_files(tmp_path) == [tmp_path / name]) is is_trace


def test_no_runs_and_missing_folders_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        tb.latest_run(tmp_path / "missing")
    with pytest.raises(UsageError, match="no runs under"):
        tb.latest_run(tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        tb.resolve_logdir(str(tmp_path / "missing"), tmp_path)
    with pytest.raises(UsageError, match="no torch.profiler traces"):
        tb.resolve_logdir(str(tmp_path), tmp_path)


@pytest.mark.parametrize("argv, message", [
    (["--out", "{tmp}/missing"], "does not exist"),
    (["--out", "{tmp}"], "no runs under"),
    (["{tmp}/missing"], "run folder"),
    (["{tmp}"], "no torch.profiler traces"),
    (["{tmp}/given/t.pt.trace.json.gz"], "t.pt.trace.json.gz: a file, not a folder (give "
                                         "a run folder or a folder of traces)"),
])
def test_cli_errors_are_one_line_with_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    if "given" in argv[0]:  # a real trace, given where a folder goes
        (tmp_path / "given").mkdir()
        (tmp_path / "given" / "t.pt.trace.json.gz").write_bytes(
            (HERE / "data" / "cpu_torch_profiler.pt.trace.json.gz").read_bytes())
    status = cli.main(["tensorboard", *(a.format(tmp=tmp_path) for a in argv)])
    err = capsys.readouterr().err
    assert status == 2
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_taken_port_is_a_usage_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind((tb.LOOPBACK, 0))
        sock.listen()
        with pytest.raises(UsageError, match="already in use"):
            tb.start(tmp_path, port=sock.getsockname()[1])


# --- a real TensorBoard on real runs ------------------------------------------------------


@dataclass(frozen=True)
class Runs:
    out: Path
    plain: Path  # traces as .pt.trace.json
    gzipped: Path  # the same scenario with --gzip: .pt.trace.json.gz
    unreadable: str = "unreadable"  # a folder whose one trace is not JSON

    def names(self) -> set[str]:
        """The run names the plugin should list: one per strategy folder, relative to out."""
        return {f"{run.relative_to(self.out).as_posix()}/{s}"
                for run in (self.plain, self.gzipped) for s in STRATEGIES}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Two tiny runs written by `profkit run` on a user scenario file, one with --gzip."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("tensorboard-runs")
    tiny = ["--iterations", "2", "--warmup", "1", "--profile-wait", "0", "--profile-warmup", "1",
            "--profile-active", str(ACTIVE_STEPS), "--device", "cpu", "--out", str(out)]
    for extra in ([], ["--gzip"]):
        status = cli.main(["run", str(HERE / "tensorboard_scenario.py"), *tiny, *extra])
        assert status == 0
    written = {}
    for run_json in out.glob("*/*/run.json"):
        run = run_json.parent
        assert sorted(p.name for p in run.iterdir() if p.is_dir()) == sorted(STRATEGIES)
        files = {s: tb.trace_files(run / s) for s in STRATEGIES}
        assert all(len(f) == 1 for f in files.values()), files
        written[files[STRATEGIES[0]][0].name.endswith(".gz")] = run
    assert set(written) == {False, True}
    broken = out / Runs.unreadable / "main.1.pt.trace.json"
    broken.parent.mkdir()
    broken.write_text("this is not a trace")
    return Runs(out, written[False], written[True])


@dataclass
class Served:
    """``profkit tensorboard`` running as a user would start it."""

    process: subprocess.Popen[str]
    lines: queue.Queue[str]
    url: str
    port: int
    transcript: list[str]
    log: Path | None = None

    def api(self, route: str, **query: str) -> tuple[int, Any]:
        base = f"http://{tb.LOOPBACK}:{self.port}/data/plugin/{tb.PLUGIN_NAME}/{route}"
        return _get(f"{base}?{urllib.parse.urlencode(query)}" if query else base)

    def read_until(self, prefix: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    break
                continue
            self.transcript.append(line)
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no line starting {prefix!r}; output so far: {self.transcript}")


@pytest.fixture(scope="module")
def served(runs: Runs) -> Iterator[Served]:
    pytest.importorskip("tensorboard")
    pytest.importorskip("torch_tb_profiler")
    port = tb.free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "profiler_kit", "tensorboard", str(runs.out), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        # A Ctrl-C must reach profkit even when this test runs with SIGINT ignored
        # (as in a background job), since it is what the last test sends.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    stdout = process.stdout
    threading.Thread(target=lambda: [lines.put(line.rstrip("\n")) for line in stdout],
                     daemon=True).start()
    served = Served(process, lines, "", port, [])
    try:
        url_line = served.read_until("TensorBoard: ", LOAD_TIMEOUT_S)
        served.url = url_line.removeprefix("TensorBoard: ")
        log_line = served.read_until("  log: ", 10)
        served.log = Path(log_line.removeprefix("  log: ").split(";")[0])
        yield served
    finally:
        _stop(served)


def _stop(served: Served) -> None:
    """Whatever happened, leave no TensorBoard behind: profkit first, then the port's owner."""
    if served.process.poll() is None:
        served.process.send_signal(signal.SIGINT)
        try:
            served.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            served.process.kill()
            served.process.wait()
    for pid in _tensorboard_pids(served.port):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _tensorboard_pids(port: int) -> list[int]:
    """TensorBoard processes serving ``port`` (found through /proc, where there is one)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = entry.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"tensorboard.main" in b" ".join(argv) and str(port).encode() in argv:
            found.append(int(entry.parent.name))
    return found


def _get(url: str, timeout_s: float = 30.0) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = response.read()
            if response.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            return response.status, json.loads(body)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


def _loaded_runs(served: Served, expected: set[str]) -> list[str]:
    """The plugin parses traces in the background: poll its run list, bounded."""
    deadline = time.monotonic() + LOAD_TIMEOUT_S
    answer: Any = None
    while time.monotonic() < deadline:
        status, answer = served.api("runs")
        if status == 200 and not answer["loading"] and expected <= set(answer["runs"]):
            return list(answer["runs"])
        time.sleep(0.5)
    raise AssertionError(f"plugin runs after {LOAD_TIMEOUT_S:.0f} s: {answer}")


@pytest.mark.slow
def test_the_url_opens_the_profiler_plugin(served: Served) -> None:
    assert served.url == f"http://{tb.LOOPBACK}:{served.port}/#{tb.PLUGIN_NAME}"
    status, listing = _get(f"http://{tb.LOOPBACK}:{served.port}/data/plugins_listing")
    assert status == 200 and tb.PLUGIN_NAME in listing


@pytest.mark.slow
def test_every_strategy_is_a_run(served: Served, runs: Runs) -> None:
    assert sorted(_loaded_runs(served, runs.names())) == sorted(
        runs.names() | {runs.unreadable}
    )


@pytest.mark.slow
def test_runs_the_plugin_cannot_read_are_named(served: Served, runs: Runs) -> None:
    listed = served.read_until("  runs: ", LOAD_TIMEOUT_S)
    assert set(listed.removeprefix("  runs: ").split(", ")) == runs.names() | {runs.unreadable}
    served.read_until(f"  the plugin could not read run {runs.unreadable!r}", 10)
    assert served.api("views", run=runs.unreadable) == (200, [])


@pytest.mark.slow
@pytest.mark.parametrize("gz", [False, True], ids=["json", "gzip"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_overview_and_operator_views_load(
    served: Served, runs: Runs, gz: bool, strategy: str
) -> None:
    _loaded_runs(served, runs.names())
    run = f"{(runs.gzipped if gz else runs.plain).relative_to(runs.out).as_posix()}/{strategy}"

    status, views = served.api("views", run=run)
    assert status == 200 and {"Overview", "Operator"} <= set(views), views
    status, workers = served.api("workers", run=run, view="Overview")
    assert (status, workers) == (200, ["main"])
    status, spans = served.api("spans", run=run, worker="main")
    assert status == 200 and len(spans) == 1, spans
    profile = {"run": run, "worker": "main", "span": spans[0]}

    status, overview = served.api("overview", **profile)
    assert status == 200, overview
    step_time = overview["performance"][0]
    assert step_time["name"] == "Average Step Time" and step_time["value"] > 0
    assert len(overview["steps"]["rows"]) == ACTIVE_STEPS
    assert {"title": "Device Type", "value": "CPU"} in overview["environments"]

    status, pie = served.api("operation", group_by="Operation", **profile)
    assert status == 200, pie
    # Empty when the trace holds no ops: torch.profiler records ops that run in other
    # threads (the `threads` strategy) only with ExperimentalConfig(profile_all_threads=True).
    assert pie["host_self_time"] is not None, f"no operators in the {strategy} trace"
    host_ops = {name for name, _us in pie["host_self_time"]["rows"]}
    assert any("conv" in name for name in host_ops), host_ops

    status, table = served.api("operation/table", group_by="Operation", **profile)
    assert status == 200, table
    calls = {row["name"]: row["calls"] for row in table["data"]}
    assert calls["aten::conv2d"] == MODELS_PER_STEP * ACTIVE_STEPS
    assert calls["aten::linear"] == MODELS_PER_STEP * ACTIVE_STEPS
    assert all(row["host_self_duration"] >= 0 for row in table["data"])


@pytest.mark.slow
def test_ctrl_c_stops_tensorboard(served: Served) -> None:
    """And leaves nothing behind: TensorBoard runs with its own TMPDIR, where the plugin's
    loader processes put multiprocessing's pymp-* folders, removed with it."""
    (pid,) = _tensorboard_pids(served.port)
    environ = dict(item.split(b"=", 1) for item in
                   Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item)
    tmp_dir = Path(environ[b"TMPDIR"].decode())
    assert tmp_dir.name.startswith("profkit-tensorboard-tmp-") and tmp_dir.is_dir()
    served.process.send_signal(signal.SIGINT)
    status = served.process.wait(timeout=30)
    served.read_until("TensorBoard stopped", 5)
    assert status == 130
    assert not tb.port_in_use(served.port)
    assert served.log is not None and not served.log.exists()  # removed after a clean stop
    assert _tensorboard_pids(served.port) == []
    assert not tmp_dir.exists(), "the child's temporary folder (pymp-*) is removed"
