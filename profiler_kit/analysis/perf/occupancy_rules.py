"""Theoretical occupancy of a kernel launch and what limits it, by the CUDA occupancy rules.

The rules are those of CUDA's occupancy calculator (``cuda_occupancy.h``, the header the
spreadsheet and ``cudaOccupancyMaxActiveBlocksPerMultiprocessor`` share), with the
default cache configuration and partitioned global caching off:

* warps: a block takes ``ceil(threads / warp size)`` warp slots of the SM's
  ``maxThreadsPerMultiProcessor / warpSize``;
* blocks: at most the compute capability's resident blocks per SM (16 on 3.x, 7.5 and
  8.6/8.7; 24 on 8.9, 10.1, 11.0 and 12.x; 32 otherwise);
* registers: per warp ``registers per thread × warp size`` rounded up to the allocation
  unit (256); the SM's registers split over its 4 sub-partitions (2 on 6.0), each holding
  a whole number of warps; none fit past 255 (3.x-6.x) or 256 registers per thread;
* shared memory: per block the kernel's static and dynamic bytes plus the bytes the
  driver reserves per block (1 KiB from 8.0), rounded up to the allocation unit (256
  bytes to 7.x, 128 from 8.0), out of the SM's shared memory.

The active blocks per SM are the least of the four; occupancy is their warps over the
SM's warp slots. The limiter is the rule that gives the least ("block size" for the
warp and block-count rules); "grid" when the launch has fewer blocks than the GPU's SMs
could hold at that occupancy, so SMs idle whatever the kernel's resources. AMD GPUs
(``warpSize`` 64): wavefront slots per CU from ``maxThreadsPerMultiProcessor`` and the
grid; their traces record no registers or LDS per kernel, so those limits are not known.
"""

from __future__ import annotations

from typing import Any

import msgspec

REGISTERS = "registers"
SHARED_MEMORY = "shared memory"
BLOCK_SIZE = "block size"
GRID = "grid"  # too few blocks for the GPU
LIMITERS = (REGISTERS, SHARED_MEMORY, BLOCK_SIZE, GRID)


class DeviceLimits(msgspec.Struct, frozen=True):
    """What occupancy depends on, for one GPU (from deviceProperties, else by its compute
    capability)."""

    compute_capability: tuple[int, int] | None  # None: AMD (or unknown)
    sms: int | None  # SMs (CUs on AMD)
    warp_size: int
    max_threads_per_sm: int
    max_blocks_per_sm: int | None
    registers_per_sm: int | None
    max_registers_per_block: int | None
    shared_memory_per_sm: int | None  # bytes
    reserved_shared_memory_per_block: int
    shared_memory_granularity: int
    register_granularity: int
    max_registers_per_thread: int
    sub_partitions: int
    source: str  # "deviceProperties" or "compute capability table"

    @property
    def max_warps_per_sm(self) -> int:
        return self.max_threads_per_sm // self.warp_size


class Occupancy(msgspec.Struct, frozen=True):
    """One launch configuration's theoretical occupancy."""

    blocks_per_sm: int  # active blocks per SM by the resource rules
    warps_per_sm: int
    occupancy: float  # active warps / the SM's warp slots (0-1)
    limiter: str | None  # what gives the least (None: nothing short of the SM's warps)
    by_rule: dict[str, int]  # blocks per SM each rule allows ("registers": 4, ...)


# (major, minor) -> (max blocks per SM, shared memory per SM in bytes, max threads per SM);
# the rest of the table is the same for every CUDA GPU since 5.0 (65,536 registers per SM)
_CC_TABLE: dict[tuple[int, int], tuple[int, int, int]] = {
    (3, 5): (16, 49152, 2048), (3, 7): (16, 114688, 2048),
    (5, 0): (32, 65536, 2048), (5, 2): (32, 98304, 2048), (5, 3): (32, 65536, 2048),
    (6, 0): (32, 65536, 2048), (6, 1): (32, 98304, 2048), (6, 2): (32, 65536, 2048),
    (7, 0): (32, 98304, 2048), (7, 2): (32, 98304, 2048), (7, 5): (16, 65536, 1024),
    (8, 0): (32, 167936, 2048), (8, 6): (16, 102400, 1536), (8, 7): (16, 167936, 1536),
    (8, 9): (24, 102400, 1536), (9, 0): (32, 233472, 2048),
    (10, 0): (32, 233472, 2048), (10, 1): (24, 233472, 1536), (10, 3): (32, 233472, 2048),
    (11, 0): (24, 233472, 1536), (12, 0): (24, 102400, 1536), (12, 1): (24, 102400, 1536),
}


def max_blocks_per_sm(major: int, minor: int) -> int:
    """The compute capability's resident blocks per SM (cudaOccMaxBlocksPerMultiprocessor)."""
    if major == 3 or (major == 7 and minor == 5) or (major == 8 and minor not in (0, 9)):
        return 16
    if (major, minor) in ((8, 9), (10, 1), (11, 0)) or major == 12:
        return 24
    return 32


def _int(p: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        v = p.get(k)
        if type(v) is int and v > 0:
            return v
    return None


def device_limits(props: dict[str, Any]) -> DeviceLimits | None:
    """The limits of the GPU ``props`` (one entry of the trace's deviceProperties) describes;
    None when it says too little (no compute capability and no thread limits)."""
    major, minor = props.get("computeMajor"), props.get("computeMinor")
    warp = _int(props, "warpSize") or 32
    sms = _int(props, "numSms", "multiProcessorCount")
    if warp == 64:  # AMD: wavefronts of 64, per-CU limits; no register or LDS figures
        threads = _int(props, "maxThreadsPerMultiprocessor") or 2048
        lds = _int(props, "maxSharedMemoryPerMultiProcessor", "sharedMemPerMultiprocessor")
        return DeviceLimits(None, sms, warp, threads, None, None, None, lds, 0, 1, 1, 0, 1,
                            "deviceProperties")
    if type(major) is not int or type(minor) is not int or major < 3:
        return None
    known = _CC_TABLE.get((major, minor))
    blocks = max_blocks_per_sm(major, minor)
    threads = _int(props, "maxThreadsPerMultiprocessor") or (known[2] if known else 2048)
    smem = _int(props, "sharedMemPerMultiprocessor") or (known[1] if known else None)
    regs = _int(props, "regsPerMultiprocessor") or 65536
    from_props = all(props.get(k) is not None for k in
                     ("maxThreadsPerMultiprocessor", "sharedMemPerMultiprocessor",
                      "regsPerMultiprocessor"))
    return DeviceLimits(
        compute_capability=(major, minor), sms=sms, warp_size=warp,
        max_threads_per_sm=threads, max_blocks_per_sm=blocks, registers_per_sm=regs,
        max_registers_per_block=_int(props, "regsPerBlock") or 65536,
        shared_memory_per_sm=smem,
        reserved_shared_memory_per_block=1024 if major >= 8 else 0,
        shared_memory_granularity=128 if major >= 8 else 256,
        register_granularity=256,
        max_registers_per_thread=255 if major <= 6 else 256,
        sub_partitions=2 if (major, minor) == (6, 0) else 4,
        source="deviceProperties" if from_props else "compute capability table")


def _ceil_div(x: int, y: int) -> int:
    return -(-x // y)


def theoretical(d: DeviceLimits, block_threads: int, registers: int | None = None,
                shared_memory_bytes: int | None = None) -> Occupancy | None:
    """Active blocks and warps per SM of a launch, and what limits them; None for a block
    of no threads or one larger than the SM holds. ``registers`` (per thread) and
    ``shared_memory_bytes`` (per block, static + dynamic) None: not known, no limit."""
    if block_threads <= 0 or block_threads > d.max_threads_per_sm:
        return None
    warps = _ceil_div(block_threads, d.warp_size)
    rules: dict[str, int] = {"warps": d.max_warps_per_sm // warps}
    if d.max_blocks_per_sm is not None:
        rules["blocks"] = d.max_blocks_per_sm
    if registers is not None and registers > 0 and d.registers_per_sm:
        per_warp = _ceil_div(registers * d.warp_size, d.register_granularity) \
            * d.register_granularity
        assumed = per_warp * _ceil_div(warps, d.sub_partitions) * d.sub_partitions
        if registers > d.max_registers_per_thread or \
                (d.max_registers_per_block or 0) < max(assumed, per_warp * warps):
            rules[REGISTERS] = 0
        else:
            per_sub = d.registers_per_sm // d.sub_partitions // per_warp
            rules[REGISTERS] = per_sub * d.sub_partitions // warps
    if shared_memory_bytes is not None and shared_memory_bytes >= 0 and \
            d.shared_memory_per_sm and d.compute_capability is not None:
        g = d.shared_memory_granularity
        used = _ceil_div(shared_memory_bytes + d.reserved_shared_memory_per_block, g) * g
        if used > 0:
            rules[SHARED_MEMORY] = d.shared_memory_per_sm // used
    blocks = min(rules.values())
    limiter = None
    if blocks * warps < d.max_warps_per_sm:
        least = [k for k, v in rules.items() if v == blocks]
        # the resource the kernel could change first: registers, then shared memory
        limiter = REGISTERS if REGISTERS in least else \
            SHARED_MEMORY if SHARED_MEMORY in least else BLOCK_SIZE
    return Occupancy(blocks_per_sm=blocks, warps_per_sm=blocks * warps,
                     occupancy=blocks * warps / d.max_warps_per_sm, limiter=limiter,
                     by_rule=rules)


def fills_gpu(d: DeviceLimits, grid_blocks: int, occ: Occupancy | None) -> bool | None:
    """Whether a grid of ``grid_blocks`` gives every SM its active blocks (None: unknown)."""
    if d.sms is None or grid_blocks < 0:
        return None
    per_sm = occ.blocks_per_sm if occ is not None and occ.blocks_per_sm > 0 else 1
    return grid_blocks >= d.sms * per_sm
