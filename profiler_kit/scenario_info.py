"""What ``profkit list`` shows: scenarios, strategies, parameters, requirements.

Plain data for the renderer; importing scenario modules never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from profiler_kit.errors import ProfkitError
from profiler_kit.scenario import BUILTIN_SCENARIOS, CUDA, MULTI_GPU, Scenario, Strategy, builtin

_NEEDS = {CUDA: "CUDA", MULTI_GPU: "≥2 GPUs"}


@dataclass(frozen=True)
class StrategyInfo:
    name: str
    help: str
    needs: tuple[str, ...]  # human-readable: "CUDA", "≥2 GPUs", "--streams", "4 processes"
    baseline: bool


@dataclass(frozen=True)
class ParamInfo:
    flag: str
    type: str
    default: Any
    cuda_default: Any  # None when the same as on CPU
    help: str
    sweep: bool


@dataclass(frozen=True)
class ScenarioInfo:
    name: str
    description: str
    strategies: tuple[StrategyInfo, ...]
    params: tuple[ParamInfo, ...]
    supports_amp: bool
    error: str | None = None  # why the scenario could not be loaded


def needs(strategy: Strategy) -> tuple[str, ...]:
    out = [_NEEDS.get(r, r) for r in strategy.requires]
    if strategy.opt_in:
        out.append(f"--{strategy.opt_in}")
    if strategy.processes:
        out.append(f"{strategy.world_size} processes")
    return tuple(out)


def describe(scenario: Scenario) -> ScenarioInfo:
    return ScenarioInfo(
        name=scenario.name,
        description=scenario.description,
        strategies=tuple(
            StrategyInfo(s.name, s.help, needs(s), s.name == scenario.baseline)
            for s in scenario.strategies
        ),
        params=tuple(
            ParamInfo(p.flag, p.type.__name__, p.default,
                      p.cuda_default if p.cuda_default != p.default else None, p.help, p.sweep)
            for p in scenario.params
        ),
        supports_amp=scenario.supports_amp,
    )


def describe_builtins() -> list[ScenarioInfo]:
    infos = []
    for name in BUILTIN_SCENARIOS:
        try:
            infos.append(describe(builtin(name)))
        except (ImportError, ProfkitError) as exc:
            infos.append(ScenarioInfo(name, "", (), (), False, error=str(exc)))
    return infos
