"""CPU-only traces: where the CPU time goes, which threads worked, and the advice that fits.

A CPU trace records the ops on the thread that dispatched them; the intra-op (OpenMP)
worker threads that run an op's parallel loops, and the machine's cores, are not in it.
So the figures here are about the dispatching threads, and every rule fires only on what
the trace shows:

* **Where the time goes**, as shares of the CPU time in ops (the self time of every
  ``cpu_op`` that starts in the profiled steps, on any thread; the whole trace without
  ``ProfilerStep#`` spans): GEMM and convolution (oneDNN/MKL: ``aten::mkldnn_convolution``,
  ``aten::addmm``, ``aten::mm``, ``mkldnn_*``...), elementwise, dispatch overhead (the self
  time of wrapper ops, such as ``aten::conv2d`` around ``aten::mkldnn_convolution``: an op
  with a child op of its own class), the ops inside the DataLoader
  (``enumerate(DataLoader)#...__next__``) and the rest. The self time of ``record_function``
  ranges and ``ProfilerStep#`` outside any op (Python, untraced code, or waiting: the trace
  cannot tell which) is reported beside, never in the shares.
* **Threads**: each thread that ran ops, with its busy time (the union of its ops) against
  the window.
* **Waiting** (``cpu_ops_waiting``): ops of at least 1 ms whose self time is far beyond
  what their work needs, which is at most the fastest other call of the same op with the
  same ``Input Dims`` and ``Input type`` (ops whose work depends on the data aside), or
  1 ms plus its FLOPs at 0.1 GFLOP/s and its bytes at 0.1 GB/s (rates any CPU core exceeds
  many times over; FLOPs and bytes from the perf model). Only traces recorded with shapes
  are judged. The first of identical calls counts only where a later one waited too: a
  first call alone may have spent its time creating oneDNN's kernels. Waits for other
  ranks, threads or the clock (communication, ``wait``, ``sleep``, ``item``) are never
  judged. The excess is time the ops waited for cores (a shared machine, or more threads
  than free cores: intra-op threads then wait for each other at every parallel loop), not
  work. Where it is most of the op time, the shares above measure the waiting, and the
  rules below are not judged.
* **fp32 GEMM/convolution** (``cpu_fp32_matmul_conv``): GEMM and convolution take most of
  the op time, in fp32 (from ``Input type``). bf16 autocast pays off on CPUs with AMX or
  AVX-512 BF16 and is slower without: the trace shows which only where oneDNN's kernel
  names (``brgemm``/``brgconv`` with ``avx512_core_amx``, ``avx512_core_bf16``...) appear
  in its op names or recorded dtypes; otherwise the advice says the trace cannot tell.
  Where such names show only ISAs without bf16 (``avx2``), the rule stays silent.
* **Small elementwise ops** (``cpu_small_elementwise_ops``): many elementwise ops of a
  few microseconds each take a large share: ``torch.compile`` fuses them.
* The DataLoader's share of the steps is ``recommend``'s ``dataloader_share`` rule, which
  fires on CPU-only traces too; it is not repeated here.
* One thread ran every op: the trace cannot tell whether intra-op parallelism was used
  (its workers are not recorded), so ``torch.set_num_threads`` is never advised from it;
  a note says so.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.advice.recommend import Findings
from profiler_kit.analysis.core import classify, intervals
from profiler_kit.analysis.core.arrays import dense_ids, distinct, percentile
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.recommendation import Evidence, Recommendation
from profiler_kit.analysis.core.steps import Steps
from profiler_kit.analysis.perf.perf_model import op_cost
from profiler_kit.analysis.perf.precision import input_dtype_is_low
from profiler_kit.trace.table import INPUT_TYPE_SEP, Cat, EventTable

# Thresholds (fractions of the CPU time in ops unless named otherwise).
WAITING_SHARE = 0.5  # time ops waited beyond their work
WAIT_MIN_NS = 1_000_000  # ops shorter than this are never judged waiting
WAIT_OVERHEAD_NS = 1_000_000  # per-call allowance beyond the work at the floor rates
FLOOR_FLOPS_PER_S = 1e8  # 0.1 GFLOP/s: any CPU core, scalar code, does many times more
FLOOR_BYTES_PER_S = 1e8  # 0.1 GB/s
GEMM_CONV_SHARE = 0.5  # GEMM + convolution time
FP32_SHARE = 0.5  # of the GEMM + convolution time, in fp32
ELEMENTWISE_SHARE = 0.3  # small elementwise ops
SMALL_OP_NS = 100_000  # an elementwise call below this is small
SMALL_OP_MIN_COUNT = 100  # fewer small ops: nothing for a compiler to fuse
ONE_THREAD_BUSY = 0.5  # of the window: the one thread that ran ops did the work

DATALOADER = re.compile(r"DataLoader", re.IGNORECASE)
# oneDNN's kernel names and the CPU flags that name bf16 hardware; ISAs without it.
_AMX = re.compile(r"avx512_core_amx|avx10_[0-9_]*amx|amx_bf16", re.IGNORECASE)
_AVX512_BF16 = re.compile(r"avx512_core_bf16|avx512_bf16|avx10_[0-9]+", re.IGNORECASE)
_ISA = re.compile(
    r"(?:brg(?:emm|conv|_matmul)?|brdgmm|jit|gemm|ref)[:_](?:uni[:_])?"
    r"(avx512[a-z0-9_]*|avx10[a-z0-9_]*|avx2[a-z0-9_]*|avx\b|sse41|sse4_1)", re.IGNORECASE)

# Ops whose time is not their own work, and ops whose work depends on the data.
_NOT_WORK = re.compile(r"wait|sleep|synchron|barrier|_local_scalar_dense|\bitem\b",
                       re.IGNORECASE)
_DATA_DEPENDENT = re.compile(r"nonzero|unique|masked_select|index_put|bincount|histc|"
                             r"sort|topk|multinomial|where$", re.IGNORECASE)

_GPU_ONLY_OP = re.compile(r"^aten::_?(?:cudnn|miopen)_|^nccl:|^cuda[A-Z]|^hip[A-Z]")

AMX = "AMX"
AVX512_BF16 = "AVX-512 BF16"
NO_BF16 = "no bf16 instructions"
UNKNOWN = "not shown in the trace"


class NameTime(msgspec.Struct, frozen=True):
    name: str
    count: int
    ns: int


class ThreadBusy(msgspec.Struct, frozen=True):
    pid: int
    tid: int
    label: str  # the thread's name from the trace, else "tid N"
    ops: int  # ops that started in the window
    busy_ns: int  # union of its ops, clipped to the window
    op_ns: int  # self time of its ops (= busy_ns where nothing overlaps)


class Waiting(msgspec.Struct, frozen=True):
    """Time ops spent beyond what their work needs (see the module docstring)."""

    excess_ns: int
    judged_ops: int  # ops of at least WAIT_MIN_NS with something to judge them against
    waiting_ops: int  # those with an excess
    # (op name, summed excess, a typical call's self time, what the work needs)
    top: tuple[tuple[str, int, int, int], ...]


class CpuProfile(msgspec.Struct, frozen=True):
    """Where the CPU time in ops goes over ``window`` (raw ns; shares are of ``op_ns``)."""

    window: str  # "steps" or "trace"
    window_ns: int
    op_ns: int  # self time of the cpu_ops that start in the window, every thread
    ops: int
    gemm_conv_ns: int
    elementwise_ns: int
    dispatch_ns: int  # wrapper ops' self time
    dataloader_ns: int  # ops inside DataLoader spans
    other_ns: int
    annotation_ns: int  # record_function / ProfilerStep self time outside ops (not in op_ns)
    gemm_conv_top: tuple[NameTime, ...]
    elementwise_top: tuple[NameTime, ...]
    dispatch_top: tuple[NameTime, ...]
    other_top: tuple[NameTime, ...]
    gemm_conv_fp32_ns: int  # GEMM/convolution time whose floating inputs are fp32/fp64
    gemm_conv_low_ns: int  # ... 16-bit or narrower
    small_elementwise_ns: int  # elementwise calls below SMALL_OP_NS
    small_elementwise_ops: int
    elementwise_median_ns: int
    threads: tuple[ThreadBusy, ...]  # busiest first
    bf16: str  # AMX, AVX512_BF16, NO_BF16 or UNKNOWN
    bf16_evidence: str  # the name that showed it ("" when unknown)
    waiting: Waiting | None  # None: no recorded shapes, nothing to judge against

    def share(self, ns: int) -> float:
        return ns / self.op_ns if self.op_ns > 0 else 0.0


def cpu_profile(table: EventTable, tree: OpTree, steps: Steps, top: int = 3) -> CpuProfile:
    """The CPU time in ops over the steps (or the whole trace), split as the docstring says."""
    lo, hi = steps.start_ns, steps.end_ns
    window = "steps" if steps.source == "ProfilerStep" else "trace"
    is_op = table.cat[tree.row] == Cat.CPU_OP
    inside = (tree.start_ns >= lo) & (tree.start_ns < hi)
    nodes = np.flatnonzero(is_op & inside)
    n = len(tree)
    own = tree.own_klass.astype(np.int64)
    other = classify.CLASS_INDEX[classify.OTHER]

    # wrappers: ops with a child op of their own class (not "other")
    kids = np.flatnonzero((tree.parent >= 0) & is_op)
    par = tree.parent[kids]
    same = kids[(own[kids] == own[par]) & is_op[par] & (own[par] != other)]
    wrapper = np.zeros(n, dtype=bool)
    wrapper[tree.parent[same]] = True

    # inside a DataLoader span (the span itself or an ancestor)
    loader_ids = [i for i, s in enumerate(table.names) if DATALOADER.search(s)]
    in_loader = np.zeros(n, dtype=bool)
    if loader_ids:
        in_loader = np.isin(table.name[tree.row], np.array(loader_ids))
        pending = np.flatnonzero(~in_loader & (tree.parent >= 0))
        anc = tree.parent.copy()
        while len(pending):
            hit = in_loader[anc[pending]]
            in_loader[pending[hit]] = True
            pending = pending[~hit]
            anc[pending] = tree.parent[anc[pending]]
            pending = pending[anc[pending] >= 0]

    gemm = classify.CLASS_INDEX[classify.GEMM]
    conv = classify.CLASS_INDEX[classify.CONVOLUTION]
    elem = classify.CLASS_INDEX[classify.ELEMENTWISE]
    self_ns = tree.self_ns
    loader = nodes[in_loader[nodes]]
    rest = nodes[~in_loader[nodes]]
    dispatch = rest[wrapper[rest]]
    work = rest[~wrapper[rest]]
    gc = work[(own[work] == gemm) | (own[work] == conv)]
    ew = work[own[work] == elem]
    oth = work[(own[work] != gemm) & (own[work] != conv) & (own[work] != elem)]

    fp32_ns, low_ns = _gemm_conv_dtypes(table, tree, gc)
    small = ew[self_ns[ew] < SMALL_OP_NS]
    annotations = np.flatnonzero(~is_op & inside)
    bf16, bf16_name = bf16_support(table)
    return CpuProfile(
        window=window, window_ns=max(0, hi - lo),
        op_ns=int(self_ns[nodes].sum()), ops=len(nodes),
        gemm_conv_ns=int(self_ns[gc].sum()), elementwise_ns=int(self_ns[ew].sum()),
        dispatch_ns=int(self_ns[dispatch].sum()), dataloader_ns=int(self_ns[loader].sum()),
        other_ns=int(self_ns[oth].sum()), annotation_ns=int(self_ns[annotations].sum()),
        gemm_conv_top=_top(table, tree, gc, top), elementwise_top=_top(table, tree, ew, top),
        dispatch_top=_top(table, tree, dispatch, top), other_top=_top(table, tree, oth, top),
        gemm_conv_fp32_ns=fp32_ns, gemm_conv_low_ns=low_ns,
        small_elementwise_ns=int(self_ns[small].sum()), small_elementwise_ops=len(small),
        elementwise_median_ns=int(percentile(self_ns[ew], 50)) if len(ew) else 0,
        threads=_threads(table, tree, nodes, lo, hi),
        bf16=bf16, bf16_evidence=bf16_name,
        waiting=_waiting(table, tree, nodes, top),
    )


def bf16_support(table: EventTable) -> tuple[str, str]:
    """Whether the trace shows bf16 hardware, from oneDNN kernel names or CPU flags in its
    event names and recorded dtypes: (AMX / AVX512_BF16 / NO_BF16 / UNKNOWN, the name)."""
    for pattern, verdict in ((_AMX, AMX), (_AVX512_BF16, AVX512_BF16)):
        for s in table.names:
            if pattern.search(s):
                return verdict, s
    isas = [(m.group(1).lower(), s) for s in table.names if (m := _ISA.search(s))]
    if isas and not any(isa.startswith(("avx512", "avx10")) for isa, _ in isas):
        return NO_BF16, isas[0][1]
    return UNKNOWN, ""


def _gemm_conv_dtypes(table: EventTable, tree: OpTree, nodes: np.ndarray) -> tuple[int, int]:
    """GEMM/convolution self time whose floating inputs are fp32 (or wider), and 16-bit."""
    if not len(nodes):
        return 0, 0
    rows = tree.row[nodes]
    verdict = np.full(len(nodes), -1, dtype=np.int8)
    if table.input_type is not None:
        types = table.input_type[rows].astype(np.int64)
        has = types >= 0
        if has.any():
            uniq, inverse = dense_ids(types[has])
            lut = np.array([{None: -1, False: 0, True: 1}[input_dtype_is_low(
                table.names[int(u)])] for u in uniq], dtype=np.int8)
            verdict[has] = lut[inverse.reshape(-1)]
    else:  # tables built without the interned column (the types are in ``inputs``)
        for i, r in enumerate(rows.tolist()):
            rec = table.op_inputs(r)
            if rec is not None and rec.types:
                v = input_dtype_is_low(INPUT_TYPE_SEP.join(str(t) for t in rec.types))
                verdict[i] = -1 if v is None else int(v)
    ns = tree.self_ns[nodes]
    return int(ns[verdict == 0].sum()), int(ns[verdict == 1].sum())


def _top(table: EventTable, tree: OpTree, nodes: np.ndarray, top: int) -> tuple[NameTime, ...]:
    if not len(nodes):
        return ()
    uniq, inverse = dense_ids(table.name[tree.row[nodes]].astype(np.int64))
    inverse = inverse.reshape(-1)
    totals = np.bincount(inverse, weights=tree.self_ns[nodes], minlength=len(uniq))
    counts = np.bincount(inverse, minlength=len(uniq))
    order = np.argsort(-totals, kind="stable")[:top]
    return tuple(NameTime(table.names[int(uniq[i])], int(counts[i]), int(round(totals[i])))
                 for i in order.tolist())


def _threads(table: EventTable, tree: OpTree, nodes: np.ndarray, lo: int, hi: int
             ) -> tuple[ThreadBusy, ...]:
    out = []
    for key in distinct(tree.thread[nodes]).tolist():
        mine = nodes[tree.thread[nodes] == key]
        start = np.clip(tree.start_ns[mine], lo, hi)
        end = np.clip(tree.end_ns[mine], lo, hi)
        pid, tid = tree.threads[key]
        out.append(ThreadBusy(
            pid=pid, tid=tid, label=table.thread_names.get((pid, tid)) or f"tid {tid}",
            ops=len(mine), busy_ns=intervals.length(start, end),
            op_ns=int(tree.self_ns[mine].sum())))
    return tuple(sorted(out, key=lambda t: -t.busy_ns))


def _waiting(table: EventTable, tree: OpTree, nodes: np.ndarray, top: int) -> Waiting | None:
    """Excess of the long ops over the fastest identical call, or over the work's floor.

    Calls are identical when they share the op name, ``Input Dims`` and ``Input type``.
    The first of them is judged only where a later one waited too: a first call alone
    may have spent its time creating oneDNN's kernels."""
    if not table.inputs:
        return None
    rows_of = tree.row
    names = table.name[rows_of]
    cand = nodes[tree.self_ns[nodes] >= WAIT_MIN_NS]
    judged_names = [i for i in distinct(names[cand]).tolist() if _is_work(table.names[i])]
    cand = cand[np.isin(names[cand], np.array(judged_names, dtype=names.dtype))]
    if not len(cand):
        return Waiting(0, 0, 0, ())
    # every call, anywhere in the trace, of the op names among the candidates, by start
    same = np.flatnonzero((table.cat[rows_of] == Cat.CPU_OP) & np.isin(names, names[cand]))
    same = same[np.argsort(tree.start_ns[same], kind="stable")]
    inputs = table.inputs
    itype = table.input_type[rows_of[same]].tolist() if table.input_type is not None \
        else [-1] * len(same)
    keys: dict[tuple, int] = {}
    group = np.array([
        keys.setdefault((n, rec.dims, rec.types or ty), len(keys))
        if (rec := inputs.get(r)) is not None else -1
        for r, n, ty in zip(rows_of[same].tolist(), names[same].tolist(), itype, strict=True)
    ], dtype=np.int64)
    ok = group >= 0
    same, group = same[ok], group[ok]
    n_groups = len(keys)
    first_at = np.full(n_groups, len(same), dtype=np.int64)
    np.minimum.at(first_at, group, np.arange(len(same)))
    first = same[first_at]  # the earliest call of each group (``same`` is by start)
    later = same != first[group]
    self_ns = tree.self_ns
    big = np.iinfo(np.int64).max
    fastest = np.full(n_groups, big, dtype=np.int64)
    np.minimum.at(fastest, group[later], self_ns[same[later]])
    group_of = dict(zip(same.tolist(), group.tolist(), strict=True))
    spread_ok = {i: not _DATA_DEPENDENT.search(table.names[i]) for i in judged_names}
    floors: dict[int, int | None] = {}

    def need_of(node: int, g: int, is_first: bool) -> int | None:
        if g not in floors:
            row = int(rows_of[node])
            cost = op_cost(table.names[int(names[node])], table.op_inputs(row))
            floors[g] = None if cost is None else WAIT_OVERHEAD_NS + int(
                1e9 * (cost.flops / FLOOR_FLOPS_PER_S + cost.bytes / FLOOR_BYTES_PER_S))
        bounds = [] if floors[g] is None else [floors[g]]
        if not is_first and spread_ok[int(names[node])] and fastest[g] < big:
            bounds.append(int(fastest[g]))
        return min(bounds) if bounds else None

    judged: list[tuple[int, int, int]] = []  # (node, self, need)
    waited_groups: set[int] = set()
    firsts = []
    for node in cand.tolist():
        g = group_of.get(node)
        if g is None:
            continue
        if first[g] == node:
            firsts.append((node, g))
            continue
        need = need_of(node, g, False)
        if need is not None:
            judged.append((node, int(self_ns[node]), need))
            if self_ns[node] > need:
                waited_groups.add(g)
    for node, g in firsts:
        need = need_of(node, g, True) if g in waited_groups else None
        if need is not None:
            judged.append((node, int(self_ns[node]), need))
    per_name: dict[str, list[int]] = {}
    excess = waiting = 0
    for node, s, need in judged:
        if s <= need:
            continue
        waiting += 1
        excess += s - need
        acc = per_name.setdefault(table.names[int(names[node])], [0, 0, 0, 0])
        acc[0] += s - need
        acc[1] += 1
        acc[2] += s
        acc[3] += need
    tops = sorted(per_name.items(), key=lambda kv: -kv[1][0])[:top]
    return Waiting(excess_ns=excess, judged_ops=len(judged), waiting_ops=waiting,
                   top=tuple((name, a[0], a[2] // a[1], a[3] // a[1]) for name, a in tops))


def _is_work(name: str) -> bool:
    """Whether an op's time is its own work (not a wait for other ranks, another thread
    or the clock)."""
    return not _NOT_WORK.search(name) and classify.classify_op(name) != classify.COMMUNICATION


# --- the rules ---------------------------------------------------------------------------


def with_cpu_findings(findings: Findings, table: EventTable, tree: OpTree, gpu: GpuActivity,
                      steps: Steps) -> Findings:
    """``findings`` with the CPU rules' after them, on a CPU-only trace: no GPU activity,
    and no sign of GPU work whose activity went unrecorded (runtime calls, [memory] events
    on a GPU, ops that exist only on a GPU), whose CPU op times would be launch times."""
    if len(gpu) or len(table.rows(Cat.RUNTIME)) or (table.memory.device_type != 0).any() \
            or any(_GPU_ONLY_OP.search(n) for n in table.names):
        return findings
    cpu = cpu_recommendations(table, tree, steps)
    return Findings(findings.recommendations + cpu.recommendations, findings.notes + cpu.notes)


def cpu_recommendations(table: EventTable, tree: OpTree, steps: Steps) -> Findings:
    """The CPU rules (meant for traces without GPU activity)."""
    p = cpu_profile(table, tree, steps)
    notes: list[Note] = []
    if p.op_ns <= 0:
        notes.append(note("cpu_rules_no_op_time", window=_where(p)))
        return Findings((), tuple(notes))
    recs = _waiting_rule(p, notes)
    if recs:
        notes.append(note("cpu_rules_not_judged_waiting"))
    else:
        recs += _fp32_matmul_conv(p, notes)
        recs += _small_elementwise(p)
    if len(p.threads) == 1 and p.threads[0].busy_ns >= ONE_THREAD_BUSY * p.window_ns:
        notes.append(note("cpu_one_thread"))
    return Findings(tuple(recs), tuple(notes))


def _where(p: CpuProfile) -> str:
    return "steps" if p.window == "steps" else "trace"


def _names(top: tuple[NameTime, ...]) -> str:
    return ", ".join(t.name for t in top[:2])


def _context(p: CpuProfile) -> list[Evidence]:
    """Where the CPU time in ops goes, and the threads that ran them (every CPU rule's
    evidence ends with these)."""
    threads = f"{len(p.threads)} thread{'s' if len(p.threads) != 1 else ''}"
    ev = [Evidence(f"CPU time in ops ({_where(p)}, {threads})", p.op_ns, "ns")]
    for label, ns, top in (("GEMM/convolution (oneDNN/MKL)", p.gemm_conv_ns, p.gemm_conv_top),
                           ("elementwise", p.elementwise_ns, p.elementwise_top),
                           ("dispatch overhead (wrapper ops' self time)", p.dispatch_ns,
                            p.dispatch_top),
                           ("in the DataLoader", p.dataloader_ns, ()),
                           ("other ops", p.other_ns, p.other_top)):
        if ns > 0:
            ev.append(Evidence(label, p.share(ns), "fraction", name=_names(top)))
    ev.append(Evidence("outside ops, in record_function/ProfilerStep ranges (Python, "
                       "untraced code or waiting)", p.annotation_ns, "ns"))
    ev += [Evidence("busy (union of its ops)", t.busy_ns, "ns", name=t.label)
           for t in p.threads[:3]]
    return ev + [Evidence(f"{_where(p)} window", p.window_ns, "ns")]


def _waiting_rule(p: CpuProfile, notes: list[Note]) -> list[Recommendation]:
    w = p.waiting
    if w is None:
        notes.append(note("cpu_waiting_no_shapes"))
        return []
    share = p.share(w.excess_ns)
    if share < WAITING_SHARE:
        return []
    ev = [Evidence("time ops waited beyond their work", w.excess_ns, "ns"),
          Evidence("ops of 1 ms or more judged", w.judged_ops, "count"),
          Evidence("of them waiting", w.waiting_ops, "count")]
    for name, excess, typical, need in w.top:
        ev += [Evidence("waited", excess, "ns", name=name),
               Evidence("its waiting calls, mean", typical, "ns", name=name),
               Evidence("what their work needs at most, mean", need, "ns", name=name)]
    return [Recommendation(
        rule="cpu_ops_waiting", scope="trace",
        measured=share, threshold=WAITING_SHARE, fires_when="above", unit="fraction",
        evidence=tuple(ev + _context(p)))]


def _fp32_matmul_conv(p: CpuProfile, notes: list[Note]) -> list[Recommendation]:
    share = p.share(p.gemm_conv_ns)
    if share < GEMM_CONV_SHARE:
        return []
    if p.gemm_conv_fp32_ns + p.gemm_conv_low_ns <= 0:
        notes.append(note("cpu_precision_no_input_types"))
        return []
    fp32 = p.gemm_conv_fp32_ns / p.gemm_conv_ns
    if fp32 < FP32_SHARE:
        return []
    if p.bf16 == NO_BF16:
        notes.append(note("cpu_bf16_not_advised", kernel=p.bf16_evidence))
        return []
    ev = [Evidence("of it in fp32", fp32, "fraction"),
          Evidence("bf16 hardware", p.bf16, "", name=p.bf16_evidence)]
    ev += [Evidence("op", t.ns, "ns", name=t.name) for t in p.gemm_conv_top]
    return [Recommendation(
        rule="cpu_fp32_matmul_conv", scope="trace",
        variant="bf16_units" if p.bf16 in (AMX, AVX512_BF16) else "cpu_unknown",
        figures={"bf16": p.bf16}, measured=share, threshold=GEMM_CONV_SHARE, fires_when="above",
        unit="fraction", evidence=tuple(ev + _context(p)))]


def _small_elementwise(p: CpuProfile) -> list[Recommendation]:
    share = p.share(p.small_elementwise_ns)
    if share < ELEMENTWISE_SHARE or p.small_elementwise_ops < SMALL_OP_MIN_COUNT:
        return []
    ev = [Evidence("elementwise calls below 100 µs", p.small_elementwise_ops, "count"),
          Evidence("their time", p.small_elementwise_ns, "ns"),
          Evidence("median elementwise call", p.elementwise_median_ns, "ns")]
    ev += [Evidence("op", t.ns, "ns", name=t.name) for t in p.elementwise_top]
    return [Recommendation(
        rule="cpu_small_elementwise_ops", scope="trace",
        measured=share, threshold=ELEMENTWISE_SHARE, fires_when="above", unit="fraction",
        evidence=tuple(ev + _context(p)))]
