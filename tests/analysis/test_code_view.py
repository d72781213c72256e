"""Time by nn.Module and source line (the code view) on real traces: host times against the
TensorBoard plugin's Module View, device times against an independent sum of the kernels
launched inside each module, backward links against autograd's own sequence numbers."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict

import numpy as np
import pytest
from real_traces import DATA, analysis, ns

from profiler_kit.analysis.code.kernel_names import fused_kernel
from profiler_kit.analysis.code.view import NO_MODULES_NOTE, CodeView, ModuleNode
from profiler_kit.render.json.analysis import trace_document
from profiler_kit.render.wording.notes import say
from profiler_kit.trace.loader import load, load_simple

INFERENCE = ["h100_bert_small.json.gz", "h100_vit_image_classification.json.gz"]


def _flat(nodes: tuple[ModuleNode, ...], out: dict[str, ModuleNode] | None = None
          ) -> dict[str, ModuleNode]:
    out = {} if out is None else out
    for n in nodes:
        out[n.name] = n
        _flat(n.children, out)
    return out


def _view(name: str) -> CodeView:
    code = analysis(name).code
    assert code is not None
    return code


@pytest.mark.parametrize("name", INFERENCE)
def test_module_host_times_and_calls_are_the_plugins(name):
    from tb_reference import run_profile

    module_op = pytest.importorskip("torch_tb_profiler.profiler.module_op")
    profile = run_profile(DATA / name)
    stats = module_op.aggegate_module_view(profile.tid2tree, profile.events)
    ours = _flat(_view(name).modules)
    theirs: dict[str, tuple[int, float]] = {}

    def walk(items, depth):
        for s in items:
            theirs[s.name] = (s.occurences, s.host_duration, depth)
            walk(s.children, depth + 1)

    walk(stats, 0)
    assert set(ours) == set(theirs)
    for n, (calls, host_us, _depth) in theirs.items():
        assert ours[n].calls == calls, n
        assert abs(ours[n].host_ns - host_us * 1000) <= calls, n
    assert [r.name for r in _view(name).modules] == [s.name for s in stats]


@pytest.mark.parametrize("name", INFERENCE)
def test_module_device_times_are_the_kernels_launched_inside(name):
    doc = json.loads(gzip.decompress((DATA / name).read_bytes()))["traceEvents"]
    launches = {e["args"]["correlation"]: e for e in doc
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get(
                    "args", {})}
    kernels = [e for e in doc if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    expected: dict[str, int] = defaultdict(int)
    for m in doc:
        if m.get("cat") != "python_function" or not m["name"].startswith("nn.Module: "):
            continue
        start, end = ns(m["ts"]), ns(m["ts"]) + ns(m["dur"])
        for k in kernels:
            rt = launches.get(k["args"].get("correlation"))
            if rt is not None and rt["tid"] == m["tid"] and start <= ns(rt["ts"]) < end:
                expected[m["name"].removeprefix("nn.Module: ")] += ns(k["dur"])
    ours = _flat(_view(name).modules)
    assert sum(expected.values()) > 0
    for n, node in ours.items():
        assert node.device_ns == expected.get(n, 0), n
        assert node.backward_device_ns == 0


def test_inference_traces_lines_without_calling_lines_use_frames():
    view = _view("h100_bert_small.json.gz")
    assert view.lines and ":" in view.lines[0].site
    assert view.coverage is not None and view.coverage.share == pytest.approx(1.0)


def test_trace_without_module_events_says_how_to_record_them():
    view = _view("a100_simple_add.json.gz")
    assert view.modules == () and view.lines == ()
    assert view.notes == (NO_MODULES_NOTE,) and NO_MODULES_NOTE.code == "no_module_events"
    words = say(NO_MODULES_NOTE)
    assert "with_stack=True" in words and "with_modules=True" in words
    assert "modules" not in trace_document(analysis("a100_simple_add.json.gz"))


def test_json_holds_the_module_tree():
    doc = trace_document(analysis("h100_bert_small.json.gz"))
    root = doc["modules"][0]
    assert {"name", "calls", "host_ns", "device_ns", "children"} <= root.keys()
    assert root["name"] == "BertLMHeadModel_0"


def test_fused_kernel_names():
    assert fused_kernel("triton_poi_fused_add_mul_0") == ("Triton pointwise", ("add", "mul"))
    assert fused_kernel("triton_per_fused__to_copy_add_native_layer_norm_3") == (
        "Triton persistent reduction", ("_to_copy", "add", "native_layer_norm"))
    assert fused_kernel("cpp_fused_relu_threshold_backward_2") == (
        "C++", ("relu", "threshold_backward"))
    assert fused_kernel("ampere_sgemm_128x64_tn") is None


def test_compiled_trace_lists_fused_kernels():
    view = _view("mi300_torch_compile_triton.json.gz")
    assert view.compiled and all(f.ops for f in view.compiled)


# a training step recorded here on the CPU, with stacks


@pytest.fixture(scope="module")
def training(tmp_path_factory):
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            # large enough (about 60 ms of ops over the two steps) that a preemption of a
            # few ms inside an op outside the model, on a loaded machine, moves the
            # coverage share by a few percent only (at 20 ms, one of 4 ms failed it)
            self.body = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10))
            self.loss = nn.CrossEntropyLoss()

        def forward(self, x, y):
            return self.loss(self.body(x), y)

    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    x, y = torch.randn(2048, 512), torch.randint(0, 10, (2048,))
    graphs: list[dict[int, str]] = []

    def step(record: bool):
        opt.zero_grad()
        loss = net(x, y)
        if record:  # autograd's own numbers of the nodes this forward created
            seen, todo, names = set(), [loss.grad_fn], {}
            while todo:
                fn = todo.pop()
                if fn is None or fn in seen:
                    continue
                seen.add(fn)
                names[fn._sequence_nr()] = type(fn).__name__
                todo.extend(f for f, _ in fn.next_functions)
            graphs.append(names)
        loss.backward()
        opt.step()

    for _ in range(3):
        step(False)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True,
                 record_shapes=True) as prof:
        for i in range(2):
            with record_function(f"ProfilerStep#{i}"):
                step(True)
    path = tmp_path_factory.mktemp("code") / "train.pt.trace.json"
    prof.export_chrome_trace(str(path))
    from profiler_kit.analysis.trace_analysis import analyze_table

    table = load(path)
    return path, table, analyze_table(table), graphs


def test_loaders_agree_on_the_code_columns(training):
    path, table, _a, _g = training
    other = load_simple(path)
    np.testing.assert_array_equal(table.seq_nr, other.seq_nr)
    np.testing.assert_array_equal(table.fwd_tid, other.fwd_tid)
    assert [table.names[i] if i >= 0 else None for i in table.call_from] == \
        [other.names[i] if i >= 0 else None for i in other.call_from]
    assert (table.call_from >= 0).any()


def test_backward_ops_link_to_autograds_nodes(training):
    from profiler_kit.analysis.code.backward import ENGINE_PREFIX, link_backward
    from profiler_kit.analysis.core.op_tree import build_op_tree

    _path, table, _a, graphs = training
    tree = build_op_tree(table)
    links = link_backward(table, tree)
    by_seq = {s: n for g in graphs for s, n in g.items()}
    roots = np.flatnonzero(links.backward_node == np.arange(len(tree)))
    checked = 0
    for r in roots.tolist():
        name = table.name_of(tree.row[r]).removeprefix(ENGINE_PREFIX).strip()
        seq = int(table.seq_nr[tree.row[r]])
        if name.endswith("AccumulateGrad"):
            continue
        assert by_seq[seq] == name  # autograd's node of that number is the op that ran
        f = links.forward_node[r]
        assert f >= 0 and int(table.seq_nr[tree.row[f]]) == seq
        assert int(table.fwd_tid[tree.row[f]]) == 0
        checked += 1
    assert checked == sum(len([n for n in g.values() if n != "AccumulateGrad"])
                          for g in graphs)


def test_training_modules_cover_the_step_forward_and_backward(training):
    _path, _table, a, _g = training
    view = a.code
    assert view is not None and view.steps == 2
    mods = _flat(view.modules)
    assert {"Net_0", "Sequential_0", "Linear_0", "Linear_1", "CrossEntropyLoss_0"} <= set(mods)
    assert mods["Linear_0"].calls == 2
    assert mods["Linear_0"].op_ns > 0 and mods["Linear_0"].backward_op_ns > 0
    c = view.coverage
    assert c is not None and c.measure == "cpu_op"
    assert c.share >= 0.95, c
    assert c.optimizer_ns > 0
    assert view.backward_linked == view.backward_ops > 0
    # the lines are the test's own: the forward call, its backward at the same line
    assert view.lines[0].site.startswith("test_code_view.py:")
    assert view.lines[0].backward_op_ns > 0
