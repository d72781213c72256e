"""What the GPU's own counters measured (:mod:`profiler_kit.analysis.perf.gpu_counters`):
SM active % beside the SM efficiency profkit estimates, memory throughput, power and
energy, clocks and temperature, per device and step; throttling named; the series over
the steps' timeline in the HTML report."""

from __future__ import annotations

from typing import Any

from profiler_kit.analysis.perf.gpu_counters import GpuCounters, Throttle, WindowCounters
from profiler_kit.analysis.trace_analysis import TraceAnalysis
from profiler_kit.render.html.figures import Chart, axis, ms, series_color
from profiler_kit.render.html.trace_charts import name_of
from profiler_kit.render.json.plain import plain
from profiler_kit.render.markdown.tables import table
from profiler_kit.render.sections.base import Page, Presenter, View
from profiler_kit.render.sections.blocks import WHOLE, Block, Column, Grid, Lines
from profiler_kit.render.wording import units

SECTION = "Below the busy line"
ABSENT = ("GPU counters: none in this trace (PyTorch's cupti_monitor backend samples "
          "SM activity, memory throughput, power and clocks: profkit record --counters)")
# units in the headers, bare figures in the cells: the table fits 80 columns
STEP_HEADER = ("step", "SM act. %", "est. %", "DRAM %", "W", "J", "SM MHz", "°C")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} %"


def _cell(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _num(value: float | None, unit: str, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f} {unit}"


def estimated(a: TraceAnalysis, device: int, step: int | None) -> float | None:
    """profkit's SM efficiency from launch sizes over the same window (a fraction)."""
    sm = a.sm
    if sm is None or not sm.available:
        return None
    rows = sm.devices if step is None else [s for s in sm.steps if s.step == step]
    return next((r.sm_efficiency for r in rows if r.device == device), None)


def window_line(a: TraceAnalysis, w: WindowCounters, samples: int) -> str:
    """One device's counters over its whole window, in a line."""
    parts = []
    if w.sm_active_pct is not None:
        est = estimated(a, w.device, None)
        parts.append(f"SM active {_pct(w.sm_active_pct)} (" + (
            f"SM efficiency estimated from launch sizes: {units.percent(est)}"
            if est is not None else "no estimate from launch sizes to set beside it") + ")")
    if w.dram_bw_pct is not None:
        parts.append(f"DRAM throughput {_pct(w.dram_bw_pct)} of peak")
    if w.power_w is not None:
        parts.append(f"power {_num(w.power_w, 'W')}, {_num(w.energy_j, 'J', 1)} over "
                     f"{units.duration(w.dur_ns)}")
    if w.sm_clock_mhz is not None:
        parts.append(f"SM clock {_num(w.sm_clock_mhz, 'MHz')} (lowest "
                     f"{_num(w.sm_clock_min_mhz, 'MHz')})")
    if w.memory_clock_mhz is not None:
        parts.append(f"memory clock {_num(w.memory_clock_mhz, 'MHz')}")
    if w.temperature_c is not None:
        parts.append(f"up to {w.temperature_c:.0f} °C")
    where = "the steps' window" if a.window == "steps" else "the whole trace"
    head = f"gpu:{w.device} counters, measured ({samples:,} samples; {where})"
    return f"{head}: " + ("; ".join(parts) if parts else "no series profkit reads")


def throttle_line(throttles: list[Throttle]) -> str:
    """One device's throttled steps in a line (its lowest clock, its highest heat)."""
    t = min(throttles, key=lambda x: x.to_mhz)
    drop = 1 - t.to_mhz / t.from_mhz
    heats = [x.temperature_c for x in throttles if x.temperature_c is not None]
    heat = f" at up to {max(heats):.0f} °C" if heats else ""
    steps = ", ".join(str(x.step) for x in throttles)
    return (f"gpu:{t.device} clock throttled in step{'s' if len(throttles) > 1 else ''} "
            f"{steps}: SM clock {t.from_mhz:,.0f} → {t.to_mhz:,.0f} MHz (−{drop:.0%}){heat}; "
            f"such a step runs slower with no change in the code (a power, temperature or "
            f"clock limit)")


def _lines(a: TraceAnalysis) -> list[str]:
    c = a.counters
    if c is None:
        return [ABSENT] if a.timeline.devices else []
    lines = [window_line(a, w, c.samples) for w in c.windows if w.step is None]
    devices = sorted({t.device for t in c.throttles})
    return lines + [throttle_line([t for t in c.throttles if t.device == d]) for d in devices]


def _title(c: GpuCounters) -> str:
    items = f"; {c.items_per_step:,} items a step" if c.items_per_step else ""
    return (f"GPU counters per step (measured; est.: SM efficiency from launch sizes; "
            f"SM MHz: the lowest; °C: the highest{items})")


def _header(c: GpuCounters) -> tuple[str, ...]:
    return STEP_HEADER if not c.items_per_step else (*STEP_HEADER[:6], "mJ/item",
                                                     *STEP_HEADER[6:])


def _step_rows(a: TraceAnalysis, c: GpuCounters) -> list[tuple[str, ...]]:
    several = len({w.device for w in c.windows}) > 1
    rows = []
    for w in c.windows:
        if w.step is None:
            continue
        est = estimated(a, w.device, w.step)
        label = f"{w.step} (gpu:{w.device})" if several else str(w.step)
        per_item = (_cell(None if w.energy_per_item_j is None else w.energy_per_item_j * 1e3,
                          2),) if c.items_per_step else ()
        rows.append((label, _cell(w.sm_active_pct, 1),
                     _cell(None if est is None else est * 100, 1), _cell(w.dram_bw_pct, 1),
                     _cell(w.power_w), _cell(w.energy_j, 2), *per_item,
                     _cell(w.sm_clock_min_mhz), _cell(w.temperature_c)))
    return rows


class GpuCountersPresenter(Presenter):
    fields = ("counters",)
    order = 70

    def console(self, a: TraceAnalysis, view: View) -> list[Block]:
        blocks: list[Block] = [Lines.of(line, "dim" if line == ABSENT else "")
                               for line in _lines(a)]
        rows = _step_rows(a, a.counters) if a.counters is not None else []
        if rows:
            header = _header(a.counters)
            columns = tuple(Column(h, justify="left" if i == 0 else "right")
                            for i, h in enumerate(header))
            blocks.append(Grid(_title(a.counters), columns, tuple(rows),
                               fit={h: WHOLE for h in header}))
        return blocks

    def markdown(self, a: TraceAnalysis, view: View) -> list[str]:
        lines = [f"- {line}" for line in _lines(a)]
        rows = _step_rows(a, a.counters) if a.counters is not None else []
        if rows:
            lines += ["", _title(a.counters) + ":", ""]
            lines += table(_header(a.counters), rows)
        return lines + [""] if lines and lines[-1] else lines

    def json(self, a: TraceAnalysis) -> dict[str, Any]:
        return {"gpu_counters": plain(a.counters)}

    def charts(self, page: Page) -> list[Chart]:
        """Each trace's measured series over its window, the steps' bounds marked."""
        charts = []
        for a in page.analyses:
            c = a.counters
            if c is None or not c.tracks:
                continue
            data = []
            for j, t in enumerate(c.tracks):
                percent = t.name.endswith("(%)")
                data.append({
                    "type": "scatter", "mode": "lines", "name": f"gpu:{t.device} {t.name}",
                    "x": [ms(x) for x in t.offset_ns], "y": list(t.value),
                    "yaxis": "y" if percent else "y2",
                    # a sample holds until the next: steps, not slopes
                    "line": {"color": series_color(j), "shape": "hv"},
                    "hovertemplate": f"{t.name}: %{{y:.4g}}<extra>%{{x:.4g}} ms</extra>"})
            starts = {w.device: w.start_ns for w in c.windows if w.step is None}
            shapes = [{"type": "line", "xref": "x", "yref": "paper", "y0": 0, "y1": 1,
                       "x0": ms(w.start_ns - starts[w.device]),
                       "x1": ms(w.start_ns - starts[w.device]),
                       "line": {"dash": "dot", "width": 1, "color": "#888"}}
                      for w in c.windows if w.step is not None and w.device in starts]
            charts.append(Chart(
                id=f"gpu-counters-{len(charts)}", section=SECTION,
                title=f"GPU counters over time: {name_of(a)}",
                caption="What the GPU's own counters measured while the trace recorded, "
                        "each sample held until the next: SM active and DRAM throughput in "
                        "% (left axis), power, clocks and temperature (right axis); dotted "
                        "lines mark where steps begin.",
                data=data,
                layout={"xaxis": axis("time in the window (ms)"), "yaxis": axis("%"),
                        "yaxis2": {**axis("W, MHz, °C"), "overlaying": "y",
                                   "side": "right"},
                        "shapes": shapes}))
        return charts
