"""The changes a what-if can make, each a small edit of the replay graph.

Each change edits an :class:`~profiler_kit.analysis.whatif.engine.Edits` in place (the
durations of GPU activities, streams and waits, which blocking calls still wait, host
time removed or added) and says in a note what it touched and which bound it used, as a
code and figures (:mod:`profiler_kit.render.wording.whatif_notes` words them). Changes
compose: several edit the same ``Edits`` in turn.
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.core import classify, intervals
from profiler_kit.analysis.core.arrays import dense_ids, distinct, median
from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.analysis.core.note import note
from profiler_kit.analysis.core.op_tree import OpTree, build_op_tree
from profiler_kit.analysis.perf.autocast_scope import in_reach
from profiler_kit.analysis.perf.device_specs import compute_peak, device_of_table
from profiler_kit.analysis.perf.perf_model import op_cost
from profiler_kit.analysis.perf.precision import eligible_mask, tf32_kernel
from profiler_kit.analysis.time.critical_path import LAUNCH_CALLS
from profiler_kit.analysis.whatif.engine import Edits
from profiler_kit.analysis.whatif.graph import Graph
from profiler_kit.trace.table import Cat, EventTable

# the host's wait for the next batch, as the TensorBoard plugin names it
DATALOADER = re.compile(r"^enumerate\(DataLoader\)#.*\.__next__$")
PRECISIONS = ("bf16", "fp16")
# the codes of the notes of a change that found nothing to change on the trace
NOTHING_TO_CHANGE = frozenset({
    "no_matching_activity", "precision_device_without_peaks", "no_fp32_matrix_kernel_in_reach",
    "no_faster_matrix_rate", "no_gpu_launch", "no_graph_region", "no_fusable_kernel",
    "no_fusable_run", "no_dataloader_next", "no_blocking_wait_in_steps",
    "no_communication_kernel", "straggler_needs_ranks", "no_op_measured"})


class Context:
    """What a change reads: the trace, its GPU activities, the graph (and the op tree,
    built on first use)."""

    def __init__(self, table: EventTable, gpu: GpuActivity, graph: Graph,
                 tree: OpTree | None = None) -> None:
        self.table, self.gpu, self.graph = table, gpu, graph
        self._tree: OpTree | None = tree

    @property
    def tree(self) -> OpTree:
        if self._tree is None:
            self._tree = build_op_tree(self.table)
        return self._tree


class Change(msgspec.Struct, frozen=True):
    """One change; ``label`` names it as the command line does."""

    def label(self) -> str:
        raise NotImplementedError

    def apply(self, ctx: Context, e: Edits) -> None:
        raise NotImplementedError


class Kernels(Change, frozen=True):
    """GPU activities of a class (``classify.CLASSES``: gemm, convolution, communication,
    ...) or whose name matches a regular expression run ``factor`` times faster."""

    pattern: str
    factor: float

    def label(self) -> str:
        return f"kernels {self.pattern}={self.factor:g}"

    def matches(self, ctx: Context) -> np.ndarray:
        g, t = ctx.graph, ctx.table
        if self.pattern in classify.CLASS_INDEX:
            return g.klass == classify.CLASS_INDEX[self.pattern]
        regex = re.compile(self.pattern)
        uniq, inverse = dense_ids(t.name[g.row])
        hit = np.array([bool(regex.search(t.names[int(u)])) for u in uniq], dtype=bool)
        return hit[inverse.reshape(-1)] if len(uniq) else np.zeros(len(g), dtype=bool)

    def apply(self, ctx: Context, e: Edits) -> None:
        mask = self.matches(ctx)
        if not mask.any():
            e.notes.append(note("no_matching_activity", change=self.label(),
                                pattern=self.pattern))
            return
        before = int(e.dur[mask].sum())
        e.dur[mask] = np.rint(e.dur[mask] / self.factor).astype(np.int64)
        e.notes.append(note("kernels_sped_up", change=self.label(), activities=int(mask.sum()),
                            before_ns=before, after_ns=int(e.dur[mask].sum())))


class Precision(Change, frozen=True):
    """The fp32 GEMM and convolution kernels autocast would run in ``dtype`` (bf16 or
    fp16) run faster by the device's matrix peak in that dtype over its fp32 (or TF32,
    for kernels that use it) peak, bounded by the time their op's bytes take at 16 bits
    at the memory bandwidth where the trace recorded shapes."""

    dtype: str = "bf16"

    def label(self) -> str:
        return f"precision {self.dtype}"

    def apply(self, ctx: Context, e: Edits) -> None:
        t, gpu, g = ctx.table, ctx.gpu, ctx.graph
        name, peak, _ = device_of_table(t)
        if peak is None:
            e.notes.append(note("precision_device_without_peaks", change=self.label(),
                                device=name))
            return
        reach, low = in_reach(t, ctx.tree, gpu)
        fp32 = np.zeros(len(gpu), dtype=bool)
        fp32[reach[~low]] = True
        fp32 &= eligible_mask(t, gpu)
        sel = np.flatnonzero(fp32[g.act])  # graph indices
        if not len(sel):
            e.notes.append(note("no_fp32_matrix_kernel_in_reach", change=self.label()))
            return
        low_peak = compute_peak(peak, self.dtype, True, False) or 0.0
        names = t.names
        tf32 = {}
        ratio = np.ones(len(sel))
        for j, i in enumerate(sel.tolist()):
            nid = int(t.name[g.row[i]])
            if nid not in tf32:
                base = compute_peak(peak, "fp32", True, tf32_kernel(names[nid])) or 0.0
                tf32[nid] = low_peak / base if base > 0 and low_peak > 0 else 1.0
            ratio[j] = max(tf32[nid], 1.0)
        if not (ratio > 1.0).any():
            e.notes.append(note("no_faster_matrix_rate", change=self.label(), device=peak.name,
                                dtype=self.dtype))
            return
        dur = e.dur[sel].astype(np.float64)
        new = dur / ratio
        # the memory bound: the op's bytes at 16 bits, shared by its eligible kernels
        op_rows = gpu.op_row[g.act[sel]]
        bound = np.zeros(len(sel))
        shared = {}
        for r in op_rows[op_rows >= 0].tolist():
            shared[r] = shared.get(r, 0) + 1
        costs: dict[int, float] = {}
        for j, r in enumerate(op_rows.tolist()):
            if r < 0:
                continue
            if r not in costs:
                cost = op_cost(names[int(t.name[r])], t.op_inputs(r))
                costs[r] = (cost.bytes / 2 / peak.memory_bytes_per_s * 1e9 / shared[r]
                            if cost is not None else 0.0)
            bound[j] = costs[r]
        memory_bound = bound > new
        new = np.minimum(np.maximum(new, bound), dur)
        e.dur[sel] = np.rint(new).astype(np.int64)
        e.notes.append(note(
            "precision_modeled", change=self.label(), kernels=len(sel),
            before_ns=float(dur.sum()), after_ns=float(new.sum()), device=peak.name,
            dtype=self.dtype, median_ratio=float(median(ratio)),
            shapes=any(v > 0 for v in costs.values()), memory_bound=int(memory_bound.sum()),
            bytes_per_s=peak.memory_bytes_per_s))


class CudaGraphs(Change, frozen=True):
    """The host's op overhead in each region (a ``record_function`` or module name; by
    default each step, else the whole trace) collapses to one graph launch: the CPU ops
    that launch GPU work and the launch calls in it take no time (on every thread that
    launches, in the region's span), one launch call's median cost is paid where the
    first of them started, and the GPU work they launched is issued from there. Ops that
    launch nothing, blocking calls and DataLoader waits stay (a graph holds none of
    them)."""

    region: str | None = None

    def label(self) -> str:
        return "cuda-graphs" + (f" {self.region}" if self.region else "")

    def apply(self, ctx: Context, e: Edits) -> None:
        t, g = ctx.table, ctx.graph
        if not (g.thread >= 0).any():
            e.notes.append(note("no_gpu_launch", change=self.label()))
            return
        instances = self._instances(ctx)
        if not instances:
            e.notes.append(note("no_graph_region", change=self.label(), region=self.region))
            return
        launch_ids = [i for i, n in enumerate(t.names) if n in LAUNCH_CALLS]
        loader_ids = [i for i, n in enumerate(t.names) if DATALOADER.match(n)]
        cats = t.cat[g.cpu_row]
        names = t.name[g.cpu_row]
        starts = t.ts_ns[g.cpu_row]
        ends = starts + t.dur_ns[g.cpu_row]
        launches = (cats == Cat.RUNTIME) & np.isin(names, launch_ids)
        collapsible = (cats == Cat.CPU_OP) | launches
        loader = np.isin(names, loader_ids)
        syncs = g.sync_start[g.sync_waits]
        sync_thread = g.sync_thread[g.sync_waits]
        removed = kept_syncs = graphs = 0
        cost_by_thread: dict[int, int] = {}
        launching = sorted(set(g.thread[g.thread >= 0].tolist()))
        # each thread's events in order (their starts ascend): those in a region's span
        # are a slice of them, found by its bounds
        by_thread = np.argsort(g.cpu_thread, kind="stable")
        bounds = np.searchsorted(g.cpu_thread[by_thread], np.arange(len(g.threads) + 1))
        events_of = {who: by_thread[bounds[who]:bounds[who + 1]]
                     for who in {th for th, _, _ in instances} | set(launching)}
        starts_of = {who: starts[mine] for who, mine in events_of.items()}
        for th, a, b in instances:
            # the region's own thread pays the graph launch; the other threads that launch
            # GPU work (the autograd engine's) lose their op time in the region's span too
            for who in [th] + [x for x in launching if x != th]:
                lo = np.searchsorted(starts_of[who], a, side="left")
                hi = np.searchsorted(starts_of[who], b, side="right")
                on = events_of[who][lo:hi]
                on = on[ends[on] <= b]  # starting in the span and ending in it
                if not len(on):
                    continue
                s, en = starts[on], ends[on]
                pts = syncs[(sync_thread == who) & (syncs >= a) & (syncs <= b)]
                kept_syncs += len(pts)
                ok = collapsible[on].copy()
                for p in pts.tolist():  # ops around a blocking call stay
                    ok &= ~((s <= p) & (en > p))
                for lo, hi in zip(s[loader[on]].tolist(), en[loader[on]].tolist(),
                                  strict=True):  # and data loading
                    ok &= ~((s < hi) & (en > lo))
                # only ops that launch GPU work (the launch calls themselves included): an op
                # computing on the CPU would not be in the graph
                calls = np.sort(s[launches[on]])
                ok &= np.searchsorted(calls, en, side="left") > np.searchsorted(calls, s,
                                                                                side="left")
                if not ok.any():
                    continue
                span_start, span_end = intervals.union(s[ok], en[ok])
                e.remove(who, span_start, span_end)
                removed += int((span_end - span_start).sum())
                if who == th:  # launched where its first op would have started
                    if th not in cost_by_thread:
                        calls = np.flatnonzero((g.cpu_thread == th) & (cats == Cat.RUNTIME)
                                               & np.isin(names, launch_ids))
                        cost_by_thread[th] = int(median(t.dur_ns[g.cpu_row[calls]])) \
                            if len(calls) else 0
                    e.insertions.append((th, int(s[ok].min()), cost_by_thread[th]))
                    graphs += 1
        cost = max(cost_by_thread.values(), default=0)
        e.notes.append(note("graphs_collapsed", change=self.label(), regions=graphs,
                            removed_ns=removed, launch_ns=cost, kept_syncs=kept_syncs))

    def _instances(self, ctx: Context) -> list[tuple[int, int, int]]:
        """(thread, start, end) of the outermost instances of the region."""
        t, g = ctx.table, ctx.graph
        if self.region is None:
            if len(g.step_row):
                pos = np.searchsorted(g.cpu_row, g.step_row)
                return [(int(g.cpu_thread[p]), int(t.ts_ns[g.cpu_row[p]]),
                         int(t.ts_ns[g.cpu_row[p]] + t.dur_ns[g.cpu_row[p]]))
                        for p in pos.tolist()]
            out = []
            for th in distinct(g.thread[g.thread >= 0]).tolist():
                rows = g.cpu_row[g.cpu_thread == th]
                out.append((th, int(t.ts_ns[rows].min()),
                            int((t.ts_ns[rows] + t.dur_ns[rows]).max())))
            return out
        ids = [i for i, n in enumerate(t.names) if n == self.region]
        if not ids:
            regex = re.compile(self.region)
            ids = [i for i, n in enumerate(t.names) if regex.search(n)]
        hit = np.flatnonzero(np.isin(t.name[g.cpu_row], ids)
                             & (t.cat[g.cpu_row] != Cat.RUNTIME))
        spans = sorted((int(g.cpu_thread[p]), int(t.ts_ns[g.cpu_row[p]]),
                        int(t.ts_ns[g.cpu_row[p]] + t.dur_ns[g.cpu_row[p]])) for p in hit.tolist())
        out: list[tuple[int, int, int]] = []
        for th, a, b in spans:
            if out and out[-1][0] == th and a < out[-1][2]:
                continue  # inside the previous instance
            out.append((th, a, b))
        return out


# the kernels torch.compile fuses with their neighbours: pointwise ops and normalizations
FUSABLE_CLASSES = (classify.ELEMENTWISE, classify.NORMALIZATION)


class Fusion(Change, frozen=True):
    """Each run of two or more elementwise or normalization kernels back to back on one
    stream fuses into one kernel, as torch.compile fuses them: the run takes its longest
    kernel's time (the data moves once, at the pace of the largest pass) and the gaps
    between its kernels go; the host launches one kernel for the run, so the launch calls
    of the others take no time. The ops around those calls keep theirs (compiled code
    would shed some of that too: where the host sets the pace, a lower bound)."""

    def label(self) -> str:
        return "fusion"

    def apply(self, ctx: Context, e: Edits) -> None:
        g, t = ctx.graph, ctx.table
        fusable = np.isin(g.klass, [classify.CLASS_INDEX[k] for k in FUSABLE_CLASSES])
        if not fusable.any():
            e.notes.append(note("no_fusable_kernel", change=self.label()))
            return
        order = np.lexsort((g.key, e.stream))  # each stream's activities in order
        # runs: the longest stretches of fusable kernels back to back on one stream
        fuse, stream = fusable[order], e.stream[order]
        begins = fuse.copy()
        begins[1:] &= ~(fuse[:-1] & (stream[1:] == stream[:-1]))
        at = np.flatnonzero(fuse)  # positions in ``order``
        run_of = np.cumsum(begins)[at] - 1
        in_long = np.bincount(run_of, minlength=1)[run_of] >= 2  # runs of two or more
        members, run_of = order[at[in_long]], run_of[in_long]
        first = np.ones(len(members), dtype=bool)  # each run's first kernel
        first[1:] = run_of[1:] != run_of[:-1]
        firsts, rest = members[first], members[~first]
        longest = np.maximum.reduceat(e.dur[members], np.flatnonzero(first)) \
            if len(members) else e.dur[:0]
        before = int(e.dur[members].sum())
        e.dur[members] = 0
        e.dur[firsts] = longest
        e.gap[rest] = 0
        # one launch for the run: the launch calls of the others go
        rows = g.launch_row[rest]
        call = (rows >= 0) & (g.thread[rest] >= 0)
        call[call] = t.cat[rows[call]] == Cat.RUNTIME
        starts = t.ts_ns[rows[call]]
        durs = t.dur_ns[rows[call]]
        e.remove(g.thread[rest[call]], starts, starts + durs)
        launches = int(durs.sum())
        after = int(longest.sum())
        runs, kernels = len(firsts), len(members)
        if not runs:
            e.notes.append(note("no_fusable_run", change=self.label()))
            return
        e.notes.append(note("kernels_fused", change=self.label(), runs=runs, kernels=kernels,
                            before_ns=before, after_ns=after, launch_ns=launches))


class NoDataloaderWait(Change, frozen=True):
    """The host's time in DataLoader ``__next__`` is removed."""

    def label(self) -> str:
        return "no-dataloader-wait"

    def apply(self, ctx: Context, e: Edits) -> None:
        t, g = ctx.table, ctx.graph
        ids = [i for i, n in enumerate(t.names) if DATALOADER.match(n)]
        hit = np.flatnonzero(np.isin(t.name[g.cpu_row], ids))
        if not len(hit):
            e.notes.append(note("no_dataloader_next", change=self.label()))
            return
        rows = g.cpu_row[hit]
        removed = 0
        for th in distinct(g.cpu_thread[hit]).tolist():
            mine = rows[g.cpu_thread[hit] == th]
            start, end = intervals.union(t.ts_ns[mine], t.ts_ns[mine] + t.dur_ns[mine])
            e.remove(th, start, end)
            removed += int((end - start).sum())
        e.notes.append(note("dataloader_wait_removed", change=self.label(), calls=len(hit),
                            removed_ns=removed))


class NoSync(Change, frozen=True):
    """The blocking synchronizations inside the steps (the whole trace without steps) no
    longer wait: each costs what it costs when the GPU work is already done."""

    def label(self) -> str:
        return "no-sync"

    def apply(self, ctx: Context, e: Edits) -> None:
        t, g = ctx.table, ctx.graph
        sel = e.sync_blocks.copy()
        if len(g.step_row):
            inside = np.zeros(len(sel), dtype=bool)
            for r in g.step_row.tolist():
                a, b = int(t.ts_ns[r]), int(t.ts_ns[r] + t.dur_ns[r])
                inside |= (g.sync_start >= a) & (g.sync_start < b)
            sel &= inside
        if not sel.any():
            e.notes.append(note("no_blocking_wait_in_steps", change=self.label()))
            return
        e.sync_blocks[sel] = False
        waited = int((g.sync_end - g.sync_start - g.sync_own)[sel].sum())
        e.notes.append(note("syncs_no_longer_wait", change=self.label(), calls=int(sel.sum()),
                            waited_ns=waited))


class OverlapComm(Change, frozen=True):
    """Communication kernels run beside compute: those on a stream that also runs compute
    move to a stream of their own (one per stream they leave), and nothing waits for any
    communication kernel through the streams or a recorded event (blocking calls still
    do). They still wait for what they waited for, other ranks included."""

    def label(self) -> str:
        return "overlap-comm"

    def apply(self, ctx: Context, e: Edits) -> None:
        g = ctx.graph
        comm = g.klass == classify.CLASS_INDEX[classify.COMMUNICATION]
        if not comm.any():
            e.notes.append(note("no_communication_kernel", change=self.label()))
            return
        shared = sorted(set(e.stream[comm].tolist()) & set(e.stream[~comm].tolist()))
        new_stream = {s: e.n_streams + k for k, s in enumerate(shared)}
        e.n_streams += len(shared)
        move = comm & np.isin(e.stream, shared)
        e.stream[move] = [new_stream[s] for s in e.stream[move].tolist()]
        waits_on_comm = (e.wait >= 0) & comm[np.maximum(e.wait, 0)] & ~comm
        e.wait[waits_on_comm] = -1
        e.sync_streams = [s + tuple(new_stream[x] for x in s if x in new_stream)
                          for s in e.sync_streams]
        e.notes.append(note("communication_moved", change=self.label(), moved=int(move.sum()),
                            kernels=int(comm.sum()), moved_ns=int(e.dur[move].sum()),
                            streams=len(shared), waits_dropped=int(waits_on_comm.sum())))


CHANGES = (Kernels, Precision, CudaGraphs, NoDataloaderWait, NoSync, OverlapComm)


class NoStraggler(Change, frozen=True):
    """Every rank reaches each collective when the earliest does: this rank's collectives no
    longer wait for the others (``waits``: per collective call, its start on this rank's
    clock and its wait from the job view, :func:`straggler_waits`). The wait comes out of
    the call: a communication kernel runs that much shorter, a CPU-side collective (gloo)
    loses it from its span. The straggler's own step stays (its lateness is its own work)."""

    waits: tuple[tuple[int, int], ...] = ()

    def label(self) -> str:
        return "no-straggler"

    def apply(self, ctx: Context, e: Edits) -> None:
        t, g = ctx.table, ctx.graph
        if not self.waits:
            e.notes.append(note("straggler_needs_ranks", change=self.label()))
            return
        comm = np.flatnonzero(g.klass == classify.CLASS_INDEX[classify.COMMUNICATION])
        by_start = comm[np.argsort(g.start[comm], kind="stable")]
        starts = g.start[by_start]
        cpu_starts = t.ts_ns[g.cpu_row]
        kernels = spans = 0
        total = 0
        for start, wait in self.waits:
            if wait <= 0:
                continue
            i = int(np.searchsorted(starts, start))
            if i < len(starts) and starts[i] == start:
                a = by_start[i]
                cut = min(wait, int(e.dur[a]))
                e.dur[a] -= cut
                kernels += 1
                total += cut
                continue
            hit = np.flatnonzero(cpu_starts == start)
            if len(hit):
                p = hit[np.argmax(t.dur_ns[g.cpu_row[hit]])]
                cut = min(wait, int(t.dur_ns[g.cpu_row[p]]))
                e.remove(int(g.cpu_thread[p]), [start], [start + cut])
                spans += 1
                total += cut
        e.notes.append(note("straggler_waits_removed", change=self.label(), kernels=kernels,
                            spans=spans, removed_ns=total))


class MeasuredOps(Change, frozen=True):
    """Each op whose alternative was timed on this machine from the trace's shapes
    (:mod:`profiler_kit.measure.op_replay`) takes its measured effect: each call's span
    on the host grows (or shrinks) by the host time the alternative adds per call, and
    the kernels launched beneath it scale by the measured factor. ``effects`` maps an op
    group's key (:mod:`.hot_ops`: name and recorded inputs) to (host ns per call, kernel
    factor); ``name`` is the change the measurement stands for (``precision bf16``,
    ``channels-last``) and ``device`` where it was timed. Ops not measured keep their
    recorded times, and the note says how much of the op time that leaves."""

    name: str
    device: str
    effects: dict[str, tuple[float, float]]
    not_measured: dict[str, str] = msgspec.field(default_factory=dict)  # key -> reason
    # the keys are chains of elementwise ops (``compile``: hot_ops.chain_instances), each
    # call's effect shared by its members in proportion to their time
    chains: bool = False

    def label(self) -> str:
        return f"{self.name} (measured)"

    def apply(self, ctx: Context, e: Edits) -> None:
        from profiler_kit.analysis.whatif.hot_ops import top_level_ops

        t, g, tree = ctx.table, ctx.graph, ctx.tree
        top = top_level_ops(t, tree)
        effect_of_row, op_ns, measured_ns = self._effects_by_row(t, tree, top)
        if not effect_of_row:
            e.notes.append(note("no_op_measured", change=self.label()))
            return
        added = 0
        for r, (host_ns, _) in effect_of_row.items():
            th, a, d = int(g.thread_of_row[r]), int(t.ts_ns[r]), int(t.dur_ns[r])
            delta = int(round(max(host_ns, -d)))
            if th < 0 or not delta:
                continue
            added += delta
            if delta < 0:
                e.remove(th, [a + d + delta], [a + d])
            else:
                e.insertions.append((th, a + d, delta))
        node = ctx.gpu.node[g.act]
        owner = np.where(node >= 0, top[np.maximum(node, 0)], -1)
        owner_row = np.where(owner >= 0, tree.row[np.maximum(owner, 0)], -1)
        scale = np.array([effect_of_row.get(int(r), (0.0, 1.0))[1]
                          for r in owner_row.tolist()])
        owned = owner_row >= 0
        if owned.any():  # a GPU trace: the share of its ops' GPU time, as hot ops are chosen
            in_measured = np.isin(owner_row, list(effect_of_row))
            op_ns, measured_ns = int(g.dur[owned].sum()), int(g.dur[in_measured].sum())
        changed = scale != 1.0
        before = after = None  # the kernels' time, where a measured factor scales them
        if changed.any():
            before = int(e.dur[changed].sum())
            e.dur[changed] = np.rint(e.dur[changed] * scale[changed]).astype(np.int64)
            after = int(e.dur[changed].sum())
        e.notes.append(note(
            "ops_measured", change=self.label(), calls=len(effect_of_row), chains=self.chains,
            device=self.device, host_ns=added, kernels_before_ns=before, kernels_after_ns=after,
            measured_ns=measured_ns, op_ns=op_ns, not_measured=len(self.not_measured),
            not_measured_why=next(iter(self.not_measured.values()), None)))

    def _effects_by_row(self, t: EventTable, tree: OpTree, top: np.ndarray
                        ) -> tuple[dict[int, tuple[float, float]], int, int]:
        """Each measured call's (host ns, kernel factor) by table row, the top-level ops'
        time and the part of it measured."""
        from profiler_kit.analysis.whatif.hot_ops import chain_instances, group_rows

        effect_of_row: dict[int, tuple[float, float]] = {}
        calls = group_rows(t, tree, top)
        op_ns = sum(int(t.dur_ns[rows].sum()) for rows in calls.values())
        measured_ns = 0
        if not self.chains:
            for key, rows in calls.items():
                if key in self.effects:
                    measured_ns += int(t.dur_ns[rows].sum())
                    effect_of_row.update((int(r), self.effects[key]) for r in rows)
            return effect_of_row, op_ns, measured_ns
        for key, instances in chain_instances(t, tree, top).items():
            if key not in self.effects:
                continue
            host_ns, factor = self.effects[key]
            for rows in instances:
                durations = t.dur_ns[rows].astype(np.float64)
                total = float(durations.sum()) or 1.0
                measured_ns += int(durations.sum())
                effect_of_row.update((int(r), (host_ns * float(d) / total, factor))
                                     for r, d in zip(rows.tolist(), durations.tolist(),
                                                     strict=True))
        return effect_of_row, op_ns, measured_ns
