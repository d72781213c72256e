"""The presenters, in the one order every format follows.

The console and Markdown show a trace's sections in this order, the JSON writes a trace's
keys in it, and the HTML report opens its sections as the presenters first fill them.
Adding an analysis: its module in its room of ``analysis/`` (and its field in
``TraceAnalysis``), its presenter here, its docs page (see docs/architecture.md).
"""

from __future__ import annotations

from profiler_kit.render.sections.base import Body, Page, Presenter, View
from profiler_kit.render.sections.code import Code
from profiler_kit.render.sections.communication import Communication
from profiler_kit.render.sections.cpu_time import CpuTime
from profiler_kit.render.sections.critical_path import CriticalPathPresenter
from profiler_kit.render.sections.gpu_counters import GpuCountersPresenter
from profiler_kit.render.sections.gpu_time import GpuTime
from profiler_kit.render.sections.header import Header
from profiler_kit.render.sections.idle_gaps import IdleGapsPresenter
from profiler_kit.render.sections.kernels import Kernels
from profiler_kit.render.sections.launches import LaunchesPresenter
from profiler_kit.render.sections.memory import MemoryPresenter
from profiler_kit.render.sections.page import (
    AcrossRanks,
    ComparisonTable,
    LeftOut,
    MemoryReportPresenter,
    NotMeasured,
    Parameters,
    RunPredictions,
    RunStrategies,
    ScenarioCharts,
    StepChange,
    Traces,
    WhatIf,
)
from profiler_kit.render.sections.perf import Perf
from profiler_kit.render.sections.phases import PhasesPresenter
from profiler_kit.render.sections.precision import PrecisionPresenter
from profiler_kit.render.sections.recommendations import Recommendations
from profiler_kit.render.sections.sm_occupancy import SmOccupancyPresenter
from profiler_kit.render.sections.step_timeline import StepTimelinePresenter
from profiler_kit.render.sections.steps import Steps
from profiler_kit.render.sections.timeline import GpuTimeline
from profiler_kit.render.sections.trace_notes import TraceNotes
from profiler_kit.render.sections.whole_trace import ComparedNames, WholeTrace

PRESENTERS: tuple[Presenter, ...] = (
    RunStrategies(),
    Header(),
    Steps(),
    TraceNotes(),
    GpuTimeline(),
    SmOccupancyPresenter(),
    GpuCountersPresenter(),
    LaunchesPresenter(),
    IdleGapsPresenter(),
    GpuTime(),
    Kernels(),
    CpuTime(),
    StepChange(),
    WhatIf(),
    CriticalPathPresenter(),
    PrecisionPresenter(),
    Perf(),
    StepTimelinePresenter(),
    Code(),
    MemoryPresenter(),
    PhasesPresenter(),
    Communication(),
    WholeTrace(),
    ComparedNames(),
    AcrossRanks(),
    ScenarioCharts(),
    ComparisonTable(),
    Recommendations(),
    MemoryReportPresenter(),
    RunPredictions(),
    NotMeasured(),
    Parameters(),
    Traces(),
    LeftOut(),
)

__all__ = ["PRESENTERS", "Body", "Page", "Presenter", "View"]
