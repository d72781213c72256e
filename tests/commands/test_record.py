"""``profkit record``: real training scripts (tests/record_scripts/) recorded as they are.

Each recording checks the steps profkit found against what the script did (its own
``iteration N`` lines, its optimizers, its ranks). The recordings that need no interaction
start together when the first test asks for one, a few at a time, so that their torch
imports overlap with each other's waiting.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from profiler_kit import cli
from profiler_kit.record import command_line

SCRIPTS = Path(__file__).parents[1] / "record_scripts"
PY = sys.executable
SCHEDULE = ["--wait", "2", "--warmup", "1", "--active", "2"]  # records steps 3 and 4


def _record(*args: str, cwd: Path | None = None, timeout: float = 240,
            stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([PY, "-m", "profiler_kit", "record", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=cwd, env=env, input=stdin)


RUNS = {
    "cnn": lambda d: [*SCHEDULE, "-o", str(d / "cnn"), "--", PY,
                      str(SCRIPTS / "cnn_dataloader.py"), "--epochs", "2", "--batches", "4"],
    "gan": lambda d: [*SCHEDULE, "--keep-running", "-o", str(d / "gan"),
                      str(SCRIPTS / "gan.py"), "--iterations", "7"],
    "ddp": lambda d: [*SCHEDULE, "-o", str(d / "ddp"), "--", PY, "-m", "torch.distributed.run",
                      "--standalone", "--nproc-per-node", "2", str(SCRIPTS / "ddp_gloo.py"),
                      "--iterations", "10"],
    "own": lambda d: ["-o", str(d / "own"), "--", PY, str(SCRIPTS / "own_profiler.py"),
                      str(d / "own_logs")],
    "raises": lambda d: ["--wait", "1", "--warmup", "1", "--active", "5", "-o",
                         str(d / "raises"), str(SCRIPTS / "raises.py"), "--fail-at", "4"],
    "never": lambda d: ["--window-after", "0.2", "--window", "0.5", "-o", str(d / "never"),
                        str(SCRIPTS / "never_steps.py"), "--seconds", "1.5"],
}


# A terminal's foreground job gets Ctrl-C with SIGINT at its default; a suite started in
# the background by a script (``cmd &``, as CI may be) runs with SIGINT ignored, which every
# process it starts inherits through exec, and the recording would never see the Ctrl-C.
# It is started as a terminal would start it (exec keeps the pid, which --signal names).
FOREGROUND = [PY, "-c", "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL);"
              " os.execv(sys.argv[1], sys.argv[1:])"]


def _on_signal_then_ctrl_c(d: Path) -> subprocess.CompletedProcess:
    """--on-signal: nothing until SIGUSR2 (profkit record --signal PID); then Ctrl-C in the
    middle of the capture, sent to the whole process group as a terminal does."""
    # a capture that cannot finish first (10000 steps of 20 ms): Ctrl-C, sent 12 steps in,
    # lands in it even when this thread is slow to run on a loaded machine (in the full
    # suite, 500 steps of 1 ms and then of 5 ms were all recorded before Ctrl-C came)
    cmd = [*FOREGROUND, PY, "-m", "profiler_kit", "record", "--on-signal", "--warmup", "0",
           "--active", "10000", "-o", str(d / "sig"), str(SCRIPTS / "manual_sgd.py"),
           "--iterations", "100000", "--pause-ms", "20"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out: list[str] = []
    err: list[str] = []
    readers = [threading.Thread(target=lambda f=f, into=into: into.extend(f), daemon=True)
               for f, into in ((proc.stdout, out), (proc.stderr, err))]
    for t in readers:
        t.start()

    def iterations() -> int:
        return sum(line.startswith("iteration") for line in list(out))

    def wait_for(n: int) -> None:
        deadline = time.monotonic() + 120
        while iterations() < n and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)

    try:
        wait_for(3)
        before = (d / "sig" / "main.pt.trace.json").exists()
        signalled = subprocess.run([PY, "-m", "profiler_kit", "record", "--signal",
                                    str(proc.pid)], capture_output=True, text=True)
        assert signalled.returncode == 0, signalled.stderr
        deadline = time.monotonic() + 120  # the signal reached the script: it records
        while "profkit: recording steps" not in "".join(err) and proc.poll() is None \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        wait_for(iterations() + 12)  # a few steps into the capture
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=120)  # the heaviest moment of the suite: beside three others
        except subprocess.TimeoutExpired:
            raise AssertionError("no exit 120 s after Ctrl-C; its output:\n"
                                 + "".join(err)[-3000:]) from None
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    for t in readers:
        t.join(timeout=30)
    assert before is False, "recorded before the signal"
    return subprocess.CompletedProcess(cmd, proc.returncode, "".join(out), "".join(err))


# which recordings each test needs: only those of the tests selected are made
NEEDS = {"test_cnn_with_dataloader_workers": "cnn",
         "test_gan_two_optimizers_are_one_step_and_keep_running": "gan",
         "test_manual_sgd_steps_by_backward": "sig",
         "test_torchrun_ddp_every_rank_recorded": "ddp",
         "test_own_profiler_is_used_not_clashed": "own",
         "test_script_that_raises_keeps_traceback_status_and_capture": "raises",
         "test_script_that_never_steps_gets_a_time_window": "never",
         "test_compiled_model_with_amp_and_grad_accumulation": "compiled",
         "test_on_signal_then_ctrl_c_keeps_the_captured_steps": "sig"}
# the time window falls due half a second in, while torch.compile compiles the first step
# (as on any loaded machine with the default of 5 s): it waits until no compilation is
# under way, where a profiler started inside one recorded every later event twice or
# crashed the script
RUNS["compiled"] = lambda d: [*SCHEDULE, "--window-after", "0.5", "--window", "0.5", "-o",
                              str(d / "compiled"), str(SCRIPTS / "compiled.py"),
                              "--iterations", "6"]
# the longest first, so that the short ones fill the gaps
ORDER = ("compiled", "ddp", "cnn", "sig", "never", "gan", "own", "raises")


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory):
    """The recordings the selected tests need, started together (four at a time);
    name -> (future of the finished process, its run folder)."""
    d = tmp_path_factory.mktemp("record")
    wanted = {NEEDS[i.name.split("[")[0]] for i in request.session.items
              if i.name.split("[")[0] in NEEDS}
    pool = ThreadPoolExecutor(max_workers=4)
    futures = {}
    for name in (n for n in ORDER if n in wanted):
        if name == "sig":
            futures[name] = (pool.submit(_on_signal_then_ctrl_c, d), d / name)
        else:
            futures[name] = (pool.submit(_record, *RUNS[name](d)), d / name)
    yield futures, d
    pool.shutdown(wait=True, cancel_futures=True)


def _get(runs, name):
    futures, _ = runs
    future, folder = futures[name]
    return future.result(), folder


def _record_json(folder: Path) -> dict:
    return json.loads((folder / "record.json").read_text())


def _trace(path: Path) -> list[dict]:
    return json.loads(path.read_text())["traceEvents"]


def _steps_in(events: list[dict]) -> list[int]:
    return sorted(int(e["name"].split("#")[1]) for e in events
                  if e.get("name", "").startswith("ProfilerStep#") and e.get("ph") == "X")


def _iterations(stdout: str, prefix: str = "iteration") -> list[int]:
    return [int(line.split()[line.split().index("iteration") + 1])
            for line in stdout.splitlines() if line.startswith(prefix)]


def _ok(r: subprocess.CompletedProcess, status: int = 0) -> None:
    assert r.returncode == status, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"


# ---- the scripts ---------------------------------------------------------------------------
def test_cnn_with_dataloader_workers(runs):
    r, folder = _get(runs, "cnn")
    _ok(r)  # the script checks that every batch came from a worker process
    rec = _record_json(folder)
    assert rec["steps"]["source"] == "optimizer"
    assert rec["steps"]["found_by"] == "optimizer steps (Adam)"
    assert rec["steps"]["captured"] == [[3, 4]]
    assert rec["stopped_by_profkit"] and rec["exit_status"] == 0
    # stopped right after step 4's optimizer step, before the script printed it
    assert _iterations(r.stdout) == [0, 1, 2, 3]
    assert "stopping the script (profkit record --keep-running lets it finish)" in r.stderr
    assert _steps_in(_trace(folder / "main.pt.trace.json")) == [3, 4]
    # the workers are not recorded: one process reported
    assert len(list((folder / ".record").glob("*.json"))) == 1
    assert rec["processes"][0]["seen"]["dataloader"] == 5
    for name in ("summary.md", "report.html"):
        assert (folder / name).is_file()
    assert (folder / "summary.md").read_text().startswith("# profkit record: ")
    assert "Steps: 2 × ProfilerStep" in r.stdout  # the analysis right after the capture


def test_gan_two_optimizers_are_one_step_and_keep_running(runs):
    r, folder = _get(runs, "gan")
    _ok(r)
    assert _iterations(r.stdout) == list(range(7))  # --keep-running: the script finished
    rec = _record_json(folder)
    assert not rec["stopped_by_profkit"]
    assert rec["steps"]["optimizers"] == ["Adam", "Adam"]
    assert rec["steps"]["captured"] == [[3, 4]]
    assert rec["steps"]["completed"] == 7  # one step per iteration, not per optimizer
    events = _trace(folder / "main.pt.trace.json")
    for e in (e for e in events if e.get("name", "").startswith("ProfilerStep#")):
        inside = [o for o in events if o.get("name", "").startswith("Optimizer.step#")
                  and e["ts"] <= o["ts"] <= e["ts"] + e["dur"]]
        assert len(inside) == 2, e["name"]  # the discriminator's and the generator's


def test_manual_sgd_steps_by_backward(runs):
    """The hand-written SGD loop (recorded on a signal, below): steps are backward() calls,
    each marked in the trace, numbered as the script's iterations."""
    r, folder = _get(runs, "sig")
    rec = _record_json(folder)
    assert rec["steps"]["source"] == "backward"
    assert rec["steps"]["found_by"] == "backward() calls (no optimizer steps)"
    assert rec["steps"]["seen"]["optimizer"] == 0
    printed = _iterations(r.stdout)
    assert printed == list(range(len(printed)))
    # backward() of iteration N ends step N: the last whole step is the last printed
    # iteration, or the one whose update was cut by Ctrl-C
    assert rec["captures"][0]["steps"][-1] in (printed[-1], printed[-1] + 1)


def test_torchrun_ddp_every_rank_recorded(runs):
    from profiler_kit import api

    r, folder = _get(runs, "ddp")
    _ok(r)
    rec = _record_json(folder)
    assert sorted(p["rank"] for p in rec["processes"]) == [0, 1]
    assert all(p["captured"] == [[3, 4]] for p in rec["processes"])
    for rank in (0, 1):
        events = _trace(folder / f"rank{rank}.pt.trace.json")
        assert _steps_in(events) == [3, 4]
        for line in r.stdout.splitlines():
            assert not line.startswith(f"rank {rank} iteration 4")
    info = json.loads((folder / "rank1.pt.trace.json").read_text())["distributedInfo"]
    assert info["rank"] == 1 and info["world_size"] == 2
    assert r.stderr.count("profkit: recording steps") == 1  # rank 0 speaks for the job
    merged = api.merge(folder, folder.parent / "ddp_job.json")
    assert len(merged.ranks) == 2


def test_own_profiler_is_used_not_clashed(runs):
    r, folder = _get(runs, "own")
    _ok(r)
    assert _iterations(r.stdout) == list(range(8))  # never stopped: its profiler, its way
    rec = _record_json(folder)
    assert rec["steps"]["source"] == "profiler"
    assert [c["kind"] for c in rec["captures"]] == ["own"]
    (name,) = rec["captures"][0]["files"]
    assert name.startswith("mine.") and (folder.parent / "own_logs" / name).is_file()
    assert _steps_in(_trace(folder / name)) == [2, 3]  # its schedule: wait 1, warmup 1
    assert not (folder / "main.pt.trace.json").exists()
    assert "its trace is used" in r.stderr


def test_script_that_raises_keeps_traceback_status_and_capture(runs):
    r, folder = _get(runs, "raises")
    _ok(r, 1)
    assert "Traceback (most recent call last):" in r.stderr
    assert "ValueError: bad batch at iteration 4" in r.stderr
    assert "bootstrap" not in r.stderr and "runpy" not in r.stderr
    tb = r.stderr[r.stderr.index("Traceback"):]
    assert tb.splitlines()[1].strip().startswith(f'File "{SCRIPTS / "raises.py"}"')
    rec = _record_json(folder)
    assert rec["captures"][0]["steps"] == [2, 3] and not rec["captures"][0]["complete"]
    assert "kept steps 2-3 (2 of 5 steps)" in r.stderr
    assert _steps_in(_trace(folder / "main.pt.trace.json")) == [2, 3]  # no half step 4


def test_script_that_never_steps_gets_a_time_window(runs):
    r, folder = _get(runs, "never")
    _ok(r)
    assert "rounds" in r.stdout
    rec = _record_json(folder)
    assert [c["kind"] for c in rec["captures"]] == ["window"]
    assert "the script never stepped: no optimizer step, backward() call, DataLoader batch" \
        in r.stderr
    assert "time window instead" in r.stderr
    events = _trace(folder / "main.pt.trace.json")
    assert not _steps_in(events)
    assert any(e.get("name") == "aten::mm" for e in events)


@pytest.mark.slow
def test_compiled_model_with_amp_and_grad_accumulation(runs):
    r, folder = _get(runs, "compiled")
    _ok(r)
    rec = _record_json(folder)
    assert rec["steps"]["found_by"] == "optimizer steps (AdamW)"
    assert rec["steps"]["seen"]["backward"] == 2 * rec["steps"]["seen"]["optimizer"]
    assert rec["steps"]["captured"] == [[3, 4]]
    assert _iterations(r.stdout) == [0, 1, 2, 3]
    events = _trace(folder / "main.pt.trace.json")
    assert _steps_in(events) == [3, 4]
    # each event once: one optimizer step per recorded step
    assert sum(e.get("name") == "Optimizer.step#AdamW.step" for e in events) == 2
    assert any(e.get("name", "").startswith("Torch-Compiled Region") for e in events)


def test_on_signal_then_ctrl_c_keeps_the_captured_steps(runs):
    """Recorded only after the signal; Ctrl-C mid-capture keeps the steps recorded so far,
    and the exit status is the interrupted script's."""
    r, folder = _get(runs, "sig")
    _ok(r, 130)
    assert "KeyboardInterrupt" in r.stderr
    assert "signal received: recording the next steps" in r.stderr
    rec = _record_json(folder)
    (capture,) = rec["captures"]
    assert not capture["complete"] and len(capture["steps"]) >= 1
    assert capture["steps"][0] >= 3  # after the signal, sent at the third iteration
    assert _steps_in(_trace(folder / "main.pt.trace.json")) == capture["steps"]


# ---- running as plain python -------------------------------------------------------------
def test_the_script_runs_as_under_plain_python(tmp_path):
    """__main__, sys.argv, sys.path[0], __file__, the working folder, stdin, exit status."""
    (tmp_path / "sub").mkdir()
    script = os.path.relpath(SCRIPTS / "probe.py", tmp_path)
    plain = subprocess.run([PY, script, "a", "--b"], capture_output=True, text=True,
                           cwd=tmp_path, input="hello")
    assert plain.returncode == 3
    r = _record("-o", "out", "--", PY, script, "a", "--b", cwd=tmp_path, stdin="hello")
    assert r.returncode == 3, r.stderr
    assert json.loads(r.stdout.splitlines()[0]) == json.loads(plain.stdout)
    assert "never imported torch" in r.stderr
    assert _record_json(tmp_path / "out")["exit_status"] == 3


def test_a_module_runs_as_under_python_m(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text((SCRIPTS / "probe.py").read_text())
    plain = subprocess.run([PY, "-m", "pkg.mod", "x"], capture_output=True, text=True,
                           cwd=tmp_path, input="")
    r = _record("-o", "out", "--", PY, "-m", "pkg.mod", "x", cwd=tmp_path, stdin="")
    assert r.returncode == plain.returncode == 3, r.stderr
    assert json.loads(r.stdout.splitlines()[0]) == json.loads(plain.stdout)


# ---- bad input: one line, exit 2, nothing of the user's touched ---------------------------
@pytest.mark.parametrize("args, message", [
    (["nothere.py"], "nothere.py: no such file (the script to record)"),
    (["--", "python", "nothere.py"], "nothere.py: no such file (the script to record)"),
    (["--", "ls", "-l"], "ls: not a Python command"),
    (["--", "python", "-c", "print(1)"], "-c: profkit record runs scripts and modules"),
    (["--", "python", "-m", "no_such_module_here"], "no module named 'no_such_module_here'"),
    ([], "name the script to record"),
    (["--active", "0", "x.py"], "--active must be at least 1"),
    (["--signal", "999999999"], "--signal 999999999: no such process"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["record", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "traces").exists()


def test_the_signal_goes_only_to_a_recording_on_signal(capsys):
    """SIGUSR2 ends a process that does not handle it: another process is left alone."""
    other = subprocess.Popen(["sleep", "30"])
    try:
        assert cli.main(["record", "--signal", str(other.pid)]) == 2
        assert "not a recording started with --on-signal" in capsys.readouterr().err
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_an_output_folder_with_other_files_is_refused(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert cli.main(["record", "-o", str(folder), str(SCRIPTS / "probe.py")]) == 2
    err = capsys.readouterr().err
    assert "holds other files (notes.txt); refusing to write into it" in err
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "keep me"
    (folder / "notes.txt").unlink()
    (folder / "record.json").write_text("{}")
    assert cli.main(["record", "-o", str(folder), str(SCRIPTS / "probe.py")]) == 2
    assert "holds an earlier recording" in capsys.readouterr().err


# ---- the command line --------------------------------------------------------------------
def test_commands_are_rewritten_to_start_through_the_bootstrap(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("")
    boot = command_line.BOOTSTRAP
    t = command_line.parse(["train.py", "--lr", "1"])
    assert t.argv == [PY, boot, "train.py", "--lr", "1"] and t.name == "train"
    t = command_line.parse(["--", "python3", "-u", "-X", "dev", "-W", "ignore", "train.py", "-m"])
    assert t.argv == ["python3", "-u", "-X", "dev", "-W", "ignore", boot, "train.py", "-m"]
    t = command_line.parse(["python", "-um", "json.tool", "--help"])
    assert t.argv == ["python", "-u", boot, "-m", "json.tool", "--help"] and t.module
    torchrun = str(Path(PY).with_name("torchrun"))
    t = command_line.parse([torchrun, "--nproc-per-node", "2", "--standalone",
                            "--rdzv-id=5", "train.py", "--epochs", "3"])
    assert t.kind == "torchrun"
    assert t.argv == [torchrun, "--nproc-per-node", "2", "--standalone", "--rdzv-id=5", boot,
                      "train.py", "--epochs", "3"]
    t = command_line.parse([torchrun, "-m", "--nnodes", "1", "json.tool", "x"])
    assert t.argv == [torchrun, "--nnodes", "1", boot, "-m", "json.tool", "x"]
    t = command_line.parse([torchrun, "--no-python", "python", "-u", "train.py"])
    assert t.argv == [torchrun, "--no-python", "python", "-u", boot, "train.py"]
    t = command_line.parse(["python", "-m", "torch.distributed.run", "--nproc_per_node=2",
                            "train.py"])
    assert t.argv == ["python", "-m", "torch.distributed.run", "--nproc_per_node=2", boot,
                      "train.py"]


def test_torchrun_flags_known_here_are_torchruns_flags():
    """The options that take no value, known by name (the parent never imports torch)."""
    from torch.distributed.run import get_args_parser

    flags = {s for a in get_args_parser()._actions if a.nargs == 0 for s in a.option_strings}
    assert flags - {"--print-completion", "--print_completion"} <= command_line._TORCHRUN_FLAGS


def test_the_command_starts_at_the_first_word_that_is_not_an_option():
    from profiler_kit.commands.record import split_command

    assert split_command(["record", "--active", "3", "train.py", "--active", "9"]) == \
        ["record", "--active", "3", "--", "train.py", "--active", "9"]
    assert split_command(["record", "--", "python", "t.py"]) == ["record", "--", "python", "t.py"]
    assert split_command(["--debug", "record", "--memory", "t.py"]) == \
        ["--debug", "record", "--memory", "--", "t.py"]
