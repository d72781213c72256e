"""Recommendations from the perf model: each fires on achieved rates and shapes, with its evidence.

* GEMMs far below the device's peak whose m, n or k is not a multiple of 8 (fp16/bf16)
  or 16 (fp8): tensor cores work on tiles of those sizes, the rest is padding or a slower
  kernel.
* Many GEMMs below a useful size: each is mostly launch and tail; batch them (``bmm``)
  or let ``torch.compile`` / CUDA graphs merge the launches.
* Memory-bound elementwise chains between two GEMMs: every op reads and writes the
  whole tensor; ``torch.compile`` fuses them into one pass (or into the GEMM's epilogue).
* Convolutions in NCHW with fp16/bf16 on GPUs with tensor cores: the libraries convert
  to NHWC around each one (or pick slower kernels); ``channels_last`` avoids that.
"""

from __future__ import annotations

import numpy as np

from profiler_kit.analysis.core.arrays import distinct
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.recommendation import Evidence, Recommendation
from profiler_kit.analysis.perf.perf_model import FAMILIES, gemm_mnk
from profiler_kit.analysis.perf.roofline import Instances, PerfModel, ShapeGroup
from profiler_kit.analysis.time.hotspots import Breakdown
from profiler_kit.trace.table import EventTable, OpInputs

GEMM_FAR_BELOW_PEAK = 0.5  # achieved / peak FLOP/s below this is "far below"
GEMM_ALIGNMENT = {"fp16": 8, "bf16": 8, "fp8": 16}  # elements per tensor-core tile edge
UNALIGNED_GEMM_SHARE = 0.05  # of GPU activity time
SMALL_GEMM_FLOPS = 2 * 512**3  # below a 512 x 512 x 512 product
SMALL_GEMM_MIN_COUNT = 20
SMALL_GEMM_SHARE = 0.10  # of GPU activity time
FUSABLE = frozenset({"elementwise", "softmax", "normalization", "copy"})
CHAIN_MIN_OPS = 2
CHAIN_SHARE = 0.05  # of modelled op time
NCHW_CONV_SHARE = 0.05  # of GPU activity time
HALF = frozenset({"fp16", "bf16"})


def perf_recommendations(table: EventTable, tree: OpTree, gpu_bd: Breakdown, perf: PerfModel,
                         instances: Instances) -> tuple[Recommendation, ...]:
    """The perf-model rules that fire (GPU traces with recorded shapes only)."""
    if perf.time_source != "device" or not perf.groups:
        return ()
    gemms = [g for g in perf.groups if g.family == "gemm"]
    out: list[Recommendation] = []
    if gemms and gpu_bd.total_ns:
        out += _unaligned_gemms(gemms, gpu_bd.total_ns)
        out += _small_gemms(gemms, gpu_bd.total_ns)
    out += _elementwise_chains(table, tree, perf, instances)
    out += _nchw_convolutions(table, tree, gpu_bd, perf, instances)
    return tuple(out)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} % of peak"


def _unaligned_gemms(gemms: list[ShapeGroup], gpu_ns: int) -> list[Recommendation]:
    hits: list[tuple[ShapeGroup, tuple[int, int, int], int]] = []
    for g in gemms:
        align = GEMM_ALIGNMENT.get(g.dtype)
        if align is None or g.compute_peak_share is None \
                or g.compute_peak_share >= GEMM_FAR_BELOW_PEAK:
            continue
        mnk = gemm_mnk(g.op, OpInputs(g.input_dims, g.input_types, [], g.arguments))
        if mnk is not None and any(d % align for d in mnk):
            hits.append((g, mnk, align))
    ns = sum(g.total_ns for g, _, _ in hits)
    share = ns / gpu_ns
    if not hits or share < UNALIGNED_GEMM_SHARE:
        return []
    ev = [Evidence("GEMM instances with an unaligned m, n or k", sum(g.count for g, _, _ in hits),
                   "count"),
          Evidence("their GPU time", ns, "ns"),
          Evidence("GPU activity time", gpu_ns, "ns")]
    for g, (m, n, k), align in sorted(hits, key=lambda h: -h[0].total_ns)[:3]:
        ev.append(Evidence(f"{g.dtype} m={m} n={n} k={k} (multiple of {align}?), "
                           f"{g.count}x, {_pct(g.compute_peak_share)}", g.total_ns, "ns",
                           name=g.op))
    return [Recommendation(
        rule="gemm_unaligned_dims", scope="trace",
        measured=share, threshold=UNALIGNED_GEMM_SHARE, fires_when="above", unit="fraction",
        evidence=tuple(ev))]


def _small_gemms(gemms: list[ShapeGroup], gpu_ns: int) -> list[Recommendation]:
    small = [g for g in gemms if g.flops < SMALL_GEMM_FLOPS]
    count = sum(g.count for g in small)
    ns = sum(g.total_ns for g in small)
    share = ns / gpu_ns
    if count < SMALL_GEMM_MIN_COUNT or share < SMALL_GEMM_SHARE:
        return []
    mean_share = sum(g.compute_peak_share * g.total_ns for g in small
                     if g.compute_peak_share is not None) / ns if ns else None
    ev = [Evidence("GEMM instances below 2·512³ FLOPs", count, "count"),
          Evidence("their GPU time", ns, "ns"),
          Evidence("GPU activity time", gpu_ns, "ns"),
          Evidence("mean GPU time per instance", int(ns / count), "ns")]
    if mean_share:
        ev.append(Evidence("their time-weighted share of peak", mean_share, "fraction"))
    for g in sorted(small, key=lambda g: -g.total_ns)[:2]:
        ev.append(Evidence(f"{g.count}x {g.flops / 1e6:.3g} MFLOP, "
                           f"{_pct(g.compute_peak_share)}", g.total_ns, "ns", name=g.op))
    return [Recommendation(
        rule="small_gemms", scope="trace",
        measured=share, threshold=SMALL_GEMM_SHARE, fires_when="above", unit="fraction",
        evidence=tuple(ev))]


def _elementwise_chains(table: EventTable, tree: OpTree, perf: PerfModel,
                        instances: Instances) -> list[Recommendation]:
    """Runs of 2+ fusable ops on one thread between two GEMMs (in start order)."""
    if not len(instances) or not perf.time_ns:
        return []
    fusable = np.isin(instances.family, [FAMILIES.index(f) for f in FUSABLE])
    gemm = instances.family == FAMILIES.index("gemm")
    threads = tree.thread[instances.node]
    chains = 0
    ops = 0
    ns = 0
    example: list[str] = []
    for th in distinct(threads).tolist():
        idx = np.flatnonzero(threads == th)
        last_gemm = -1
        run: list[int] = []
        for i in idx.tolist():
            if gemm[i]:
                if last_gemm >= 0 and len(run) >= CHAIN_MIN_OPS:
                    chains += 1
                    ops += len(run)
                    ns += int(instances.time_ns[run].sum())
                    if not example:
                        example = [table.name_of(int(tree.row[instances.node[j]]))
                                   for j in run[:6]]
                last_gemm, run = i, []
            elif fusable[i]:
                run.append(i)
            else:
                last_gemm, run = -1, []
    share = ns / perf.time_ns
    if not chains or share < CHAIN_SHARE:
        return []
    return [Recommendation(
        rule="elementwise_chain_between_gemms", scope="trace",
        measured=share, threshold=CHAIN_SHARE, fires_when="above", unit="fraction",
        evidence=(Evidence("chains of 2+ elementwise/norm/softmax ops between two GEMMs",
                           chains, "count"),
                  Evidence("ops in them", ops, "count"),
                  Evidence("their GPU time", ns, "ns"),
                  Evidence("modelled op time", perf.time_ns, "ns"),
                  Evidence("example", " -> ".join(example), "")))]


def _nchw(strides: object, dims: object) -> bool:
    """Strides of a contiguous NCHW (not channels_last) 4-D or 5-D tensor."""
    if not isinstance(strides, list) or not isinstance(dims, list) or len(dims) not in (4, 5) \
            or len(strides) != len(dims):
        return False
    expected, acc = [], 1
    for d in reversed(dims):
        expected.append(acc)
        acc *= d
    return strides == expected[::-1] and dims[1] > 1 and strides[1] != 1


def _nchw_convolutions(table: EventTable, tree: OpTree, gpu_bd: Breakdown, perf: PerfModel,
                       instances: Instances) -> list[Recommendation]:
    if perf.peak is None or not HALF & perf.peak.matrix_flops_per_s.keys() or not gpu_bd.total_ns:
        return []
    conv = FAMILIES.index("convolution")
    count, ns = 0, 0
    example = ""
    for i in np.flatnonzero(instances.family == conv).tolist():
        if instances.dtype[i] not in HALF:
            continue
        inputs = table.op_inputs(int(tree.row[instances.node[i]]))
        if inputs is None or not inputs.dims or not inputs.strides:
            continue
        if _nchw(inputs.strides[0], inputs.dims[0]):
            count += 1
            ns += int(instances.time_ns[i])
            example = example or (f"{table.name_of(int(tree.row[instances.node[i]]))} "
                                  f"{instances.dtype[i]} input {inputs.dims[0]} "
                                  f"strides {inputs.strides[0]}")
    share = ns / gpu_bd.total_ns
    if not count or share < NCHW_CONV_SHARE:
        return []
    return [Recommendation(
        rule="conv_channels_last", scope="trace",
        measured=share, threshold=NCHW_CONV_SHARE, fires_when="above", unit="fraction",
        evidence=(Evidence("convolutions with NCHW fp16/bf16 inputs", count, "count"),
                  Evidence("their GPU time", ns, "ns"),
                  Evidence("GPU activity time", gpu_bd.total_ns, "ns"),
                  Evidence("device", perf.peak.name, ""),
                  Evidence("example", example, "")))]
