"""The device peak table: printed names to parts, the figures of each part, unknown devices
withheld, and AMD parts recognised from kernel names on real MI300X / MI250 traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import msgspec
import pytest

from profiler_kit.analysis.core.launch_links import attribute_gpu
from profiler_kit.analysis.core.note import note
from profiler_kit.analysis.core.op_tree import build_op_tree
from profiler_kit.analysis.perf import device_specs
from profiler_kit.analysis.perf.device_specs import (
    AMD_TARGETS,
    NAMES,
    compute_peak,
    device_of_table,
    identify,
    match_device,
)
from profiler_kit.analysis.perf.roofline import analyze_roofline
from profiler_kit.trace.loader import load

DATA = Path(__file__).parents[1] / "data"
GIB = 2**30

# (name exactly as deviceProperties / nvidia-smi / rocm-smi print it, totalGlobalMem in GiB
# or None when only the printed name is known, numSms or None, the table's part or None)
PRINTED = [
    ("Tesla V100-SXM2-16GB", 16, 80, "V100 SXM2"),
    ("Tesla V100-SXM2-32GB", 32, 80, "V100 SXM2"),  # v100_resnet50_train
    ("Tesla V100-DGXS-32GB", 32, 80, "V100 SXM2"),  # v100_resnet50_tb_sample_step
    ("Tesla V100-PCIE-16GB", 16, 80, "V100 PCIe"),
    ("Tesla V100-PCIE-32GB", 32, 80, "V100 PCIe"),
    ("Tesla V100S-PCIE-32GB", 32, 80, "V100S PCIe"),
    ("Tesla V100-FHHL-16GB", 16, 80, None),  # a lower-clocked part not in the table
    ("Tesla T4", 15, 40, "T4"),
    ("NVIDIA GeForce RTX 2080 Ti", 11, 68, "GeForce RTX 2080 Ti"),
    ("NVIDIA GeForce RTX 2080", 8, 46, None),
    ("NVIDIA GeForce RTX 3090", 24, 82, "GeForce RTX 3090"),
    ("NVIDIA GeForce RTX 3090 Ti", 24, 84, None),  # "RTX 3090" and one word more
    ("NVIDIA GeForce RTX 4090", 24, 128, "GeForce RTX 4090"),
    ("NVIDIA GeForce RTX 4090 D", 24, 114, None),
    ("NVIDIA RTX A6000", 48, 84, "RTX A6000"),
    ("NVIDIA RTX 6000 Ada Generation", 48, 142, None),
    ("NVIDIA A10", 22, 72, "A10"),
    ("NVIDIA A10G", 22, 80, "A10G"),
    ("NVIDIA A100-SXM4-40GB", 40, 108, "A100 40GB SXM"),
    ("NVIDIA A100-SXM4-80GB", 80, 108, "A100 80GB SXM"),  # a100_recsys_16gpu_rank0
    ("NVIDIA A100-SXM4-80GB", None, None, "A100 80GB SXM"),  # nvidia-smi: name alone
    ("NVIDIA A100-PG509-200", 39.4, 108, "A100 40GB SXM"),  # a100_alexnet and others
    ("NVIDIA A100-PCIE-40GB", 40, 108, "A100 40GB PCIe"),
    ("NVIDIA A100 80GB PCIe", 80, 108, "A100 80GB PCIe"),
    ("NVIDIA A100 80GB PCIe", None, None, "A100 80GB PCIe"),
    ("NVIDIA L4", 22, 58, "L4"),
    ("NVIDIA L40S", 45, 142, "L40S"),
    ("NVIDIA L40", 45, 142, None),  # L4's word is "l4", not a prefix
    ("NVIDIA H100 80GB HBM3", 79, 132, "H100 SXM"),  # h100_bert_small
    ("NVIDIA H100 PCIe", 80, 114, "H100 PCIe"),
    ("NVIDIA H100 NVL", 94, 132, None),
    ("NVIDIA H800", 80, 132, None),
    ("NVIDIA H200", 141, 132, "H200 SXM"),
    ("NVIDIA H200 NVL", 141, 132, None),
    ("NVIDIA GH200 480GB", 95, 132, "GH200 (96GB HBM3)"),  # GH200, never H200
    ("NVIDIA GH200 480GB", None, None, "GH200 (96GB HBM3)"),
    ("NVIDIA GH200 144G HBM3e", 143, 132, "GH200 (144GB HBM3e)"),
    ("NVIDIA GH200 144G HBM3e", None, None, "GH200 (144GB HBM3e)"),
    ("NVIDIA B200", 178, 148, "B200"),  # b200_vllm_eager
    ("AMD Instinct MI210", 64, 104, "MI210"),
    ("AMD Instinct MI250X", 64, 110, "MI250X (one GCD)"),
    ("AMD Instinct MI250X/MI250", 64, 110, "MI250X (one GCD)"),
    ("AMD Instinct MI250X/MI250", 64, 104, "MI250 (one GCD)"),
    ("AMD Instinct MI250X/MI250", 64, None, None),  # two parts, no CU count to choose
    ("AMD Instinct MI300X", 192, 304, "MI300X"),  # mi300_resnet_act_checkpoint
    ("AMD Instinct MI300X VF", 191, 304, "MI300X"),  # mi300_bert_small
    ("AMD Instinct MI325X", 256, 304, "MI325X"),
    ("AMD Instinct MI300A", 128, 228, None),
    ("AMD Radeon Graphics", 64, 104, None),  # mi250_minitoy_train: the name says nothing
    ("NVIDIA GeForce GTX 1080", 8, 20, None),
    ("", 0, None, None),
]


@pytest.mark.parametrize(("name", "gib", "cus", "expected"), PRINTED)
def test_printed_names_to_parts(name: str, gib: float | None, cus: int | None,
                                expected: str | None) -> None:
    peak = match_device(name, int(gib * GIB) if gib is not None else None, cus)
    assert (peak.name if peak else None) == expected


def test_the_trace_names_are_the_printed_ones() -> None:
    """The names above marked with a trace are that trace's deviceProperties name."""
    for trace, name in [("v100_resnet50_train", "Tesla V100-SXM2-32GB"),
                        ("v100_resnet50_tb_sample_step", "Tesla V100-DGXS-32GB"),
                        ("a100_recsys_16gpu_rank0", "NVIDIA A100-SXM4-80GB"),
                        ("a100_alexnet", "NVIDIA A100-PG509-200"),
                        ("h100_bert_small", "NVIDIA H100 80GB HBM3"),
                        ("b200_vllm_eager", "NVIDIA B200"),
                        ("mi300_resnet_act_checkpoint", "AMD Instinct MI300X"),
                        ("mi300_bert_small", "AMD Instinct MI300X VF"),
                        ("mi250_minitoy_train", "AMD Radeon Graphics")]:
        assert _props(trace)[0]["name"] == name


REQUIRED = ["V100 SXM2", "V100 PCIe", "T4", "GeForce RTX 2080 Ti", "GeForce RTX 3090",
            "GeForce RTX 4090", "A10", "A10G", "A100 40GB SXM", "A100 80GB SXM",
            "A100 40GB PCIe", "A100 80GB PCIe", "L4", "L40S", "RTX A6000", "H100 PCIe",
            "H100 SXM", "H200 SXM", "GH200 (96GB HBM3)", "GH200 (144GB HBM3e)", "B200",
            "MI250X (one GCD)", "MI300X", "MI325X"]


def _parts() -> dict[str, device_specs.DevicePeak]:
    return {e.peak.name: e.peak for e in NAMES}


def test_every_part_has_its_figures_and_a_source() -> None:
    parts = _parts()
    assert set(REQUIRED) <= set(parts)
    for p in parts.values():
        assert p.source.startswith(("NVIDIA", "AMD")) and "https://" in p.source
        assert p.memory_bytes_per_s > 0 and p.fp32_flops_per_s > 0
        assert p.matrix_flops_per_s["fp16"] > p.fp32_flops_per_s
        assert p.int8_ops_per_s is None or p.int8_ops_per_s >= p.matrix_flops_per_s["fp16"]
    # the dtypes each generation's tensor cores have: Volta fp16 only; Turing adds int8;
    # Ampere tf32 and bf16; Ada, Hopper, Blackwell and CDNA3 fp8
    assert set(parts["V100 SXM2"].matrix_flops_per_s) == {"fp16"}
    assert set(parts["T4"].matrix_flops_per_s) == {"fp16"} and parts["T4"].int8_ops_per_s
    for name in ("A10", "A10G", "A100 80GB SXM", "GeForce RTX 3090", "RTX A6000", "L4",
                 "H100 SXM", "B200", "MI300X"):
        assert {"tf32", "bf16"} <= parts[name].matrix_flops_per_s.keys()
    for name in ("L4", "L40S", "GeForce RTX 4090", "H100 PCIe", "H100 SXM", "H200 SXM",
                 "GH200 (96GB HBM3)", "B200", "MI300X", "MI325X"):
        assert "fp8" in parts[name].matrix_flops_per_s
    for name in ("A100 80GB SXM", "A10", "T4"):
        assert "fp8" not in parts[name].matrix_flops_per_s


def test_dense_figures_not_the_sparse_ones() -> None:
    """Datasheets print the 2:4-sparse rates first: H100 SXM "BF16 1,979 TFLOPS*", A100
    "TF32 312*", L40S "FP8 1,466*", MI300X "FP8 5,229.8 with sparsity"; the table holds
    half of each. On NVIDIA's datacenter parts TF32 is half of BF16 and FP8 twice it."""
    parts = _parts()
    T = 1e12
    assert parts["H100 SXM"].matrix_flops_per_s["bf16"] == 989.5 * T
    assert parts["A100 40GB SXM"].matrix_flops_per_s["tf32"] == 156 * T
    assert parts["L40S"].matrix_flops_per_s["fp8"] == 733 * T
    assert parts["MI300X"].matrix_flops_per_s["fp8"] == 2614.9 * T
    for name in ("A100 80GB SXM", "H100 SXM", "H100 PCIe", "H200 SXM", "GH200 (96GB HBM3)",
                 "B200", "L4", "A10"):
        m = parts[name].matrix_flops_per_s
        assert m["tf32"] == pytest.approx(m["bf16"] / 2, rel=0.01)
        if "fp8" in m:
            assert m["fp8"] == pytest.approx(2 * m["bf16"], rel=0.01)


def test_memory_and_gcd_figures() -> None:
    parts = _parts()
    assert parts["GH200 (96GB HBM3)"].memory_bytes_per_s == pytest.approx(4.0e12)
    assert parts["GH200 (144GB HBM3e)"].memory_bytes_per_s == pytest.approx(4.9e12)
    assert parts["H200 SXM"].memory_bytes_per_s == pytest.approx(4.8e12)
    assert parts["A100 80GB SXM"].memory_bytes_per_s == pytest.approx(2.039e12)
    # an MI250X is two GCDs, each a device of its own: half the package's 383 TFLOP/s
    # and 3.2768 TB/s; an MI250 GCD has an MI210's peaks
    mi250x = parts["MI250X (one GCD)"]
    assert mi250x.matrix_flops_per_s["bf16"] == pytest.approx(191.5e12)
    assert mi250x.memory_bytes_per_s == pytest.approx(1.6384e12)
    assert parts["MI250 (one GCD)"].matrix_flops_per_s["bf16"] == \
        pytest.approx(parts["MI210"].matrix_flops_per_s["bf16"], rel=0.001)


def test_peak_by_dtype() -> None:
    h100 = match_device("NVIDIA H100 80GB HBM3")
    assert compute_peak(h100, "bf16", True, False) == 989.5e12
    assert compute_peak(h100, "fp8", True, False) == 1979e12
    assert compute_peak(h100, "fp32", True, True) == 494.5e12  # TF32 kernels
    assert compute_peak(h100, "fp32", True, False) == 67e12  # FFMA kernels
    assert compute_peak(h100, "bf16", False, False) == 67e12  # elementwise: vector rate
    assert compute_peak(h100, "int8", True, False) == 1979e12
    v100 = match_device("Tesla V100-SXM2-16GB")
    assert compute_peak(v100, "bf16", True, False) == 15.7e12  # no bf16 tensor cores
    t4 = match_device("Tesla T4")
    assert compute_peak(t4, "fp32", True, True) == 8.1e12  # no TF32 on Turing
    mi300 = match_device("AMD Instinct MI300X")
    assert compute_peak(mi300, "fp32", True, False) == 163.4e12  # fp32 MFMA


def test_an_unknown_device_is_named_once_and_gets_no_peaks() -> None:
    d = identify([{"name": "NVIDIA H100 NVL", "totalGlobalMem": 94 * GIB, "numSms": 132}],
                 ["nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT"])
    assert d.peak is None
    assert d.note == note("device_not_in_peak_table", name="NVIDIA H100 NVL",
                          amd_matrix_kernels=False)


def test_an_unknown_device_on_a_real_trace_withholds_every_share() -> None:
    """H100 BERT with its name changed to a part the table lacks: FLOPs and rates stay,
    every share of a peak, bound and MFU is withheld, and one note says why."""
    table = load(DATA / "h100_bert_small.json.gz")
    props = [dict(p, name="NVIDIA GeForce RTX 3090 Ti") for p in table.meta.device_properties]
    table.meta = msgspec.structs.replace(table.meta, device_properties=props)
    perf = _perf(table)
    assert perf.peak is None and perf.model_flops_utilization is None
    assert perf.flops > 0 and all(g.flops_per_s is not None for g in perf.groups)
    assert all(g.compute_peak_share is None and g.memory_peak_share is None
               and g.bound is None for g in perf.groups)
    assert [n for n in perf.notes if n.code.startswith("device_")] == [
        note("device_not_in_peak_table", name="NVIDIA GeForce RTX 3090 Ti",
             amd_matrix_kernels=False)]


@pytest.mark.parametrize("trace", ["mi300_bert_small", "mi300_resnet_act_checkpoint",
                                   "mi300_torch_compile_triton"])
def test_mi300_recognised_from_kernel_names_without_device_properties(trace: str) -> None:
    """The same MI300X traces with ``deviceProperties`` removed: their hipBLASLt/rocBLAS
    kernels name the gfx942 target (``_ISA942_``), so the MI300X peaks are used and a note
    says they were inferred; shares and MFU equal those with the recorded name."""
    table = load(DATA / f"{trace}.json.gz")
    assert any("_ISA942_" in n for n in table.names)
    with_props = _perf(table)
    table.meta = msgspec.structs.replace(table.meta, device_properties=[])
    name, peak, inferred = device_of_table(table)
    assert name is None and peak is not None and peak.name == "MI300X"
    assert inferred == note("device_inferred_from_target", name=None, has_properties=False,
                            part="MI300X", gfx="gfx942")
    perf = _perf(table)
    assert perf.peak == with_props.peak and perf.device is None
    assert [n for n in perf.notes if n.code.startswith("device_")] == [inferred]
    assert [g.compute_peak_share for g in perf.groups] == \
        [g.compute_peak_share for g in with_props.groups]
    assert perf.model_flops_utilization == with_props.model_flops_utilization


def test_no_kernel_names_the_part() -> None:
    """MI300X normalization layers: no GEMM, so no kernel names a gfx target; without
    deviceProperties the part stays unknown."""
    table = load(DATA / "mi300_normalization_layers.json.gz")
    table.meta = msgspec.structs.replace(table.meta, device_properties=[])
    assert device_of_table(table) == (None, None, note("device_unnamed", has_properties=False,
                                                       amd_matrix_kernels=False))


def test_mi250_gcd_recognised_behind_a_generic_name() -> None:
    """ROCm names this MI250 GCD ``AMD Radeon Graphics``; its Tensile kernels name gfx90a
    and deviceProperties 104 CUs: one MI250 GCD (an MI210 has the same peaks)."""
    table = load(DATA / "mi250_minitoy_train.json.gz")
    assert any("_ISA90a_" in n for n in table.names)
    name, peak, inferred = device_of_table(table)
    assert name == "AMD Radeon Graphics" and peak is not None
    assert peak.name == "MI250 (one GCD)"
    assert inferred == note("device_inferred_from_target", name="AMD Radeon Graphics",
                            has_properties=True, part="MI250 (one GCD)", gfx="gfx90a")


def test_inference_rules() -> None:
    mi300_kernel = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x192x64_MI16x16x1_SN_" \
                   "LDSB1_GLS0_ISA942_IU1_K1"
    # a CU count that is no part of the table (MI308X: 80 CUs): withheld
    d = identify([{"name": "AMD Radeon Graphics", "numSms": 80}], [mi300_kernel])
    assert d.peak is None and d.note == note("device_target_not_in_peak_table",
                                             name="AMD Radeon Graphics", has_properties=True,
                                             gfx="gfx942")
    # MI325X: the same target and CUs, more memory
    d = identify([{"name": "AMD Radeon Graphics", "numSms": 304,
                   "totalGlobalMem": 256 * GIB}], [mi300_kernel])
    assert d.peak is not None and d.peak.name == "MI325X"
    # gfx90a without a CU count: MI250X or MI250 or MI210, no guess
    d = identify([], ["Cijk_Alik_Bljk_SB_MT64x16x32_MI16x16x1_SN_ISA90a_IU1"])
    assert d.peak is None
    # MFMA kernels that name no target
    d = identify([], ["_ZN2ck16tensor_operation6device37kernel_batched_gemm_xdlops_bwd"])
    assert d.peak is None and d.note == note("device_unnamed", has_properties=False,
                                             amd_matrix_kernels=True)
    # a named NVIDIA part is never inferred from kernels
    d = identify([{"name": "NVIDIA H100 NVL"}], [mi300_kernel])
    assert d.peak is None
    # the generic name and no kernel naming a target; a nameless entry
    assert identify([{"name": "AMD Radeon Graphics", "numSms": 104}], ["attn_fwd"]).note == \
        note("device_not_in_peak_table", name="AMD Radeon Graphics", amd_matrix_kernels=False)
    d = identify([{"id": 0, "numSms": 304}], [mi300_kernel])
    assert d.peak is not None and d.peak.name == "MI300X"
    assert d.note == note("device_inferred_from_target", name=None, has_properties=True,
                          part="MI300X", gfx="gfx942")
    assert {t.gfx for t in AMD_TARGETS} == {"gfx942", "gfx90a"}


def test_nvidia_without_device_properties_stays_unknown() -> None:
    """Two ranks of an NVIDIA job recorded without deviceProperties: NVIDIA parts are not
    inferred from kernels, so no peaks and one note."""
    table = load(DATA / "two_ranks" / "rank0.json.gz")
    assert table.meta.device_properties == []
    assert device_of_table(table)[1:] == (None, note("device_unnamed", has_properties=False,
                                                     amd_matrix_kernels=False))


def _props(trace: str) -> list[dict]:
    with gzip.open(DATA / f"{trace}.json.gz", "rt") as fh:
        return json.load(fh)["deviceProperties"]


def _perf(table):
    tree = build_op_tree(table)
    return analyze_roofline(table, tree, attribute_gpu(table, tree))
