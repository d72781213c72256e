"""Whether a trace's GPU work went unrecorded: launches or a GPU in use, but no GPU activity.

A GPU trace whose profiler did not record CUDA activity (``activities=`` without
``ProfilerActivity.CUDA``), or whose CUPTI buffer was dropped, still holds the CPU side:
the ops, often the launch calls (``cudaLaunchKernel``, ``cuLaunchKernel``,
``hipLaunchKernel``, ...), the GPU's memory events and ``deviceProperties``. What it
lacks are the kernels, memcpy and memset, and with them every GPU time: an op's CPU
duration is then only the time it took to enqueue its kernels. Such a trace is named,
and no figure that needs device time (GPU shares, % of peak, MFU, the GPU rules) is
computed from it.

``deviceProperties`` alone says only that the machine had a GPU: Kineto writes it
whatever activities were asked for, so a CPU workload profiled on a GPU machine has
it too. It counts together with a sign that the work used the GPU: launch or other
runtime calls, memory events on a GPU, or ops that exist only on a GPU (cuDNN, MIOpen,
flash and memory-efficient attention, NCCL).
"""

from __future__ import annotations

import re

import msgspec
import numpy as np

from profiler_kit.analysis.core.launch_links import GpuActivity
from profiler_kit.trace.table import Cat, EventTable

# runtime and driver calls that put work on a GPU stream
_LAUNCH = re.compile(r"Launch|Memcpy|Memset", re.IGNORECASE)
# ops that run on a GPU only (their CPU counterparts have other names, or end in _for_cpu)
_GPU_ONLY_OP = re.compile(
    r"^aten::(_?cudnn_|miopen_|_flash_attention_|_efficient_attention_|"
    r"_scaled_dot_product_(flash|efficient|cudnn)_attention(_backward)?$)|^nccl:")


class MissingGpuActivity(msgspec.Struct, frozen=True):
    """What shows the trace ran work on a GPU, although it records no GPU activity."""

    launch_calls: int  # runtime/driver calls that enqueue work (launches, memcpy, memset)
    launch_names: tuple[str, ...]  # their distinct names, most frequent first
    runtime_calls: int  # every runtime/driver call (the launches included)
    devices: tuple[str, ...]  # the deviceProperties names
    device_memory_events: int  # [memory] events on a GPU
    gpu_only_ops: int  # op instances of ops that run on a GPU only


def missing_gpu_activity(table: EventTable, gpu: GpuActivity) -> MissingGpuActivity | None:
    """None when the trace has GPU activity, or shows no sign of GPU work."""
    if len(gpu):
        return None
    runtime = table.rows(Cat.RUNTIME)
    names, counts = np.unique(table.name[runtime], return_counts=True)
    launches = [(table.names[int(n)], int(c)) for n, c in zip(names.tolist(), counts.tolist(),
                                                              strict=True)
                if _LAUNCH.search(table.names[int(n)])]
    launches.sort(key=lambda nc: (-nc[1], nc[0]))
    n_launch = sum(c for _, c in launches)
    props = table.meta.device_properties
    devices = tuple(str(p.get("name")) for p in props if isinstance(p, dict) and p.get("name"))
    on_device = int((table.memory.device_type != 0).sum())
    ops = table.rows(Cat.CPU_OP)
    op_names, op_counts = np.unique(table.name[ops], return_counts=True)
    gpu_ops = sum(int(c) for n, c in zip(op_names.tolist(), op_counts.tolist(), strict=True)
                  if _GPU_ONLY_OP.search(table.names[int(n)]))
    if not n_launch and not (props and (len(runtime) or on_device or gpu_ops)):
        return None
    return MissingGpuActivity(
        launch_calls=n_launch, launch_names=tuple(n for n, _ in launches),
        runtime_calls=len(runtime), devices=devices, device_memory_events=on_device,
        gpu_only_ops=gpu_ops)
