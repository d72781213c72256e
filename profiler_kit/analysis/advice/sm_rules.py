"""Small kernels that do not fill the GPU: the GPU reads busy while most of its SMs idle.

Fires where compute kernels launched with fewer blocks than the GPU's SMs hold at their
occupancy (limiter "grid", :mod:`..perf.occupancy_rules`) left at least
``UNDERFILL_SHARE`` of the compute kernels' time as idle SM time (time × (1 − blocks per
SM), blocks per SM capped at 1), over at least ``MIN_LAUNCHES`` such launches. Silent
where kernels fill the SMs, where the trace records no blocks per SM, and on
communication kernels (a collective's few blocks are its design).
"""

from __future__ import annotations

from profiler_kit.analysis.core.recommendation import Evidence, Recommendation
from profiler_kit.analysis.perf.sm_occupancy import SmOccupancy

UNDERFILL_SHARE = 0.2
MIN_LAUNCHES = 10
SHOWN = 3


def sm_recommendations(sm: SmOccupancy | None) -> tuple[Recommendation, ...]:
    if sm is None or not sm.available or sm.compute_kernel_ns <= 0:
        return ()
    share = sm.underfill_idle_ns / sm.compute_kernel_ns
    if share < UNDERFILL_SHARE or sm.underfill_launches < MIN_LAUNCHES:
        return ()
    evidence = [Evidence("idle SM time of launches too small for the GPU",
                         sm.underfill_idle_ns, "ns"),
                Evidence("compute kernel time", sm.compute_kernel_ns, "ns"),
                Evidence("such launches", sm.underfill_launches, "count")]
    if sm.sms:
        evidence.append(Evidence("SMs", sm.sms, "count"))
    for d in sm.devices:
        if d.sm_efficiency is not None:
            evidence.append(Evidence(f"gpu:{d.device} SM efficiency", d.sm_efficiency,
                                     "fraction"))
    for k in sm.idle_kernels[:SHOWN]:
        where = " ".join(x for x in (k.op and f"from {k.op}", k.source and f"at {k.source}")
                         if x)
        evidence.append(Evidence(f"idle SM time{(' ' + where) if where else ''}",
                                 k.idle_sm_ns, "ns", name=k.name))
    return (Recommendation(
        rule="small_kernels_underfill_gpu",
        scope="trace",
        measured=share,
        threshold=UNDERFILL_SHARE,
        fires_when="above",
        unit="fraction",
        evidence=tuple(evidence)),)
