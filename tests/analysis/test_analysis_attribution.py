"""Op nesting, self time, kernel attribution and classes on hand-built tables."""

from __future__ import annotations

import numpy as np
from analysis_tables import kernel, launch, make_table, op
from hypothesis import given, settings
from hypothesis import strategies as st

from profiler_kit.analysis.core import classify
from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.op_tree import build_op_tree, innermost_at
from profiler_kit.analysis.time.hotspots import cpu_breakdown, gpu_breakdown
from profiler_kit.trace.table import Cat


def _cls(name: str) -> int:
    return classify.CLASS_INDEX[name]


def test_self_time_subtracts_direct_children_only():
    t = make_table([
        op("aten::conv2d", 0, 100),
        op("aten::convolution", 10, 80),
        op("aten::_convolution", 20, 50),
        op("aten::add_", 30, 10),
        op("aten::relu", 200, 20),
        op("aten::mm", 0, 40, tid=2),
    ])
    tree = build_op_tree(t)
    names = [t.names[t.name[r]] for r in tree.row]
    by_name = dict(zip(names, tree.self_ns.tolist(), strict=True))
    assert by_name == {"aten::conv2d": 20, "aten::convolution": 30, "aten::_convolution": 40,
                       "aten::add_": 10, "aten::relu": 20, "aten::mm": 40}
    parent = {names[i]: (names[p] if p >= 0 else None) for i, p in enumerate(tree.parent)}
    assert parent["aten::add_"] == "aten::_convolution"
    assert parent["aten::relu"] is None and parent["aten::mm"] is None
    cpu = cpu_breakdown(t, tree)
    assert cpu.ns("convolution") == 90 and cpu.ns("elementwise") == 30 and cpu.ns("gemm") == 40
    assert cpu.total_ns == sum(by_name.values())


def test_innermost_range_around_a_point():
    t = make_table([op("outer", 0, 100), op("inner", 10, 20), op("later", 50, 10)])
    tree = build_op_tree(t)
    keys = np.zeros(5, dtype=np.int64)
    found = innermost_at(tree, keys, np.array([5, 15, 35, 55, 150]))
    names = [t.names[t.name[tree.row[f]]] if f >= 0 else None for f in found.tolist()]
    assert names == ["outer", "inner", "outer", "later", None]


def test_kernel_attributed_through_correlation_to_innermost_op():
    t = make_table([
        op("aten::linear", 0, 100),
        op("aten::addmm", 10, 50),
        launch(20, corr=1),
        launch(70, corr=2),  # inside aten::linear only
        kernel("some_unnamed_kernel", 30, 40, corr=1),
        kernel("another_kernel", 80, 10, corr=2),
    ])
    tree = build_op_tree(t)
    gpu = attribute_gpu(t, tree)
    assert gpu.linked_by.tolist() == [1, 1]
    op_names = [t.names[t.name[tree.row[n]]] for n in gpu.op_node.tolist()]
    assert op_names == ["aten::addmm", "aten::linear"]
    assert gpu.klass.tolist() == [_cls("gemm"), _cls("gemm")]


def test_other_op_inherits_class_from_ancestor_then_name_rules():
    t = make_table([
        op("aten::conv2d", 0, 100),
        op("aten::empty", 10, 50),  # "other": the convolution around it decides
        launch(20, corr=1),
        op("aten::empty", 200, 50),  # no classed ancestor: the kernel name decides
        launch(210, corr=2),
        kernel("mystery_kernel", 30, 5, corr=1),
        kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 220, 5, corr=2),
        kernel("triton_poi_fused_add_0", 300, 5),  # no runtime event at all
    ])
    gpu = attribute_gpu(t, build_op_tree(t))
    assert gpu.klass.tolist() == [_cls("convolution"), _cls("communication"),
                                  _cls("elementwise")]
    assert gpu.linked_by.tolist() == [1, 1, 0]


def test_copies_are_copies_whatever_op_encloses_them():
    t = make_table([
        op("aten::conv2d", 0, 100),
        op("aten::copy_", 10, 20),  # a cast inside the convolution: a copy
        launch(20, corr=1),
        launch(50, corr=2),  # the convolution's own layout transpose: a copy by its name
        launch(60, corr=3),
        kernel("void at::native::elementwise_kernel<128, 2, at::native::direct_copy_kernel_cuda("
               "at::TensorIteratorBase&)::{lambda(float)#1}>(int)", 30, 5, corr=1),
        kernel("batched_transpose_32x32_half", 55, 5, corr=2),
        kernel("igemm_fwd_gtcx3_nhwc_bf16", 65, 5, corr=3),
    ])
    gpu = attribute_gpu(t, build_op_tree(t))
    assert gpu.klass.tolist() == [_cls("copy"), _cls("copy"), _cls("convolution")]


def test_external_id_links_when_runtime_event_is_missing():
    t = make_table([
        op("aten::batch_norm", 0, 100, ext=42),
        kernel("mystery_kernel", 30, 10, ext=42),
    ])
    tree = build_op_tree(t)
    gpu = attribute_gpu(t, tree)
    assert gpu.linked_by.tolist() == [2]
    assert gpu.klass.tolist() == [_cls("batchnorm")]


def test_memcpy_and_memset_classed_by_category():
    t = make_table([
        op("aten::conv2d", 0, 100),
        launch(10, corr=1, name="cudaMemcpyAsync"),
        launch(20, corr=2, name="cudaMemsetAsync"),
        kernel("Memcpy HtoD (Pageable -> Device)", 30, 7, corr=1, cat=Cat.MEMCPY),
        kernel("Memset (Device)", 40, 3, corr=2, cat=Cat.MEMSET),
    ])
    gpu = attribute_gpu(t, build_op_tree(t))
    bd = gpu_breakdown(t, gpu)
    assert bd.ns("memcpy") == 7 and bd.ns("memset") == 3 and bd.total_ns == 10


def test_no_ops_no_kernels_is_fine():
    t = make_table([])
    tree = build_op_tree(t)
    gpu = attribute_gpu(t, tree)
    assert len(tree) == 0 and len(gpu) == 0
    assert gpu_breakdown(t, gpu).classes == ()


def _stack_sweep(spans):
    """Reference: parents by an explicit stack, in (thread, start, longest first) order."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1], -spans[i][2]))
    parent = {}
    stack: list[int] = []
    thread = None
    for i in order:
        th, s, d = spans[i]
        if th != thread:
            stack, thread = [], th
        while stack and spans[stack[-1]][1] + spans[stack[-1]][2] <= s:
            stack.pop()
        parent[i] = stack[-1] if stack else None
        stack.append(i)
    return parent


@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 60), st.integers(0, 40)),
                max_size=40))
@settings(max_examples=200, deadline=None)
def test_vectorized_parents_match_a_stack_sweep(spans):
    # Distinct (thread, start, dur) so the order of equal spans cannot differ.
    spans = list(dict.fromkeys(spans))
    t = make_table([op(f"op{i}", s, d, tid=th) for i, (th, s, d) in enumerate(spans)])
    tree = build_op_tree(t)
    index_of = {t.names[t.name[r]]: k for k, r in enumerate(tree.row)}
    expected = _stack_sweep(spans)
    for i in range(len(spans)):
        node = index_of[f"op{i}"]
        p = int(tree.parent[node])
        got = None if p < 0 else int(t.names[t.name[tree.row[p]]][2:])
        assert got == expected[i], (i, spans)
