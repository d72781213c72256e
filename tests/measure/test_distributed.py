"""The launcher: ranks spawned on one host, failures named by rank, nothing left behind,
and the same code joining a torchrun launch."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from profiler_kit import scenario
from profiler_kit.measure import distributed, runner
from profiler_kit.measure.distributed import RankFailure, launch
from profiler_kit.measure.passes import MeasureOptions
from profiler_kit.measure.runner import RunRequest
from profiler_kit.scenario import RunConfig

HERE = Path(__file__).parents[1]
TINY = HERE / "distributed_scenario.py"
OPTIONS = MeasureOptions(repeats=1, iterations=4, warmup=1, profile_wait=0, profile_warmup=0,
                         profile_active=2)


def _config(**params: object) -> RunConfig:
    tiny = scenario.from_file(TINY)
    values = {p.name: p.default for p in tiny.params}
    values.update(params)
    return RunConfig(params=values, device="cpu")


def _processes_with(mark: str) -> list[int]:
    """PIDs of live processes whose command line contains ``mark``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if mark in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _run(tmp_path: Path, **params: object):
    tiny = scenario.from_file(TINY)
    strategy = tiny.strategies[0]
    return launch.run_strategy(tiny, strategy, _config(**params), OPTIONS,
                                    tmp_path / "w2")


def test_user_scenario_is_found_by_file() -> None:
    tiny = scenario.from_file(TINY)
    assert launch.scenario_ref(tiny) == str(TINY.resolve())
    assert launch.scenario_ref(scenario.builtin("ddp")) == "ddp"


def test_helpers_for_workloads(monkeypatch: pytest.MonkeyPatch) -> None:
    assert distributed.backend_for("cpu") == "gloo"
    assert distributed.backend_for("cuda") == "nccl"
    assert distributed.rank_device("cuda", 3) == "cuda:3"
    assert distributed.rank_device("cuda:1", 3) == "cuda:4"
    assert distributed.rank_device("cpu", 3) == "cpu"
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert distributed.rank_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert distributed.rank_threads() == 3
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"):
        monkeypatch.delenv(var, raising=False)
    assert not distributed.under_torchrun()
    assert distributed.is_output_rank()
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    assert distributed.under_torchrun()
    assert not distributed.is_output_rank()


def test_environment_names_backend_and_topology() -> None:
    env = distributed.environment("cpu")
    assert env["backend"] == "gloo"
    assert env["launcher"] in ("spawn", "torchrun")
    if env["interconnect_topology"] is None:
        assert "no interconnect topology" in env["interconnect_note"]


@pytest.mark.slow
def test_rank_that_raises_is_named(tmp_path: Path) -> None:
    with pytest.raises(distributed.RankFailure,
                       match=r"rank 1 failed during w2: ValueError: rank 1 gave up at step 2"):
        _run(tmp_path, fail="raise", fail_step=2)
    # the ranks' output stays beside the traces, with the traceback
    assert "ValueError: rank 1 gave up" in (tmp_path / "w2" / "rank1.log").read_text()


@pytest.mark.slow
def test_rank_killed_mid_run_fails_the_strategy_and_the_run_goes_on(tmp_path: Path) -> None:
    mark = f"profkit-grandchild-{tmp_path.name}"
    tiny = scenario.from_file(TINY)
    start = time.monotonic()
    result = runner.run(RunRequest(tiny, {"fail": "kill", "fail_step": 3, "grandchild": mark,
                               "rank_timeout": 300}, device="cpu", options=OPTIONS,
                        out=tmp_path))
    elapsed = time.monotonic() - start
    w2, w1 = result.strategies
    assert (w2.name, w2.status) == ("w2", "failed")
    assert w2.error.startswith(
        "RankFailure: rank 1 exited with code -9 (killed by SIGKILL) during w2"), w2.error
    assert (w1.name, w1.status) == ("w1", "ok"), "the other configurations still run"
    assert len(w1.samples_ns) == OPTIONS.iterations and w1.info == {"rank": 0, "world_size": 1}
    assert [Path(f).name.split(".")[0] for f in w1.trace_files] == ["rank0"]
    assert result.exit_status == 1
    # both configurations' start-up included, which a busy machine can make slow
    assert elapsed < 240, "a dead rank is noticed long before the rank timeout"
    # rank 0 of w2, and what every rank started (also w1's, which succeeded), are gone
    assert _processes_with(mark) == []


@pytest.mark.slow
def test_hung_rank_ends_within_the_rank_timeout(tmp_path: Path) -> None:
    mark = f"profkit-grandchild-{tmp_path.name}"
    note = tmp_path / "hang-began"
    with pytest.raises(distributed.RankFailure,
                       match=r"rank 1 made no progress for 4 s during w2 \(hung\?\)"):
        _run(tmp_path, fail="hang", fail_step=2, grandchild=mark, rank_timeout=4.0,
             fail_note=str(note))
    # Start-up (imports, which a busy machine can make slow) has its own allowance of
    # minutes; once the first step is done, the 4 s limit applies: the hang is noticed
    # 4 s after it began, plus the checks, the stacks and the stopping (timed from the
    # hang, not from the start, so a slow start-up cannot fail the test).
    assert time.time() - float(note.read_text()) < 4.0 + 30
    assert _processes_with(mark) == []


def test_a_rank_that_never_starts_is_named_after_the_startup_allowance(tmp_path: Path) -> None:
    """A rank stuck before its first step (in ``import torch``, say) never releases the
    start timer the launcher gave it: the timer expires after the start-up allowance."""
    from profiler_kit.measure.distributed.watchdog import ProgressTimers, watch

    stuck = ("import faulthandler, signal, sys, time\n"  # dumps its stacks as a rank does
             "faulthandler.register(signal.SIGUSR1, file=open(sys.argv[1], 'w'))\n"
             "time.sleep(60)\n")
    sleepers = [subprocess.Popen([sys.executable, "-c", stuck, str(tmp_path / f"rank{r}.stack")])
                for r in range(2)]

    class Ranks:  # elastic's PContext as watch() sees it: two ranks still running
        def wait(self, timeout: float, period: float) -> None:
            time.sleep(timeout)

        def pids(self) -> dict[int, int]:
            return {r: p.pid for r, p in enumerate(sleepers)}

    try:
        with ProgressTimers(tmp_path, startup_s=0.5) as timers:
            timers.start([sleepers[1].pid])  # rank 0 is past its first step
            with pytest.raises(RankFailure,
                               match=r"^rank 1 did not start within 0.5 s during w2 \(hung "
                                     r"while starting\?\); it was at <string>:3 in <module>; "):
                watch(Ranks(), timers, tmp_path, "w2", timeout_s=0.1)
    finally:
        for p in sleepers:
            p.kill()
            p.wait()


WHERE_SCENARIO = '''
import os
from pathlib import Path

import helper  # beside this file: the folder must be on the rank's sys.path

from profiler_kit.scenario import RunConfig, Scenario, Strategy, Workload


class Where(Scenario):
    name = "where"
    description = "says which folder and which helper module its rank saw"
    strategies = (Strategy("w1", "one rank", processes=True, world_size=1),)
    baseline = "w1"
    supports_amp = False

    def build(self, strategy, config: RunConfig):
        Path("seen.txt").write_text(f"{helper.VALUE} {os.getcwd()}")
        return Noop(config)


class Noop(Workload):
    def __init__(self, config):
        import torch
        self.devices = [torch.device(config.device)]
        self.items_per_step = 1
        self.info = {}

    def step(self):
        pass

    def outputs(self):
        return []

    def close(self):
        pass
'''


def test_a_run_from_another_folder_ranks_in_that_folder(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs in one process (a notebook, a script that measures twice), the second
    from another folder with its own modules: its ranks, forked from a server that the
    first run started, run in the second folder with its sys.path, not the first's."""
    for side in ("a", "b"):
        folder = tmp_path / side
        folder.mkdir()
        (folder / "helper.py").write_text(f"VALUE = {side!r}\n")
        (folder / "where.py").write_text(WHERE_SCENARIO)
    for side in ("a", "b"):
        folder = tmp_path / side
        monkeypatch.chdir(folder)
        monkeypatch.syspath_prepend(str(folder))
        monkeypatch.delitem(sys.modules, "helper", raising=False)
        where = scenario.from_file(folder / "where.py")
        launch.run_strategy(where, where.strategies[0], RunConfig(params={}, device="cpu"),
                            OPTIONS, folder / "out")
        assert (folder / "seen.txt").read_text() == f"{side} {folder}"
