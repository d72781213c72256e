"""Time by ``nn.Module`` instance and by source line, forward and backward.

Every kernel (by its launch) and every CPU op (by its self time) is placed at an *anchor*:
where it was launched or ran, or, for the work of a backward op, where the forward op
that created it ran (:mod:`.backward`). The innermost ``nn.Module`` call open at the
anchor owns the time, as do its enclosing calls (inclusive times); the first user frame
around it (library frames folded as ``profkit memory`` folds them) names the line.
A module's device time is the GPU time of the kernels launched inside its calls, its
host time the wall time of its calls; both summed over the trace.

``AccumulateGrad`` has no forward op; autograd runs it as soon as the gradient it
takes is ready, right after the backward op that produced it, so it goes with the
backward op that ran just before it on its thread.
"""

from __future__ import annotations

import msgspec
import numpy as np

from profiler_kit.analysis.code.backward import BackwardLinks, link_backward
from profiler_kit.analysis.code.frames import (
    MODULE_PREFIX,
    Nesting,
    frame_rows,
    module_rows,
    thread_ids,
)
from profiler_kit.analysis.code.kernel_names import fused_kernel
from profiler_kit.analysis.code.provenance import (
    KernelSource,
    Provenance,
    find_kernel,
    graph_keys,
    kernel_sites,
)
from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.arrays import dense_ids, distinct
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.note import Note, note
from profiler_kit.analysis.core.op_tree import OpTree
from profiler_kit.analysis.core.steps import cpu_steps
from profiler_kit.analysis.memory.code_sites import is_library_file
from profiler_kit.analysis.perf.sm_occupancy import SmOccupancy
from profiler_kit.trace.table import Cat, EventTable

GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch"})
NO_MODULES_NOTE = note("no_module_events")
NO_STACKS_NOTE = note("no_calling_lines")


class ModuleNode(msgspec.Struct, frozen=True):
    """One nn.Module instance (named as the profiler names it: ``Linear_3``), its calls'
    times summed over the trace; ``children`` are the instances called inside it."""

    name: str
    calls: int
    host_ns: int  # wall time of its calls
    self_host_ns: int  # less the calls of the modules inside
    device_ns: int  # GPU time of the kernels launched inside its calls (forward)
    self_device_ns: int  # less those inside the modules it calls
    backward_device_ns: int  # GPU time of the backward of its forward ops
    op_ns: int  # CPU op self time inside its calls (forward)
    backward_op_ns: int  # CPU op self time of the backward of its forward ops
    # each of the three less that of the modules it calls (what is the module's own)
    self_backward_device_ns: int = 0
    self_op_ns: int = 0
    self_backward_op_ns: int = 0
    children: tuple[ModuleNode, ...] = ()


class Item(msgspec.Struct, frozen=True):
    """An op or kernel name under a source line; ``fused_ops``: what an Inductor kernel
    stands for, from its name."""

    name: str
    count: int
    device_ns: int
    op_ns: int
    fused_ops: tuple[str, ...] = ()


class SourceLine(msgspec.Struct, frozen=True):
    site: str  # "file:line (function)"
    device_ns: int
    backward_device_ns: int
    op_ns: int
    backward_op_ns: int
    ops: tuple[Item, ...]
    kernels: tuple[Item, ...]


class Coverage(msgspec.Struct, frozen=True):
    """How much of the steps' time the modules' forward and backward account for.

    ``measure``: "device" (kernel time) or "cpu_op" (CPU op self time, traces without GPU
    work). ``share`` = (forward + backward) / (total - optimizer)."""

    measure: str
    total_ns: int
    optimizer_ns: int
    forward_ns: int
    backward_ns: int
    share: float | None
    unattributed: dict[str, int]  # what the rest is: "DataLoader", "collectives", ...


class FusedKernel(msgspec.Struct, frozen=True):
    """A kernel Inductor generated; ``lines`` and ``nodes``: the user's lines and the FX
    nodes it fused, from Inductor's provenance saved beside the trace (empty without)."""

    name: str
    kind: str  # "Triton pointwise", "C++", ...
    ops: tuple[str, ...]
    count: int
    device_ns: int
    op_ns: int = 0  # C++ kernels on the CPU: their ops' self time
    lines: tuple[str, ...] = ()
    nodes: tuple[str, ...] = ()


class GraphReplay(msgspec.Struct, frozen=True):
    """CUDA graph replays (``cudaGraphLaunch``) and the kernels they ran."""

    launches: int
    device_ns: int
    kernels: tuple[Item, ...]


class CodeView(msgspec.Struct, frozen=True):
    steps: int  # ProfilerStep spans (0: none); the times are sums over the trace
    module_calls: int
    modules: tuple[ModuleNode, ...]  # the roots, by name
    lines: tuple[SourceLine, ...]  # by device time (then CPU op time)
    backward_ops: int
    backward_linked: int
    coverage: Coverage | None
    compiled: tuple[FusedKernel, ...]
    graph_replays: GraphReplay | None
    notes: tuple[Note, ...]


def analyze_code(table: EventTable, tree: OpTree, gpu: GpuActivity, top: int = 5,
                 provenance: Provenance | None = None) -> CodeView:
    """``provenance``: Inductor's, saved beside the trace of a compiled model; its kernels
    go to the user's lines of the nodes they fused (the first line where several)."""
    frames = frame_rows(table)
    mods = Nesting(table, module_rows(table, frames))
    fr = Nesting(table, frames)
    links = _with_accumulate_grad(table, tree, link_backward(table, tree))
    notes: list[Note] = []
    if not len(fr):
        notes.append(NO_MODULES_NOTE)
    elif table.call_from is None or not (table.call_from[frames] >= 0).any():
        notes.append(NO_STACKS_NOTE)

    found: dict[str, KernelSource] = {}
    k_thread, k_ts, k_bwd, k_fwd, k_prov = _kernel_anchors(table, tree, gpu, links,
                                                           provenance, found)
    k_dur = table.dur_ns[gpu.row]

    # CPU ops: self time, anchored where they ran, or at their forward op
    ops = np.flatnonzero(table.cat[tree.row] == Cat.CPU_OP) if len(tree) \
        else np.zeros(0, dtype=np.int64)
    o_thread = thread_ids(table.pid[tree.row[ops]], table.tid[tree.row[ops]])
    o_ts = tree.start_ns[ops].copy()
    o_bwd = links.backward_node[ops] >= 0
    o_fwd = links.forward_node[ops]
    o_prov = _compiled_sites(table, provenance, table.name[tree.row[ops]], o_thread, o_ts,
                             o_bwd, found)
    _move_to_forward(table, tree, o_bwd, o_fwd, o_thread, o_ts)
    o_dur = tree.self_ns[ops]

    k_mod = mods.innermost(k_thread, k_ts)
    o_mod = mods.innermost(o_thread, o_ts)
    # collectives are the job's, not a module's (DDP launches them from AccumulateGrad)
    k_comm = gpu.klass == classify.CLASS_INDEX[classify.COMMUNICATION]
    k_mod[(k_bwd & (k_fwd < 0)) | k_comm] = -1
    o_mod[o_bwd & (o_fwd < 0)] = -1
    modules = _module_tree(table, mods, k_mod, k_bwd, k_dur, o_mod, o_bwd, o_dur)

    launch_name = np.where(gpu.launch_row >= 0, table.name[np.maximum(gpu.launch_row, 0)], -1)
    graph_ids = [i for i, n in enumerate(table.names) if n in GRAPH_LAUNCHES]
    k_graph = np.isin(launch_name, graph_ids) if graph_ids else np.zeros(len(gpu), dtype=bool)

    lines: tuple[SourceLine, ...] = ()
    if len(fr) or found:
        # one call for both: their anchors share the walks up the frames
        both = _sites(table, fr, np.concatenate([k_thread, o_thread]),
                      np.concatenate([k_ts, o_ts]))
        k_site, o_site = both[:len(k_ts)], both[len(k_ts):]
        k_site = _charged(k_site, k_prov, (k_bwd & (k_fwd < 0)) | k_comm)
        o_site = _charged(o_site, o_prov, o_bwd & (o_fwd < 0))
        lines = _lines(table, tree, gpu, ops, k_site, k_bwd, k_dur, o_site, o_bwd, o_dur, top)
    coverage = _coverage(table, tree, gpu, ops, k_mod, k_bwd & (k_fwd < 0), k_bwd, k_dur,
                         k_graph, o_mod, o_bwd & (o_fwd < 0), o_bwd, o_dur) if len(mods) else None
    return CodeView(
        steps=len(cpu_steps(table)), module_calls=len(mods), modules=modules, lines=lines,
        backward_ops=links.backward_ops, backward_linked=links.linked, coverage=coverage,
        compiled=_compiled(table, gpu, k_dur, tree, ops, o_dur, found),
        graph_replays=_graph(table, gpu, k_graph, k_dur, launch_name, top),
        notes=tuple(notes))


def _kernel_anchors(table: EventTable, tree: OpTree, gpu: GpuActivity, links: BackwardLinks,
                    provenance: Provenance | None, found: dict[str, KernelSource]) -> tuple:
    """Where each GPU activity is charged: (thread, time) of its launch, or of the forward
    op of its backward op; whether it is backward work, that forward op's node, and the
    user's line Inductor's provenance gives a compiled kernel (None: none)."""
    k_node = gpu.node
    k_rows = np.where(gpu.launch_row >= 0, gpu.launch_row,
                      np.where(gpu.op_row >= 0, gpu.op_row, gpu.row))
    k_thread = thread_ids(table.pid[k_rows], table.tid[k_rows])
    k_ts = table.ts_ns[k_rows].copy()
    k_bwd = np.where(k_node >= 0, links.backward_node[np.maximum(k_node, 0)] >= 0, False) \
        if len(tree) else np.zeros(len(gpu), dtype=bool)
    k_fwd = np.where(k_node >= 0, links.forward_node[np.maximum(k_node, 0)], -1) \
        if len(tree) else np.full(len(gpu), -1, dtype=np.int64)
    k_prov = _compiled_sites(table, provenance, table.name[gpu.row], k_thread, k_ts, k_bwd,
                             found)
    _move_to_forward(table, tree, k_bwd, k_fwd, k_thread, k_ts)
    return k_thread, k_ts, k_bwd, k_fwd, k_prov


def _charged(site: np.ndarray, provenance: np.ndarray, none: np.ndarray) -> np.ndarray:
    """The user's line of each anchor: Inductor's where it gives one; none where ``none``
    (backward work with no forward op, collectives)."""
    out = np.where(provenance != None, provenance, site)  # noqa: E711 - elementwise
    out[none] = None
    return out


def kernel_lines(table: EventTable, tree: OpTree, gpu: GpuActivity,
                 provenance: Provenance | None = None) -> np.ndarray:
    """Per GPU activity (``gpu``'s order): the user's line (``file:line (function)``) the
    code view charges it to, None where none; all None for a trace without Python frames."""
    frames = frame_rows(table)
    fr = Nesting(table, frames)
    out = np.full(len(gpu), None, dtype=object)
    if not len(fr) or not len(gpu):
        return out
    links = _with_accumulate_grad(table, tree, link_backward(table, tree))
    k_thread, k_ts, k_bwd, k_fwd, k_prov = _kernel_anchors(table, tree, gpu, links,
                                                           provenance, {})
    k_comm = gpu.klass == classify.CLASS_INDEX[classify.COMMUNICATION]
    return _charged(_sites(table, fr, k_thread, k_ts), k_prov, (k_bwd & (k_fwd < 0)) | k_comm)


def _move_to_forward(table: EventTable, tree: OpTree, bwd: np.ndarray, fwd: np.ndarray,
                     thread: np.ndarray, ts: np.ndarray) -> None:
    """Anchors of backward work at the start of their forward op (in place)."""
    sel = np.flatnonzero(bwd & (fwd >= 0))
    if len(sel):
        f = fwd[sel]
        thread[sel] = thread_ids(table.pid[tree.row[f]], table.tid[tree.row[f]])
        ts[sel] = tree.start_ns[f]


def _with_accumulate_grad(table: EventTable, tree: OpTree, links: BackwardLinks
                          ) -> BackwardLinks:
    """AccumulateGrad backward ops take the forward op of the backward op that ran just
    before them on their thread (autograd runs them as soon as their input is ready)."""
    n = len(tree)
    if not n or not links.backward_ops:
        return links
    roots = np.flatnonzero(links.backward_node == np.arange(n))
    acc_ids = [i for i, nm in enumerate(table.names) if nm.endswith("AccumulateGrad")]
    if not acc_ids or not len(roots):
        return links
    is_acc = np.isin(table.name[tree.row[roots]], acc_ids)
    fwd_of_root = links.forward_node[roots].copy()
    prev = -1
    last_thread = -1
    for j in range(len(roots)):  # roots are in (thread, start) order
        r = int(roots[j])
        if tree.thread[r] != last_thread:
            prev, last_thread = -1, int(tree.thread[r])
        if is_acc[j] and fwd_of_root[j] < 0:
            fwd_of_root[j] = prev
        elif fwd_of_root[j] >= 0:
            prev = int(fwd_of_root[j])
    new_root_fwd = np.full(n, -1, dtype=np.int64)
    new_root_fwd[roots] = fwd_of_root
    bnode = links.backward_node
    forward = np.where(bnode >= 0, new_root_fwd[np.maximum(bnode, 0)], -1)
    return BackwardLinks(bnode, forward, links.backward_ops, int((fwd_of_root >= 0).sum()))


def _module_tree(table: EventTable, mods: Nesting, k_mod, k_bwd, k_dur, o_mod, o_bwd, o_dur
                 ) -> tuple[ModuleNode, ...]:
    m = len(mods)
    if not m:
        return ()

    def per_call(idx: np.ndarray, sel: np.ndarray, w: np.ndarray) -> np.ndarray:
        keep = sel & (idx >= 0)
        return np.bincount(idx[keep], weights=w[keep], minlength=m).astype(np.int64) \
            if keep.any() else np.zeros(m, dtype=np.int64)

    excl = np.stack([per_call(k_mod, ~k_bwd, k_dur), per_call(k_mod, k_bwd, k_dur),
                     per_call(o_mod, ~o_bwd, o_dur), per_call(o_mod, o_bwd, o_dur)])
    incl = excl.copy()
    host = mods.end - mods.start
    child_host = np.zeros(m, dtype=np.int64)
    parent = mods.parent
    for c in range(m - 1, -1, -1):  # children come after their parents
        p = int(parent[c])
        if p >= 0:
            incl[:, p] += incl[:, c]
            child_host[p] += min(mods.end[c], mods.end[p]) - mods.start[c]
    uniq, inst = dense_ids(table.name[mods.row])
    inst = inst.reshape(-1)
    k = len(uniq)

    def per_inst(v: np.ndarray) -> list[int]:
        return np.bincount(inst, weights=v, minlength=k).astype(np.int64).tolist()

    calls = np.bincount(inst, minlength=k).tolist()
    host_i, self_host_i = per_inst(host), per_inst(host - child_host)
    dev_i, bdev_i, op_i, bop_i = (per_inst(incl[j]) for j in range(4))
    self_dev_i, self_bdev_i, self_op_i, self_bop_i = (per_inst(excl[j]) for j in range(4))
    first = np.full(k, m, dtype=np.int64)
    np.minimum.at(first, inst, np.arange(m))
    first_order = np.argsort(mods.start[first], kind="stable")
    parent_inst = np.where(parent[first] >= 0, inst[np.maximum(parent[first], 0)], -1)
    kids: dict[int, list[int]] = {}
    for i in first_order.tolist():
        if parent_inst[i] != i:
            kids.setdefault(int(parent_inst[i]), []).append(i)

    def node(i: int, seen: frozenset[int]) -> ModuleNode:
        name = table.names[int(uniq[i])].removeprefix(MODULE_PREFIX)
        children = tuple(node(c, seen | {c}) for c in kids.get(i, []) if c not in seen)
        return ModuleNode(name, calls[i], host_i[i], self_host_i[i], dev_i[i], self_dev_i[i],
                          bdev_i[i], op_i[i], bop_i[i], self_bdev_i[i], self_op_i[i],
                          self_bop_i[i], children)

    roots = [node(i, frozenset({i})) for i in kids.get(-1, [])]
    return tuple(sorted(roots, key=lambda r: r.name))


def _frame_site(name: str) -> tuple[str, str] | None:
    """(``file:line``, function) from a frame name ``file.py(12): forward``."""
    if "): " not in name or "(" not in name:
        return None
    head, func = name.split("): ", 1)
    file, _, line = head.rpartition("(")
    return (f"{file}:{line}", func) if file else None


def _sites(table: EventTable, fr: Nesting, thread: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """Per anchor: ``file:line (function)`` of the first user frame around it (None: none).

    With ``CallFrom``, the innermost frame called from a user's file names the calling
    line and the caller's function; without it, the innermost frame of a user's file
    names its own first line. Every frame on a walk up gets the walk's answer: the frames
    below the first user frame have it too."""
    calls = table.call_from
    names = table.names
    frame_row, frame_parent = fr.row, fr.parent
    site_of: dict[int, str | None] = {-1: None}

    def own_site(node: int) -> str | None:
        row = int(frame_row[node])
        c = int(calls[row]) if calls is not None else -1
        if c >= 0:
            where = names[c]
            if is_library_file(where.rsplit(":", 1)[0]):
                return None
            p = int(frame_parent[node])
            fs = _frame_site(names[int(table.name[frame_row[p]])]) if p >= 0 else None
            return f"{where} ({fs[1]})" if fs else where
        fs = _frame_site(names[int(table.name[row])])
        if fs is None or is_library_file(fs[0].rsplit(":", 1)[0]):
            return None
        return f"{fs[0]} ({fs[1]})"

    innermost, anchor_innermost = dense_ids(fr.innermost(thread, ts))
    sites = np.empty(len(innermost), dtype=object)
    for j, node in enumerate(innermost.tolist()):
        walked = []
        while node not in site_of:
            walked.append(node)
            site = own_site(node)
            if site is not None:
                site_of[node] = site
                break
            node = int(frame_parent[node])
        site = site_of[node]
        for w in walked:
            site_of[w] = site
        sites[j] = site
    return sites[anchor_innermost.reshape(-1)]


def _lines(table, tree, gpu, ops, k_site, k_bwd, k_dur, o_site, o_bwd, o_dur, top
           ) -> tuple[SourceLine, ...]:
    sites: dict[str, int] = {}
    k_sum, k_items = _by_site(sites, k_site, k_bwd, k_dur, table.name[gpu.row])
    o_sum, o_items = _by_site(sites, o_site, o_bwd, o_dur, table.name[tree.row[ops]])
    names = table.names

    def items(ranked: list[tuple[int, int, int]], device: bool) -> tuple[Item, ...]:
        best = sorted(ranked, key=lambda it: (-it[2], names[it[0]]))[:top]
        return tuple(Item(names[n], c, t if device else 0, 0 if device else t,
                          (fused_kernel(names[n]) or ("", ()))[1]) for n, c, t in best)

    out = []
    for site, i in sites.items():
        k_fwd, k_back = k_sum[i] if i < len(k_sum) else (0, 0)
        o_fwd, o_back = o_sum[i] if i < len(o_sum) else (0, 0)
        out.append(SourceLine(site, int(k_fwd), int(k_back), int(o_fwd), int(o_back),
                              items(o_items.get(i, []), False), items(k_items.get(i, []), True)))
    return tuple(sorted(out, key=lambda x: (-(x.device_ns + x.backward_device_ns),
                                            -(x.op_ns + x.backward_op_ns), x.site)))


def _by_site(sites: dict[str, int], site: np.ndarray, bwd: np.ndarray, dur: np.ndarray,
             name: np.ndarray) -> tuple[np.ndarray, dict[int, list[tuple[int, int, int]]]]:
    """Per site id (``sites`` numbers new ones): (forward, backward) time, and its
    (name id, count, time) items."""
    number = sites.setdefault
    sid = np.fromiter((-1 if s is None else number(s, len(sites)) for s in site.tolist()),
                      dtype=np.int64, count=len(site))
    keep = sid >= 0
    sid, bwd, dur, name = sid[keep], bwd[keep], dur[keep].astype(np.int64), name[keep]
    sums = np.zeros((len(sites), 2), dtype=np.int64)
    np.add.at(sums, (sid, bwd.astype(np.int64)), dur)
    pairs, inverse = dense_ids((sid << np.int64(32)) | name.astype(np.int64))
    inverse = inverse.reshape(-1)
    counts = np.bincount(inverse, minlength=len(pairs))
    totals = np.zeros(len(pairs), dtype=np.int64)
    np.add.at(totals, inverse, dur)
    items: dict[int, list[tuple[int, int, int]]] = {}
    for p, c, t in zip(pairs.tolist(), counts.tolist(), totals.tolist(), strict=True):
        items.setdefault(p >> 32, []).append((p & 0xFFFFFFFF, c, t))
    return sums, items


def _flag_under(table: EventTable, tree: OpTree, prefixes: tuple[str, ...]) -> np.ndarray:
    """Per tree node: it or an ancestor has a name starting with one of ``prefixes``."""
    ids = [i for i, n in enumerate(table.names) if n.startswith(prefixes)]
    flag = np.isin(table.name[tree.row], ids) if ids else np.zeros(len(tree), dtype=bool)
    up = tree.parent.copy()
    while True:
        has = np.flatnonzero((up >= 0) & ~flag)
        if not len(has):
            return flag
        flag[has] |= flag[up[has]] | np.isin(table.name[tree.row[up[has]]], ids)
        up[has] = tree.parent[up[has]]


def _coverage(table, tree, gpu, ops, k_mod, k_unlinked, k_bwd, k_dur, k_graph,
              o_mod, o_unlinked, o_bwd, o_dur) -> Coverage:
    steps = cpu_steps(table)
    optimizer = _flag_under(table, tree, ("Optimizer.",))
    loader = _flag_under(table, tree, ("enumerate(DataLoader)",))
    comm = classify.CLASS_INDEX[classify.COMMUNICATION]
    use_gpu = bool((table.cat[gpu.row] == Cat.KERNEL).any()) if len(gpu) else False
    if use_gpu:
        node, mod, bwd, dur, unlinked = gpu.node, k_mod, k_bwd, k_dur, k_unlinked
        is_comm = gpu.klass == comm
        graph = k_graph
        ts = np.where(gpu.launch_row >= 0, table.ts_ns[np.maximum(gpu.launch_row, 0)],
                      table.ts_ns[gpu.row])
    else:
        node, mod, bwd, dur, unlinked = ops, o_mod, o_bwd, o_dur, o_unlinked
        ts = tree.start_ns[ops]
        is_comm = tree.own_klass[ops] == comm
        graph = np.zeros(len(ops), dtype=bool)
    inside = np.zeros(len(dur), dtype=bool)
    if steps:
        for _n, s, d in steps:
            inside |= (ts >= s) & (ts < s + d)
    else:
        inside[:] = True
    safe = np.maximum(node, 0)
    has_node = node >= 0
    opt = has_node & optimizer[safe] & inside
    rest = inside & ~opt
    fwd_ns = int(dur[rest & (mod >= 0) & ~bwd].sum())
    bwd_ns = int(dur[rest & (mod >= 0) & bwd].sum())
    left = rest & (mod < 0)
    buckets = {
        "DataLoader": left & has_node & loader[safe],
        "collectives": left & is_comm,
        "CUDA graph replays": left & graph,
        "backward not linked to a forward op": left & unlinked,
    }
    unattributed: dict[str, int] = {}
    taken = np.zeros(len(dur), dtype=bool)
    for name, sel in buckets.items():
        sel = sel & ~taken
        taken |= sel
        if sel.any():
            unattributed[name] = int(dur[sel].sum())
    outside = left & ~taken
    if outside.any():
        unattributed["outside any nn.Module"] = int(dur[outside].sum())
    total = int(dur[inside].sum())
    opt_ns = int(dur[opt].sum())
    base = total - opt_ns
    return Coverage("device" if use_gpu else "cpu_op", total, opt_ns, fwd_ns, bwd_ns,
                    (fwd_ns + bwd_ns) / base if base > 0 else None, unattributed)


def _compiled_sites(table: EventTable, provenance: Provenance | None, name_ids: np.ndarray,
                    thread: np.ndarray, ts: np.ndarray, bwd: np.ndarray,
                    found: dict[str, KernelSource]) -> np.ndarray:
    """Per kernel (or CPU op): the user's line of the nodes its compiled kernel fused, from
    the provenance, looked up in the graph whose ``## Call CompiledFxGraph`` range it ran
    in; None where it is no compiled kernel or the provenance does not hold it.
    ``found`` collects each kernel name's source (the first found)."""
    out = np.full(len(name_ids), None, dtype=object)
    if provenance is None or not len(name_ids):
        return out
    compiled_ids = [i for i in distinct(name_ids).tolist()
                    if i >= 0 and fused_kernel(table.names[i]) is not None]
    sel = np.flatnonzero(np.isin(name_ids, compiled_ids)) if compiled_ids else []
    if not len(sel):
        return out
    keys = graph_keys(table, thread[sel], ts[sel])
    for j, key in zip(sel.tolist(), keys, strict=True):
        name = table.names[int(name_ids[j])]
        src = find_kernel(provenance, name, key, bool(bwd[j]))
        if src is None:
            continue
        found.setdefault(name, src)
        sites = kernel_sites(src)
        if sites:
            out[j] = sites[0]
    return out


def _compiled(table: EventTable, gpu: GpuActivity, k_dur: np.ndarray, tree: OpTree,
              ops: np.ndarray, o_dur: np.ndarray, found: dict[str, KernelSource]
              ) -> tuple[FusedKernel, ...]:
    """Inductor's kernels: on the GPU by kernel time, C++ ones on the CPU (ops named
    ``graph_0_cpp_fused_...``) by their self time."""
    out = []
    for rows, dur, device in ((gpu.row, k_dur, True), (tree.row[ops], o_dur, False)):
        if not len(rows):
            continue
        uniq, inv = dense_ids(table.name[rows])
        inv = inv.reshape(-1)
        for i, u in enumerate(uniq.tolist()):
            name = table.names[u]
            parsed = fused_kernel(name)
            if parsed is None:
                continue
            sel = inv == i
            total = int(dur[sel].sum())
            src = found.get(name)
            out.append(FusedKernel(name, parsed[0], parsed[1], int(sel.sum()),
                                   total if device else 0, 0 if device else total,
                                   kernel_sites(src) if src else (),
                                   src.nodes if src else ()))
    return tuple(sorted(out, key=lambda f: (-(f.device_ns + f.op_ns), f.name)))


def _graph(table, gpu, k_graph, k_dur, launch_name, top) -> GraphReplay | None:
    if not k_graph.any():
        return None
    graph_ids = [i for i, n in enumerate(table.names) if n in GRAPH_LAUNCHES]
    launches = int(np.isin(table.name, graph_ids).sum())
    d: dict[str, list[int]] = {}
    for row, dur in zip(gpu.row[k_graph].tolist(), k_dur[k_graph].tolist(), strict=True):
        it = d.setdefault(table.names[int(table.name[row])], [0, 0])
        it[0] += 1
        it[1] += dur
    ranked = sorted(d.items(), key=lambda kv: (-kv[1][1], kv[0]))[:top]
    return GraphReplay(launches, int(k_dur[k_graph].sum()),
                       tuple(Item(n, c, t, 0) for n, (c, t) in ranked))


def with_idle_kernel_lines(sm: SmOccupancy, code: CodeView | None) -> SmOccupancy:
    """The kernels that idle the SMs with the user's line that launched most of their
    time, from the code view (traces recorded with stacks)."""
    if code is None or not sm.idle_kernels or not code.lines:
        return sm
    best: dict[str, tuple[int, str]] = {}
    for line in code.lines:
        for k in line.kernels:
            if k.name not in best or k.device_ns > best[k.name][0]:
                best[k.name] = (k.device_ns, line.site)
    if not best:
        return sm
    idle = tuple(msgspec.structs.replace(k, source=best[k.name][1]) if k.name in best else k
                 for k in sm.idle_kernels)
    return msgspec.structs.replace(sm, idle_kernels=idle)
