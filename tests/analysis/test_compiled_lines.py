"""Compiled kernels under the user's lines: a small model compiled on the CPU, its
Inductor provenance saved beside the trace as profkit saves it, and the code view's
C++ kernels (``graph_0_cpp_fused_...`` ops) credited to the lines of the nodes they fused,
forward and backward; the lookup rules on their own without compiling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler_kit.analysis.code.provenance import (
    CompiledGraph,
    Frame,
    KernelSource,
    Provenance,
    find_kernel,
    kernel_name,
    user_site,
)
from profiler_kit.measure.inductor_provenance import parse_stack
from profiler_kit.sources.inductor_provenance import provenance_file, read_provenance


def test_kernel_names_and_stacks():
    assert kernel_name("graph_0_cpp_fused_add_mul_0") == "cpp_fused_add_mul_0"
    assert kernel_name("triton_poi_fused_add_0") == "triton_poi_fused_add_0"
    stack = parse_stack('  File "/x/site-packages/torch/nn/modules/module.py", line 9, in f\n'
                        '    code\n  File "/home/u/train.py", line 12, in forward\n'
                        '    y = a + b\n        ^^^^^\n')
    assert stack == [["/x/site-packages/torch/nn/modules/module.py", 9, "f"],
                     ["/home/u/train.py", 12, "forward"]]
    assert user_site(tuple(Frame(*f) for f in stack)) == "/home/u/train.py:12 (forward)"


def test_a_kernel_is_looked_up_in_the_graph_it_ran_in(tmp_path):
    def src(line: int) -> KernelSource:
        return KernelSource((), ((Frame("m.py", line, "forward"),),))

    prov = Provenance(1, "x", (CompiledGraph("fwd", False, {"cpp_fused_sum_1": src(3)}),
                               CompiledGraph("bwd", True, {"cpp_fused_sum_1": src(7)})))
    assert find_kernel(prov, "graph_0_cpp_fused_sum_1", "bwd", True).stacks[0][0].line == 7
    assert find_kernel(prov, "graph_0_cpp_fused_sum_1", "fwd", False).stacks[0][0].line == 3
    assert find_kernel(prov, "graph_0_cpp_fused_sum_1", None, True).stacks[0][0].line == 7
    assert find_kernel(prov, "cpp_fused_relu_0", "fwd", False) is None
    (tmp_path / "w.inductor_provenance.json").write_text(json.dumps(
        {"version": 1, "torch": "x", "graphs": [{"key": "k", "backward": False, "kernels": {
            "cpp_fused_sum_1": {"nodes": ["sum_1"], "stacks": [[["m.py", 3, "forward"]]]}}}]}))
    assert provenance_file(tmp_path / "w.123.pt.trace.json").name == \
        "w.inductor_provenance.json"
    assert provenance_file(tmp_path / "other.pt.trace.json") is None
    assert read_provenance(tmp_path / "w.1.pt.trace.json").graphs[0].kernels[
        "cpp_fused_sum_1"].nodes == ("sum_1",)


# compiled in a process of its own: compiled graphs stay alive in a process, and another
# test's graphs (kernels of the same names) would be saved beside this trace too
COMPILE = """
import sys
import torch
import torch._inductor.config as config
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

from profiler_kit.measure import inductor_provenance

config.compile_threads = 1  # no compile workers to start for two small kernels
assert inductor_provenance.enable()
assert not config.fx_graph_cache  # a cached graph would name an older file's lines


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)

    def forward(self, x):
        y = torch.relu(self.a(x)) * 2 + 1  # LINE_A
        return (y * y).sum(-1)  # LINE_B


net = torch.compile(Net())
x = torch.randn(8, 16)
net(x).sum().backward()
with profile(activities=[ProfilerActivity.CPU]) as prof:
    for i in range(2):
        with record_function(f"ProfilerStep#{i}"):
            net(x).sum().backward()
prof.export_chrome_trace(sys.argv[1] + "/w.1.pt.trace.json")
print(inductor_provenance.write_beside(sys.argv[1], "w"))
"""


@pytest.mark.slow
def test_compiled_cpu_kernels_go_under_the_users_lines(tmp_path):
    pytest.importorskip("torch")
    import subprocess
    import sys

    from profiler_kit.analysis.trace_analysis import analyze_table
    from profiler_kit.trace.loader import load

    script = tmp_path / "train.py"
    script.write_text(COMPILE)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    trace = tmp_path / "w.1.pt.trace.json"
    written = done.stdout.strip().splitlines()[-1]
    assert provenance_file(trace) == Path(written)
    prov = read_provenance(trace)
    assert prov is not None and {g.backward for g in prov.graphs} == {False, True}

    view = analyze_table(load(trace), provenance=prov).code
    assert view is not None
    compiled = {k.name: k for k in view.compiled}
    cpp = [k for n, k in compiled.items() if n.startswith("graph_")]
    assert cpp and all(k.kind == "C++" and k.op_ns > 0 and k.lines for k in cpp), cpp
    lines = script.read_text().splitlines()
    a, b = (next(i for i, s in enumerate(lines, 1) if s.rstrip().endswith(m))
            for m in ("# LINE_A", "# LINE_B"))
    sites = {s.site.split(" ")[0].rsplit(":", 1)[1]: s for s in view.lines
             if "train.py:" in s.site}
    assert {str(a), str(b)} <= set(sites), [s.site for s in view.lines]
    # the forward kernels under their lines, the backward's at the forward's lines
    kernels = {o.name for s in sites.values() for o in s.ops}
    assert any(n.startswith("graph_") for n in kernels)
    assert sum(s.op_ns for s in sites.values()) > 0
    assert sum(s.backward_op_ns for s in sites.values()) > 0
