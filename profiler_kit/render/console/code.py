"""Console lines of the code view: the nn.Module tree (``analyze --modules``) and the
source lines (``analyze --by-line``). Formatting only."""

from __future__ import annotations

from profiler_kit.analysis.code.view import CodeView, ModuleNode, SourceLine
from profiler_kit.render.wording.names import short_name
from profiler_kit.render.wording.notes import said
from profiler_kit.render.wording.units import duration, percent

_MORE = "    "  # the figures of a line too wide for the console, on the lines below it


def _times(device_ns: int, backward_device_ns: int, op_ns: int, backward_op_ns: int,
           gpu: bool) -> list[str]:
    """The forward and backward times (device, then CPU ops), each part whole."""
    cpu = f"CPU ops fwd {duration(op_ns)} bwd {duration(backward_op_ns)}"
    if gpu:
        return [f"device fwd {duration(device_ns)} bwd {duration(backward_device_ns)}", cpu]
    return [cpu]


def _fit(indent: str, head: str, parts: list[str], width: int | None,
         sep: str = "  ") -> list[str]:
    """``head`` and its ``parts`` (``sep`` between them) on one line; where that is wider
    than ``width``, the parts on the lines below, further in, as many to a line as fit,
    so a name or a figure is never broken."""
    line = indent + head + "  " + sep.join(parts)
    if width is None or len(line) <= width:
        return [line]
    out = [indent + head]
    for part in parts:
        if len(out) > 1 and len(out[-1]) + len(sep) + len(part) <= width:
            out[-1] += sep + part
        else:
            out.append(indent + _MORE + part)
    return out


def _has_gpu(view: CodeView) -> bool:
    return view.coverage is not None and view.coverage.measure == "device"


def module_lines(view: CodeView, depth: int = 3, width: int | None = None) -> list[str]:
    """The module tree to ``depth`` levels, with the coverage line; the notes where the
    trace has no module events. A module's line wider than ``width`` puts its times on
    the lines below it."""
    if not view.modules:
        return said(view.notes) or ["no nn.Module events in this trace"]
    gpu = _has_gpu(view)
    steps = f" over {view.steps} steps" if view.steps else ""
    out = [f"nn.Module time{steps} (calls, host, then forward and backward):"]

    def walk(nodes: tuple[ModuleNode, ...], level: int) -> None:
        for n in nodes:
            times = _times(n.device_ns, n.backward_device_ns, n.op_ns, n.backward_op_ns, gpu)
            out.extend(_fit("  " * (level + 1),
                            f"{n.name}  x{n.calls}  host {duration(n.host_ns)}", times, width,
                            " | "))
            if level + 1 < depth:
                walk(n.children, level + 1)

    walk(view.modules, 0)
    c = view.coverage
    if c is not None:
        what = "GPU time" if c.measure == "device" else "CPU op time"
        rest = ", ".join(f"{k} {duration(v)}" for k, v in c.unattributed.items())
        out.append(f"modules' forward + backward: {percent(c.share)} of the {what} "
                   f"less the optimizer's ({duration(c.optimizer_ns)})"
                   + (f"; the rest: {rest}" if rest else ""))
    out.append(f"backward ops linked to their forward op: {view.backward_linked} of "
               f"{view.backward_ops}")
    out.extend(n for n in said(view.notes) if n not in out)
    return out


def _kernel(indent: str, what: str, name: str, parts: list[str],
            width: int | None) -> list[str]:
    """A kernel's or op's line; where it is wider than ``width``, the name cut to fit
    beside its figures (as analyze's tables cut it; --json has it whole), or to fit the
    line with the figures below where a name would keep too little."""
    room = None if width is None else width - len(indent) - len(what) - 1
    figures = len("  ".join(parts)) + 2
    if room is not None and len(name) + figures > room:
        name = short_name(name, room - figures if room - figures >= 24 else max(room, 24))
    return _fit(indent, f"{what} {name}", parts, width)


def _line(s: SourceLine, gpu: bool, width: int | None) -> list[str]:
    out = _fit("  ", s.site,
               _times(s.device_ns, s.backward_device_ns, s.op_ns, s.backward_op_ns, gpu),
               width, " | ")
    for k in s.kernels:
        fused = [f"[{' + '.join(k.fused_ops)}]"] if k.fused_ops else []
        out += _kernel("      ", "kernel", k.name, [f"x{k.count}", duration(k.device_ns),
                                                     *fused], width)
    for o in s.ops:
        out += _kernel("      ", "op", o.name, [f"x{o.count}", duration(o.op_ns)], width)
    return out


def by_line_lines(view: CodeView, top: int = 10, width: int | None = None) -> list[str]:
    """The source lines by device time (CPU op time without GPU work), with their ops and
    kernels; CUDA graph replays and compiled kernels after them. A line wider than
    ``width`` puts its figures on the lines below it."""
    out: list[str] = []
    if not view.lines:
        out.extend(said(view.notes) or ["no Python stacks in this trace"])
    else:
        out.append("time by source line (first user frame; backward at its forward's line):")
        for s in view.lines[:top]:
            out.extend(_line(s, _has_gpu(view), width))
    g = view.graph_replays
    if g is not None:
        out.append(f"CUDA graph replays: {g.launches} launches, {duration(g.device_ns)}")
        for k in g.kernels:
            out += _kernel("    ", "kernel", k.name, [f"x{k.count}", duration(k.device_ns)],
                           width)
    if view.compiled:
        out.append("compiled (Inductor) kernels, the ops their names say they fuse:")
        out.extend(f"    {f.name}  {f.kind}  x{f.count}  {duration(f.device_ns or f.op_ns)}  "
                   f"[{' + '.join(f.ops)}]" + (f"  {', '.join(f.lines)}" if f.lines else "")
                   for f in view.compiled[:top])
    return out
