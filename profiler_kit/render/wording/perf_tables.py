"""The perf model's rows as text, shared by the console and Markdown renderers. Formats only."""

from __future__ import annotations

from profiler_kit.analysis.perf.roofline import DEVICE, HOST, PerfModel, ShapeGroup
from profiler_kit.render.wording import units
from profiler_kit.render.wording.notes import said
from profiler_kit.render.wording.sm_figures import occupancy_text


def rate_unit(perf: PerfModel) -> str:
    """TFLOP/s over device time, GFLOP/s over host time (numbers are printed in this unit)."""
    return "GFLOP/s" if perf.time_source == HOST else "TFLOP/s"


def flop_rate(perf: PerfModel, per_s: float | None, with_unit: bool = True) -> str:
    if per_s is None:
        return "-"
    scale = 1e9 if perf.time_source == HOST else 1e12
    return f"{per_s / scale:.3g}" + (f" {rate_unit(perf)}" if with_unit else "")


def bw_unit(perf: PerfModel) -> str:
    return "GB/s" if perf.time_source == HOST else "TB/s"


def bandwidth(perf: PerfModel, per_s: float | None) -> str:
    scale = 1e9 if perf.time_source == HOST else 1e12
    return "-" if per_s is None else f"{per_s / scale:.3g}"


def family_header(perf: PerfModel) -> tuple[str, ...]:
    return ("class", "count", "time", "FLOPs", rate_unit(perf), bw_unit(perf), "% peak FLOP/s",
            "% peak BW")


def has_sm(perf: PerfModel) -> bool:
    """The groups carry their kernels' SM efficiency or occupancy (traces with the fields)."""
    return any(g.sm_efficiency is not None or g.achieved_occupancy is not None
               for g in perf.groups)


def group_header(perf: PerfModel) -> tuple[str, ...]:
    sm = ("SM eff.", "occ.") if has_sm(perf) else ()
    return ("op", "count", "total", "mean", rate_unit(perf), bw_unit(perf), "FLOP/B",
            "bound: % of peak", *sm, "dtype, input shapes")


def summary_lines(perf: PerfModel) -> list[str]:
    """What was modelled, on which peaks, and the whole-trace figures."""
    if not perf.shapes_recorded:
        return ["Perf model: no input shapes in the trace (profile with record_shapes=True)."]
    if perf.device_time_missing:  # a note says why there is no rate
        return [f"Perf model: {perf.ops:,} op instances modelled, "
                f"{units.count(perf.flops, 'FLOP')} and {units.count(perf.bytes, 'B')} from "
                f"the recorded shapes."] + [f"note: {n}" for n in said(perf.notes)]
    where = "GPU time of each op's kernels" if perf.time_source == DEVICE else \
        "CPU time of each op"
    covers = f", {units.percent(perf.modelled_share)} of the GPU compute time" \
        if perf.modelled_share is not None else ""
    lines = [f"Perf model: {perf.ops:,} op instances modelled, "
             f"{units.count(perf.flops, 'FLOP')} and {units.count(perf.bytes, 'B')} in "
             f"{units.duration(perf.time_ns)} ({where}{covers}): "
             f"{flop_rate(perf, perf.flops_per_s)}, "
             f"{units.decimal_rate(perf.bytes_per_s, 'B')}."]
    p = perf.peak
    if p is not None and perf.time_source == DEVICE:
        matrix = ", ".join(f"{k} {units.decimal_rate(v, 'FLOP')}"
                           for k, v in p.matrix_flops_per_s.items())
        lines.append(f"Peaks of {p.name} (dense, from the datasheet): {matrix}; vector fp32 "
                     f"{units.decimal_rate(p.fp32_flops_per_s, 'FLOP')}; memory "
                     f"{units.decimal_rate(p.memory_bytes_per_s, 'B')}.")
    lines += utilization_lines(perf)
    if perf.unmodelled:
        top = ", ".join(f"{u.op} {units.duration(u.total_ns)}" for u in perf.unmodelled[:4])
        what = "GPU time" if perf.time_source == DEVICE else "CPU time"
        lines.append(f"Without a model: {units.duration(perf.unmodelled_ns)} of {what} "
                     f"({top}{', …' if len(perf.unmodelled) > 4 else ''}).")
    lines += [f"note: {n}" for n in said(perf.notes)]
    return lines


def utilization_lines(perf: PerfModel) -> list[str]:
    """MFU (model FLOPs per second of step wall time) and the FLOP/s while the kernels
    run, each against the same peak; or why they are left out."""
    if perf.mfu_partial:
        return [f"Model FLOP utilization: partial: modelled ops cover "
                f"{units.percent(perf.modelled_share)} of the GPU compute time "
                f"(at least 50 % needed); see the ops without a model below."]
    peak = (f"{_mfu_peak_name(perf)} peak "
            f"{units.decimal_rate(perf.mfu_peak_flops_per_s, 'FLOP')}")
    lines = []
    if perf.model_flops_utilization is not None and perf.mfu_time_ns:
        wall = ("the steps' device-side time" if perf.mfu_window == "steps"
                else "the trace's GPU window")
        gpus = f" x {perf.mfu_devices} GPUs" if perf.mfu_devices > 1 else ""
        lines.append(f"Model FLOP utilization: {units.percent(perf.model_flops_utilization)} "
                     f"({units.count(perf.mfu_flops, 'FLOP')} of GEMM, convolution and "
                     f"attention as torch.utils.flop_counter counts them / {wall} "
                     f"{units.duration(perf.mfu_time_ns)} / {peak}{gpus}).")
    if perf.flops_per_s_peak_share is not None:
        lines.append(f"FLOP/s while kernels run, % of peak: "
                     f"{units.percent(perf.flops_per_s_peak_share)} (all modelled FLOPs / "
                     f"their kernels' time {units.duration(perf.time_ns)} / {peak}; they "
                     f"cover {units.percent(perf.modelled_share)} of the GPU compute time; "
                     f"a multiply-add is 2 FLOPs).")
    return lines


def _mfu_peak_name(perf: PerfModel) -> str | None:
    """The MFU peak's name: fp32 work on tensor-core kernels is measured against TF32's."""
    p = perf.peak
    if perf.mfu_dtype == "fp32" and p is not None and \
            perf.mfu_peak_flops_per_s == p.matrix_flops_per_s.get("tf32"):
        return "tf32 (fp32 on tensor cores)"
    return perf.mfu_dtype


def family_rows(perf: PerfModel) -> list[tuple[str, ...]]:
    return [(f.family, f"{f.count:,}", units.duration(f.total_ns), units.count(f.flops, "FLOP"),
             flop_rate(perf, f.flops_per_s, False), bandwidth(perf, f.bytes_per_s),
             peak_share(f.compute_peak_share), peak_share(f.memory_peak_share))
            for f in perf.families]


def peak_share(share: float | None) -> str:
    """A share of a peak; one above the peak is starred, and the perf model's notes say
    why (bytes served from cache, for bandwidth)."""
    return units.percent(share) + ("*" if share is not None and share > 1 else "")


def shapes(g: ShapeGroup) -> str:
    """The dtype and the tensor inputs' shapes, compact: ``bf16 [141,512] [512,512]``."""
    out = [g.dtype]
    for d, t in zip(g.input_dims, g.input_types, strict=False):
        if isinstance(d, list) and all(isinstance(x, int) for x in d) and t not in (
                "", "Scalar", "ScalarList", "TensorList"):
            out.append("[" + ",".join(str(x) for x in d) + "]")
    return " ".join(out)


def group_rows(perf: PerfModel, top: int) -> list[tuple[str, ...]]:
    sm = has_sm(perf)
    rows = []
    for g in perf.groups[:top]:
        if g.bound == "memory":
            bound = f"memory: {peak_share(g.memory_peak_share)} BW"
        elif g.bound == "compute":
            bound = f"compute: {peak_share(g.compute_peak_share)}"
        else:
            bound = "-"
        rows.append((
            g.op + (" (bwd)" if g.backward else ""), f"{g.count:,}",
            units.duration(g.total_ns), units.duration(g.mean_ns),
            flop_rate(perf, g.flops_per_s, False), bandwidth(perf, g.bytes_per_s),
            f"{g.intensity_flops_per_byte:.3g}" if g.intensity_flops_per_byte is not None
            else "-", bound,
            *((units.percent(g.sm_efficiency), occupancy_text(g.achieved_occupancy))
              if sm else ()), shapes(g)))
    return rows


def text_table(header: tuple[str, ...], rows: list[tuple[str, ...]], width: int,
               left: frozenset[int], shrink: tuple[tuple[int, int], ...],
               details: list[str] | None = None) -> list[str]:
    """Rows as fixed-width text lines (header, rule, rows) that fit ``width``.

    ``shrink`` lists (column, narrowest width) in the order columns give up room; the
    last column wraps onto continuation lines at spaces, others are cut with "…".
    ``details`` (one per row) go on indented lines under their row. Plain text renders
    in a fraction of the time a rich Table of the same cells takes.
    """
    widths = [max(len(c) for c in col) for col in zip(header, *rows, strict=True)]
    for col, narrowest in shrink:
        over = sum(widths) + 2 * (len(widths) - 1) - width
        if over <= 0:
            break
        widths[col] = max(narrowest, widths[col] - over)
    last = len(widths) - 1
    indent = sum(widths[:last]) + 2 * last

    def cut(cell: str, w: int) -> str:
        return cell if len(cell) <= w else cell[: w - 1] + "…"

    def lines(cells: tuple[str, ...]) -> list[str]:
        out = []
        for i, (cell, w) in enumerate(zip(cells[:last], widths, strict=False)):
            cell = cut(cell, w)
            out.append(cell.ljust(w) if i in left else cell.rjust(w))
        wrapped = _wrap(cells[last], widths[last])
        first = "  ".join([*out, wrapped[0]]).rstrip()
        return [first[:width]] + [(" " * indent + more)[:width] for more in wrapped[1:]]

    rule = "─" * min(width, sum(widths) + 2 * last)
    out = [*lines(header), rule]
    for i, r in enumerate(rows):
        out += lines(r)
        if details is not None:
            out += ["    " + part for part in _wrap(details[i], width - 4)]
    return out


def _wrap(text: str, w: int) -> list[str]:
    """``text`` in lines of at most ``w`` characters, broken at spaces where possible."""
    out: list[str] = []
    line = ""
    for word in text.split(" "):
        while len(word) > w:
            if line:
                out.append(line)
                line = ""
            out.append(word[:w])
            word = word[w:]
        if not line:
            line = word
        elif len(line) + 1 + len(word) <= w:
            line += " " + word
        else:
            out.append(line)
            line = word
    out.append(line)
    return out
