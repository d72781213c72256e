"""Inside one rank, whichever launcher started it: build the workload, measure it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from profiler_kit.measure.distributed import rank_device, rank_threads
from profiler_kit.measure.passes import Measurement, MeasureOptions, measure
from profiler_kit.scenario import RunConfig, Scenario, Strategy


def measure_rank(
    scenario: Scenario,
    strategy: Strategy,
    config: RunConfig,
    options: MeasureOptions,
    strategy_dir: Path,
    rank: int,
    world_size: int,
    local_rank: int,
    beat: Callable[[], None] | None = None,
) -> Measurement:
    """Build the strategy's workload for this rank and measure it; ``beat`` is called
    after building and after every iteration (the launchers' sign of progress)."""
    rank_config = replace(
        config,
        rank=rank,
        world_size=world_size,
        device=rank_device(config.device, local_rank),
    )
    workload = scenario.workload(strategy, rank_config)
    if beat is not None:
        beat()
    # The timing loops report every iteration after timing it: a heartbeat outside the samples.
    progress = (lambda *_args: beat()) if beat is not None else None
    try:
        return measure(workload, options, strategy_dir, worker_name=f"rank{rank}",
                       progress=progress)
    finally:
        workload.close()


def own_files(measurement: Measurement, rank: int) -> Measurement:
    """Keep only the rank's own traces: ranks write into one folder at the same time, so
    each one's "new files" listing also catches its peers' traces."""
    own = tuple(f for f in measurement.trace_files if Path(f).name.startswith(f"rank{rank}."))
    return replace(measurement, trace_files=own)


def set_threads(device: str) -> None:
    """On CPU, each rank runs :func:`rank_threads` threads (ranks share the cores)."""
    import torch

    if not device.startswith("cuda"):
        torch.set_num_threads(rank_threads())
