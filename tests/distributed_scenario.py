"""A tiny two-rank scenario for the launcher tests: a small MLP under DDP.

``--fail`` makes rank 1 misbehave at step ``--fail-step`` (counted over every step the
rank runs): ``kill`` (SIGKILL itself), ``exit`` (``os._exit(3)``), ``raise`` or ``hang``.
``--grandchild`` makes every rank start a sleeping child process first, so a test can
check that ending a run leaves nothing behind. ``--fail-note`` names a file where rank 1
writes the time (``time.time()``) at which it misbehaves.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from profiler_kit.measure import distributed
from profiler_kit.scenario import Param, RunConfig, Scenario, Strategy, Workload

GRANDCHILD_MARK = "profkit-test-grandchild"


class TinyDDP(Scenario):
    name = "tiny-ddp"
    description = "a small MLP under DDP, for launcher tests"
    params = (
        distributed.RANK_TIMEOUT_PARAM,
        Param("fail", str, "none", "how rank 1 fails", choices=("none", "kill", "exit",
                                                               "raise", "hang")),
        Param("fail_step", int, 3, "the step at which rank 1 fails"),
        Param("grandchild", str, "", "a marker: start a sleeping child with it"),
        Param("fail_note", str, "", "a file: rank 1 writes when it misbehaves"),
    )
    strategies = (
        Strategy("w2", "two ranks", processes=True, world_size=2),
        Strategy("w1", "one rank (rank 1 does not exist, so nothing fails)", processes=True,
                 world_size=1),
    )
    baseline = "w2"  # runs first, so a failing w2 is followed by w1
    item_unit = "samples"
    supports_amp = False

    def build(self, strategy: Strategy, config: RunConfig) -> Any:
        return TinyWorkload(config)


class TinyWorkload(Workload):
    def __init__(self, config: RunConfig) -> None:
        import torch
        from torch.nn.parallel import DistributedDataParallel

        self.config = config
        self.device = torch.device(config.device)
        self.devices = [self.device]
        self.items_per_step = 4
        self.info = {"rank": config.rank, "world_size": config.world_size}
        self.steps = 0
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                    torch.nn.Linear(16, 2))
        self.model = DistributedDataParallel(model, process_group=distributed.group())
        self.x = torch.randn(4, 8)
        self.y = torch.randn(4, 2)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        mark = config.params.get("grandchild")
        if mark:
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", mark])

    def step(self) -> None:
        from torch.profiler import record_function

        self.steps += 1
        if self.config.rank == 1 and self.steps == self.config.params["fail_step"]:
            how = self.config.params["fail"]
            if self.config.params["fail_note"]:
                with open(self.config.params["fail_note"], "w") as note:
                    note.write(str(time.time()))
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif how == "exit":
                os._exit(3)
            elif how == "raise":
                raise ValueError(f"rank 1 gave up at step {self.steps}")
            elif how == "hang":
                time.sleep(600)
        with record_function("forward"):
            loss = ((self.model(self.x) - self.y) ** 2).mean()
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            self.opt.step()
            self.opt.zero_grad()

    def outputs(self) -> list[Any]:
        return [self.model.module(self.x).detach()]

    def close(self) -> None:
        pass
