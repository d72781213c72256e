"""Scenario, Strategy and Param: what a workload is and the ways of running it.

A scenario is a workload plus the strategies to compare on it. The runner asks the
scenario to ``build`` one :class:`Workload` per strategy and times and profiles it;
the scenario never times anything itself. This module does not import torch, so
``profkit list`` and argument checking stay light.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from profiler_kit.errors import UsageError

if TYPE_CHECKING:
    from profiler_kit.results import RunResult, StrategyResult

# Requirements a strategy may declare; devices.unmet_requirement() explains each.
CUDA = "cuda"
MULTI_GPU = "multi_gpu"  # two or more CUDA devices

BUILTIN_SCENARIOS = ("concurrent", "multimodel", "pipeline", "ddp")


@dataclass(frozen=True)
class Param:
    """One scenario parameter, exposed on the command line as ``--name`` (``_`` -> ``-``)."""

    name: str
    type: type  # int, float, str or bool
    default: Any  # the default on CPU: small enough to finish in about a minute on 2 cores
    help: str
    cuda_default: Any = None  # the default when the run's device is CUDA; None: same as default
    choices: tuple[Any, ...] = ()
    sweep: bool = False  # accepts a comma-separated list; every value is one point of the run
    min_value: float | None = None  # smallest allowed value for numbers (inclusive)
    # a file the run writes (``str`` params): checked before the run starts, as every
    # output path is (see profiler_kit.util.outputs); "" means none
    output: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def default_for(self, device: str) -> Any:
        if device.startswith("cuda") and self.cuda_default is not None:
            return self.cuda_default
        return self.default


@dataclass(frozen=True)
class Strategy:
    """One way of running the scenario's work.

    ``opt_in`` names the flag that adds the strategy to a run (``streams`` for
    ``--streams``); strategies without one always run. ``amp`` marks the AMP twin
    that ``--amp`` derives from every strategy (in the device's AMP dtype unless
    ``options["amp_dtype"]`` names one); ``processes`` marks strategies
    that run as several ``torch.distributed`` ranks (their workloads ask
    :mod:`profiler_kit.measure.distributed` for their process group and device).
    """

    name: str
    help: str
    requires: tuple[str, ...] = ()
    opt_in: str | None = None
    amp: bool = False
    processes: bool = False
    world_size: int = 1
    options: Mapping[str, Any] = field(default_factory=dict)

    def amp_twin(self) -> Strategy:
        return replace(self, name=f"{self.name}+amp", amp=True)

    @property
    def base_name(self) -> str:
        return self.name.removesuffix("+amp")


@dataclass(frozen=True)
class RunConfig:
    """Everything a workload needs to know to build itself for one strategy."""

    params: Mapping[str, Any]  # one value per parameter (sweeps already expanded)
    device: str  # "cpu" or "cuda" (the first device; multi-device strategies pick the others)
    amp_dtype: str | None = None  # "float16" / "bfloat16" for AMP twins, else None
    seed: int = 0
    rank: int = 0
    world_size: int = 1


PhaseList = Sequence[tuple[str, Callable[[], None]]]


class Workload(ABC):
    """What ``Scenario.build`` returns: one strategy, ready to run. Subclass it.

    Inputs are created on the device in ``build`` (or ``__init__``); ``step`` does one
    iteration and marks its phases with ``torch.profiler.record_function``. The
    attributes below have defaults a workload overrides when they apply.
    """

    items_per_step: int = 0  # images, samples...: throughput is items_per_step / step time
    devices: Sequence[Any] = ()  # every torch.device a step touches; all synchronized per sample
    # recorded in run.json's strategy ``info`` (e.g. ``param_count``)
    info: Mapping[str, Any] = MappingProxyType({})
    # ops run in worker threads: the profiler then follows every thread, at the cost of
    # its CPU memory events
    threaded: bool = False
    # the relative error of norm an AMP twin's outputs may have (None: its dtype's default)
    amp_tolerance: float | None = None
    # float32 strategies: None holds them to allclose; a number to that relative error of
    # norm instead (e.g. gradients of a training step whose kernels sum in another order)
    float32_tolerance: float | None = None

    @abstractmethod
    def step(self) -> None:
        """One iteration of the strategy."""

    @abstractmethod
    def outputs(self) -> Sequence[Any]:
        """Tensors to compare with the baseline, computed from the initial weights and inputs.

        Forward outputs, plus gradients when training. Must not change the state that
        ``step`` times.
        """

    def phases(self) -> PhaseList:
        """The step as named phases, in order (``forward``, ``backward``, ...); the timing
        pass also times each, synchronizing between them. Empty: one phase, ``step``."""
        return ()

    def close(self) -> None:
        """Free what ``build`` made (threads, process groups); called once, after measuring."""
        return None




def check_workload(workload: Workload, where: str) -> None:
    """UsageError naming the first attribute the runner needs that ``workload`` lacks:
    ``devices`` (a non-empty list of torch devices) and ``items_per_step`` (an int >= 0,
    0 only for ranks that feed no items), both set by the workload itself."""
    name = type(workload).__name__
    for attr in ("devices", "items_per_step"):
        if not _set_by(workload, attr):
            raise UsageError(f"{where}: workload {name} does not set {attr} "
                             f"({_WORKLOAD_ATTRIBUTES[attr]})")
    devices = workload.devices
    if isinstance(devices, (str, bytes)) or not isinstance(devices, Sequence) or not devices:
        raise UsageError(f"{where}: workload {name}.devices must be a non-empty list of "
                         f"torch devices, not {devices!r}")
    items = workload.items_per_step
    if isinstance(items, bool) or not hasattr(items, "__index__") or int(items) < 0:
        raise UsageError(f"{where}: workload {name}.items_per_step must be an int >= 0, "
                         f"not {items!r}")


_WORKLOAD_ATTRIBUTES = {
    "devices": "every torch.device a step touches, e.g. [torch.device('cuda')]",
    "items_per_step": "images, samples... one step processes; throughput is items per second",
}


def _set_by(workload: Workload, attr: str) -> bool:
    """Whether ``attr`` is set by the workload or its class, not only Workload's default."""
    if attr in vars(workload):
        return True
    return any(attr in vars(k) for k in type(workload).__mro__ if k not in (Workload, object))


class Scenario(ABC):
    """A workload and the strategies to compare on it. Subclass it in a scenario module."""

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[tuple[Param, ...]] = ()
    strategies: ClassVar[tuple[Strategy, ...]]
    baseline: ClassVar[str]
    item_unit: ClassVar[str] = "images"
    supports_amp: ClassVar[bool] = True

    def expand(self, params: Mapping[str, Any]) -> list[Strategy]:
        """The strategies of a run with these parameters (scenarios may generate them)."""
        return list(self.strategies)

    def skip_reason(self, strategy: Strategy, params: Mapping[str, Any]) -> str | None:
        """Why ``strategy`` cannot run with these parameters (the run records it as skipped
        with this reason), or None when it can. Device needs belong in ``Strategy.requires``."""
        return None

    @abstractmethod
    def build(self, strategy: Strategy, config: RunConfig) -> Workload:
        """Create models and inputs on the device for ``strategy``.

        Raises UsageError on parameters the workload cannot take.
        """

    def next_strategies(self, done: Sequence[StrategyResult],
                        params: Mapping[str, Any]) -> Sequence[Strategy]:
        """More strategies to run at this point, chosen from the results ``done`` so far
        (an adaptive search, e.g. stacking the knobs that won); asked again after each
        batch has run, until it returns none. None by default."""
        return ()

    def validate(self, params: Mapping[str, Any]) -> None:
        """Raise UsageError for parameters the scenario cannot take, before anything runs."""
        return None

    def resolve(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The parameters as they take effect on this machine, as run.json and summary.md
        record them (e.g. ``world_size`` 0, "automatic", becomes the number of ranks)."""
        return params

    def environment(self, device: str) -> Mapping[str, Any]:
        """Entries the run adds to run.json's environment (the runner adds the launcher
        and backend itself where the strategies run as ranks)."""
        return {}

    def annotate_run(self, result: RunResult) -> RunResult:
        """The run's result with more per-strategy ``info`` from the traces (e.g. the
        pipeline bubble per rank); called once every strategy has run."""
        return result

    def finish_run(self, result: RunResult) -> None:
        """Write the scenario's own reports into ``result.run_dir`` (e.g. ddp_report.json)."""
        return None

    def console_tables(self, result: RunResult) -> Sequence[Any]:
        """Extra rich renderables ``profkit run`` prints after its own tables."""
        return ()

    def workload(self, strategy: Strategy, config: RunConfig) -> Workload:
        """:meth:`build`, checked: what it returns must be a :class:`Workload` that
        defines what the runner needs (see :func:`check_workload`)."""
        try:
            built = self.build(strategy, config)
        except TypeError as exc:
            text = str(exc)
            if "abstract" not in text or "instantiate" not in text:
                raise
            raise UsageError(f"scenario {self.name!r}: {text} (a Workload defines step() and "
                             "outputs())") from None
        if not isinstance(built, Workload):
            raise UsageError(
                f"scenario {self.name!r}: build() returned {type(built).__name__}, which is "
                "not a profiler_kit.scenario.Workload subclass (return one object with "
                "step(), outputs(), devices and items_per_step; see the README)"
            )
        check_workload(built, f"scenario {self.name!r}, strategy {strategy.name!r}")
        return built

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise UsageError(f"scenario {self.name!r} has no parameter {name!r}")


def builtin(name: str) -> Scenario:
    """The built-in scenario called ``name``."""
    if name not in BUILTIN_SCENARIOS:
        known = ", ".join(BUILTIN_SCENARIOS)
        raise UsageError(
            f"unknown scenario {name!r}: choose one of {known}, or give a path to a .py file"
        )
    module = importlib.import_module(f"profiler_kit.scenarios.{name}")
    return _scenario_in(module, origin=name)


def import_file(path: Path, module_name: str) -> Any:
    """Import the user's Python file as ``module_name`` (registered in ``sys.modules``, so
    its classes pickle); UsageError when it is not one. Its own errors propagate."""
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def from_file(path: str | Path) -> Scenario:
    """The scenario that the user's Python file defines (one Scenario subclass)."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"scenario file {str(path)!r} does not exist")
    module = import_file(path, f"profkit_user_scenario_{path.stem}")
    return _scenario_in(module, origin=str(path))


def load(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or the user's scenario file by path."""
    if name_or_path.endswith(".py") or "/" in name_or_path:
        return from_file(name_or_path)
    return builtin(name_or_path)


def _scenario_in(module: Any, origin: str) -> Scenario:
    found = [
        obj
        for obj in vars(module).values()
        if inspect.isclass(obj)
        and issubclass(obj, Scenario)
        and not inspect.isabstract(obj)
        and obj.__module__ == module.__name__
    ]
    if len(found) != 1:
        raise UsageError(
            f"{origin}: expected exactly one Scenario subclass, found {len(found)}"
        )
    return found[0]()
