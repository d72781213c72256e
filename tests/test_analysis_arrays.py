"""The numpy helpers give exactly what np.unique and np.percentile give."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from profiler_kit.analysis.arrays import distinct, percentile

values = st.lists(st.integers(-(2**52), 2**52), max_size=60)


@given(values)
def test_distinct_is_np_unique(xs: list[int]) -> None:
    a = np.array(xs, dtype=np.int64)
    np.testing.assert_array_equal(distinct(a), np.unique(a))


@given(values.filter(bool), st.floats(0, 100))
def test_percentile_is_np_percentile(xs: list[int], q: float) -> None:
    a = np.array(xs, dtype=np.int64)
    assert percentile(a, q) == float(np.percentile(a, q))
