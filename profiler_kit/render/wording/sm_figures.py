"""SM efficiency, achieved occupancy and the limiters as text, shared by the renderers.
Formats only: every number comes from :mod:`profiler_kit.analysis.perf.sm_occupancy`."""

from __future__ import annotations

from profiler_kit.analysis.perf.sm_occupancy import KernelSm, SmOccupancy
from profiler_kit.render.wording import units
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.notes import say


def sm_line(sm: SmOccupancy | None) -> str | None:
    """Per device: SM efficiency and achieved occupancy (or the note saying why not), and
    the last steps they leave out where the plugin's window does."""
    if sm is None:
        return None
    if not sm.available:
        return None if sm.note is None else say(sm.note)
    parts = [f"gpu:{d.device} SM efficiency {units.percent(d.sm_efficiency)}, achieved "
             f"occupancy {units.percent(d.achieved_occupancy)}" for d in sm.devices]
    if not parts:
        return None
    left_out = ""
    if sm.steps_left_out:
        steps = ", ".join(str(n) for n in sm.steps_left_out)
        left_out = (f", without step{'s' if len(sm.steps_left_out) > 1 else ''} {steps}: "
                    "no GPU activity or under 0.8 times the step before's, taken as cut "
                    "short")
    return "; ".join(parts) + f" (est., as the TensorBoard plugin{left_out})"


def occupancy_text(occupancy: float | None) -> str:
    """Kineto writes 0 for kernels it cannot estimate (over 48 KiB of shared memory): the
    device's average counts them as the plugin does; a kernel's or group's figure of 0
    reads n/a (None: the trace has no figure)."""
    if occupancy is None:
        return "-"
    return units.percent(occupancy) if occupancy > 0 else "n/a"


def class_figures(sm: SmOccupancy | None) -> dict[str, tuple[str, str]] | None:
    """Per hotspot class: SM efficiency and achieved occupancy as text; None where the
    trace records neither (the SM line carries the note)."""
    if sm is None or not sm.available:
        return None
    return {c.klass: (units.percent(c.sm_efficiency), occupancy_text(c.achieved_occupancy))
            for c in sm.classes}


def limiter_text(k: KernelSm) -> str:
    if k.limiter is None:
        return "-"
    return "few blocks" if k.limiter == "grid" else k.limiter


def idle_kernel_lines(sm: SmOccupancy | None, width: int = 60) -> list[str]:
    """The kernels that leave most SMs idle while the GPU reads busy, with their launch."""
    if sm is None or not sm.available or not sm.idle_kernels:
        return []
    lines = ["SMs left idle while busy (time × (1 − SM efficiency)):"]
    for k in sm.idle_kernels:
        config = f"; grid {k.grid_blocks:,} × {k.block_threads}" \
            if k.grid_blocks is not None and k.block_threads is not None else ""
        lines.append(f"  {units.duration(k.idle_sm_ns):>8} {short_name(k.name, width)}"
                     f" (SM eff. {units.percent(k.sm_efficiency)}, {limiter_text(k)}{config})")
        launch = ", ".join(x for x in (k.op, k.source) if x)
        if launch:
            lines.append(f"           launched by {launch}")
    return lines
