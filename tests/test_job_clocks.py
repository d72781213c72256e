"""Hosts whose clocks differ: a real two-rank gloo run (rank 1 the straggler, 50 ms
before each all-reduce) with rank 1's clock moved by a known offset is aligned by the
job view, the offset reported within 5 %, and the verdict and waits unchanged."""

from __future__ import annotations

import pytest
from merge_helpers import GLOO, shifted_copy

from profiler_kit import api


@pytest.fixture(scope="module")
def unshifted():
    (job,) = api.job_view([GLOO])
    assert job.clock_shifts == () and job.straggler is not None
    return job


@pytest.mark.parametrize("offset_s", [3.0, -3.0, 0.4])
def test_offset_clock_is_found_and_the_verdict_kept(tmp_path, unshifted, offset_s):
    offset_us = int(offset_s * 1e6)
    (job,) = api.job_view([shifted_copy(tmp_path / "t", 1, offset_us)])
    assert [s.rank for s in job.clock_shifts] == [1]
    shift_ns = job.clock_shifts[0].shift_ns
    assert abs(shift_ns - offset_us * 1000) <= 0.05 * abs(offset_us * 1000)
    assert any("clocks differ" in w for w in job.warnings)
    assert job.straggler is not None and job.straggler.rank == unshifted.straggler.rank == 1
    for a, b in zip(job.per_rank, unshifted.per_rank, strict=True):
        assert a.wait_per_step_ns == pytest.approx(b.wait_per_step_ns, rel=0.05, abs=1e6)
