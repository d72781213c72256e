"""Console lines of the code view: the nn.Module tree (``analyze --modules``) and the
source lines (``analyze --by-line``). Formatting only."""

from __future__ import annotations

from profiler_kit.analysis.code.view import CodeView, ModuleNode, SourceLine
from profiler_kit.render.wording.units import duration, percent


def _times(device_ns: int, backward_device_ns: int, op_ns: int, backward_op_ns: int,
           gpu: bool) -> str:
    if gpu:
        return (f"device fwd {duration(device_ns)} bwd {duration(backward_device_ns)}"
                f" | CPU ops fwd {duration(op_ns)} bwd {duration(backward_op_ns)}")
    return f"CPU ops fwd {duration(op_ns)} bwd {duration(backward_op_ns)}"


def _has_gpu(view: CodeView) -> bool:
    return view.coverage is not None and view.coverage.measure == "device"


def module_lines(view: CodeView, depth: int = 3) -> list[str]:
    """The module tree to ``depth`` levels, with the coverage line; the notes where the
    trace has no module events."""
    if not view.modules:
        return list(view.notes) or ["no nn.Module events in this trace"]
    gpu = _has_gpu(view)
    steps = f" over {view.steps} steps" if view.steps else ""
    out = [f"nn.Module time{steps} (calls, host, then forward and backward):"]

    def walk(nodes: tuple[ModuleNode, ...], level: int) -> None:
        for n in nodes:
            times = _times(n.device_ns, n.backward_device_ns, n.op_ns, n.backward_op_ns, gpu)
            out.append(f"{'  ' * (level + 1)}{n.name}  x{n.calls}  host {duration(n.host_ns)}"
                       f"  {times}")
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
    out.extend(n for n in view.notes if n not in out)
    return out


def _line(s: SourceLine, gpu: bool) -> list[str]:
    out = [f"{s.site}  {_times(s.device_ns, s.backward_device_ns, s.op_ns, s.backward_op_ns, gpu)}"]
    for k in s.kernels:
        fused = f"  [{' + '.join(k.fused_ops)}]" if k.fused_ops else ""
        out.append(f"    kernel {k.name}  x{k.count}  {duration(k.device_ns)}{fused}")
    for o in s.ops:
        out.append(f"    op {o.name}  x{o.count}  {duration(o.op_ns)}")
    return out


def by_line_lines(view: CodeView, top: int = 10) -> list[str]:
    """The source lines by device time (CPU op time without GPU work), with their ops and
    kernels; CUDA graph replays and compiled kernels after them."""
    out: list[str] = []
    if not view.lines:
        out.extend(view.notes or ["no Python stacks in this trace"])
    else:
        out.append("time by source line (first user frame; backward at its forward's line):")
        for s in view.lines[:top]:
            out.extend("  " + x for x in _line(s, _has_gpu(view)))
    g = view.graph_replays
    if g is not None:
        out.append(f"CUDA graph replays: {g.launches} launches, {duration(g.device_ns)}")
        out.extend(f"    kernel {k.name}  x{k.count}  {duration(k.device_ns)}" for k in g.kernels)
    if view.compiled:
        out.append("compiled (Inductor) kernels, the ops their names say they fuse:")
        out.extend(f"    {f.name}  {f.kind}  x{f.count}  {duration(f.device_ns or f.op_ns)}  "
                   f"[{' + '.join(f.ops)}]" + (f"  {', '.join(f.lines)}" if f.lines else "")
                   for f in view.compiled[:top])
    return out
