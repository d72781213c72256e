"""Name rules for the console's hotspot summary."""

from __future__ import annotations

import pytest

from profiler_kit.hotspot_summary import classify, shares


@pytest.mark.parametrize(("name", "cls"), [
    ("aten::mkldnn_convolution", "convolution"),
    ("aten::cudnn_convolution", "convolution"),
    ("aten::native_batch_norm", "batchnorm"),
    ("aten::addmm", "gemm"),
    ("sm80_xmma_gemm_f16f16_f16f32", "gemm"),
    ("aten::relu_", "other"),
    ("aten::_convert_indices_from_coo_to_csr", "other"),
])
def test_classify(name: str, cls: str) -> None:
    assert classify(name) == cls


def test_shares_use_self_cpu_time_and_count_spans_as_other() -> None:
    rows = [
        {"name": "aten::mkldnn_convolution", "self_cpu_time_ns": 600},
        {"name": "aten::native_batch_norm", "self_cpu_time_ns": 200},
        {"name": "aten::addmm", "self_cpu_time_ns": 100},
        {"name": "forward", "self_cpu_time_ns": 100, "is_user_annotation": True},
    ]
    got, basis = shares(rows)
    assert basis == "self CPU time"
    assert got == pytest.approx({"convolution": 0.6, "batchnorm": 0.2, "gemm": 0.1,
                                 "other": 0.1})


def test_shares_use_device_time_when_there_is_any() -> None:
    rows = [
        {"name": "aten::addmm", "self_cpu_time_ns": 900, "self_device_time_ns": 300},
        {"name": "aten::relu", "self_cpu_time_ns": 100, "self_device_time_ns": 100},
        {"name": "ProfilerStep*", "self_cpu_time_ns": 5, "self_device_time_ns": 400},
    ]
    got, basis = shares(rows)
    assert basis == "self device time"
    assert got["gemm"] == pytest.approx(0.75) and got["other"] == pytest.approx(0.25)
    assert shares([]) == ({}, "self CPU time")
