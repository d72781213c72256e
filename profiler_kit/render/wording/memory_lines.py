"""``profkit memory`` as text: per strategy the peak, what holds it, growth, fragmentation, fit.

Plain lines (no tables), so the same lines serve the console, ``analyze``'s short section
and the HTML report.
"""

from __future__ import annotations

from profiler_kit.analysis.memory.explained import StrategyMemory
from profiler_kit.analysis.memory.fit import Fit
from profiler_kit.analysis.memory.strategies import MemoryDelta, MemoryReport
from profiler_kit.render.wording.notes import said, say
from profiler_kit.render.wording.units import nbytes, percent

# what the CPU's peak allocated counts (see profiler_kit.analysis.memory.allocated)
IN_TRACE_ONLY = ("bytes allocated in the trace and not yet freed; tensors made before it "
                 "(weights, optimizer state) are not counted")


def _categories(s: StrategyMemory) -> list[str]:
    out = []
    for c in s.categories:
        parts = ", ".join(f"{name} {nbytes(b)}" for name, b in
                          sorted(c.by_category.items(), key=lambda kv: -kv[1]) if b)
        out.append(f"  peak {nbytes(c.total_bytes)} on {c.device} by category: {parts}")
        if c.before_profile:
            before = ", ".join(f"{name} {nbytes(b)}" for name, b in
                               sorted(c.before_profile.items(), key=lambda kv: -kv[1]))
            out.append(f"    of which {nbytes(sum(c.before_profile.values()))} was allocated "
                       f"before the profile started: {before}")
    return out


def _peaks(s: StrategyMemory, top: int) -> list[str]:
    out = []
    for p in s.peaks:
        res = (f", reserved {nbytes(p.reserved_at_peak_bytes)} (most "
               f"{nbytes(p.peak_reserved_bytes)})" if p.reserved_at_peak_bytes is not None else "")
        who = p.op or "no op"
        if p.site:
            who += f" at {p.site}"
        what = "peak allocated" if p.counts_before_trace else "peak allocated in the trace"
        out.append(f"  {what} {nbytes(p.peak_allocated_bytes)} on {p.device}{res}; "
                   f"reached by {who} ({nbytes(p.request_bytes)} request)")
        if p.live_sites:
            out.append(f"  live at the peak ({nbytes(p.live_bytes_seen)} allocated in the "
                       "trace), by line:")
            out.extend(f"    {nbytes(x.bytes):>10}  {x.site or '(no stack)'}  [{x.op}, "
                       f"{x.allocations} alloc]" for x in p.live_sites[:top])
    return out


def _growth(s: StrategyMemory) -> list[str]:
    out = []
    for g in s.growth:
        if g.steps:
            kept = ", ".join(f"#{st.step} {nbytes(st.kept_bytes)}" for st in g.steps)
            out.append(f"  kept to the trace's end, per step on {g.device}: {kept}")
        if g.note is not None:
            out.append(f"  growth on {g.device}: {say(g.note)}")
        label = "KEPT" if g.held_by_profiler is not None else "LEAK"
        for leak in g.leaks:
            per = ", ".join(nbytes(b) for b in leak.kept_bytes_per_step)
            out.append(f"  {label} {leak.site or leak.op}: keeps {per} from each step "
                       f"({leak.op})")
        if g.held_by_profiler is not None:
            out.append(f"  not called a leak: {say(g.held_by_profiler)}")
        if g.steps and not g.leaks and g.note is None:
            out.append(f"  no leak on {g.device}: no line keeps bytes from every step")
    return out


def _snapshot(s: StrategyMemory, top: int) -> list[str]:
    snap = s.snapshot
    if snap is None:
        return []
    out = [f"  allocator snapshot {snap.path}:"]
    for f in snap.fragmentation:
        out.append(f"    cuda:{f.device} reserved {nbytes(f.reserved_bytes)}, allocated "
                   f"{nbytes(f.allocated_bytes)} (requested {nbytes(f.requested_bytes)}), "
                   f"free {nbytes(f.free_bytes)}, largest free block "
                   f"{nbytes(f.largest_free_bytes)}, unusable {percent(f.unusable_share)}")
    out.extend(f"    cuda:{h.device} peak allocated {nbytes(h.peak_allocated_bytes)} over the "
               f"recorded history ({h.actions} allocations and frees)"
               for h in snap.history_peaks)
    out.extend(f"    {nbytes(x.bytes):>10}  {x.site or '(no stack)'}  [{x.blocks} blocks]"
               for x in snap.live_sites[:top])
    for o in snap.oom_events:
        free = nbytes(o.device_free_bytes) if o.device_free_bytes is not None else "unknown"
        where = f" at {o.frame.filename}:{o.frame.line}" if o.frame else ""
        out.append(f"    OUT OF MEMORY on cuda:{o.device}: requested "
                   f"{nbytes(o.requested_bytes)}{where}, device free {free}, largest free "
                   f"block {nbytes(o.largest_free_bytes)} of {nbytes(o.reserved_bytes)} "
                   "reserved")
    return out


def fit_lines(fit: Fit | None, indent: str = "  ") -> list[str]:
    if fit is None:
        return []
    act = (f", activations {nbytes(fit.activation_bytes_per_item)}/item"
           if fit.activation_bytes_per_item is not None else "")
    if fit.largest_batch is not None:
        fits = (f"largest batch that fits in {nbytes(fit.device_memory_bytes)}: about "
                f"{fit.largest_batch} (estimate)")
    else:
        fits = "give --device-memory to size the largest batch"
    out = [f"{indent}what fits ({fit.method}): {nbytes(fit.bytes_per_item)}/item at the peak"
           f"{act}, {nbytes(fit.fixed_bytes)} that does not grow; {fits}"]
    out.extend(f"{indent}  assumes {a}" for a in said(fit.assumptions))
    return out


def delta_line(d: MemoryDelta) -> str:
    sign = "+" if d.delta_bytes >= 0 else "-"
    what = "activations" if d.what == "activation" else "at the peak"
    src = f", from {d.site} ({'+' if d.site_delta_bytes >= 0 else '-'}" \
          f"{nbytes(abs(d.site_delta_bytes))} live at the peak)" if d.site else ""
    return f"{d.label}: {sign}{nbytes(abs(d.delta_bytes))} {what} vs {d.baseline}{src}"


def strategy_lines(s: StrategyMemory, top: int = 10) -> list[str]:
    """The strategy's section; one line when it has nothing to show, saying why."""
    if not shows_anything(s):
        return [f"{s.label}: {_nothing(s)}"]
    out = [f"{s.label}"]
    out += _categories(s) + _peaks(s, top) + _growth(s) + _snapshot(s, top)
    out += [f"  {a.remedy}: {say(a.evidence)}" for a in s.advice]
    out += fit_lines(s.fit)
    out += [f"  no memory events in {u.path} ({say(u.why)})" for u in s.unrecorded]
    return out


def shows_anything(s: StrategyMemory) -> bool:
    """Whether the strategy has any memory figure to show (not only notes)."""
    return bool(s.categories or s.peaks or s.growth or s.snapshot or s.advice or s.fit)


def _nothing(s: StrategyMemory) -> str:
    whys = list(dict.fromkeys(say(u.why) for u in s.unrecorded))
    if not whys:
        return "nothing recorded about memory"
    where = f" in its {len(s.unrecorded)} traces" if len(s.unrecorded) > 1 else ""
    return f"no memory events{where} ({'; '.join(whys)})"


def report_lines(report: MemoryReport, top: int = 10) -> list[str]:
    out = []
    for s in report.strategies:
        out += strategy_lines(s, top)
    if report.deltas:
        out.append("side by side:")
        out += [f"  {delta_line(d)}" for d in report.deltas]
    if report.fit is not None:
        out.append("across the sources:")
        out += fit_lines(report.fit)
    return out


def notes(report: MemoryReport) -> list[str]:
    """One line per file that could not be used, and why."""
    return [say(n) for s in report.strategies for n in s.notes]


def limits(report: MemoryReport) -> list[str]:
    """One line per file used with less than it could give (no stacks), and why."""
    return [say(n) for s in report.strategies for n in s.limits]


def has_memory(report: MemoryReport) -> bool:
    """Whether any strategy has categories or a snapshot (what the short section shows)."""
    return any(s.categories or s.snapshot for s in report.strategies)


def section_lines(report: MemoryReport) -> list[str]:
    """The short memory section of ``analyze``, ``compare`` and the report."""
    out = []
    for s in report.strategies:
        for c in s.categories:
            parts = ", ".join(f"{name} {nbytes(b)}" for name, b in
                              sorted(c.by_category.items(), key=lambda kv: -kv[1]) if b)
            out.append(f"{s.label}: peak {nbytes(c.total_bytes)} on {c.device}: {parts}")
        out += [f"{s.label}: {a.remedy}: {say(a.evidence)}" for a in s.advice
                if a.remedy != "none"]
        if s.snapshot is not None:
            out += [f"{s.label}: OUT OF MEMORY on cuda:{o.device}, requested "
                    f"{nbytes(o.requested_bytes)}" for o in s.snapshot.oom_events]
    out += [delta_line(d) for d in report.deltas]
    return out
