"""The numpy helpers give exactly what np.unique, np.isin, np.percentile and np.median give."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from profiler_kit.analysis.core.arrays import dense_ids, distinct, median, member, percentile

values = st.lists(st.integers(-(2**52), 2**52), max_size=60)


@given(values)
def test_distinct_is_np_unique(xs: list[int]) -> None:
    a = np.array(xs, dtype=np.int64)
    np.testing.assert_array_equal(distinct(a), np.unique(a))


@given(values, values, st.sampled_from([np.int64, np.int32]))
def test_member_is_np_isin(xs: list[int], ys: list[int], dtype: type) -> None:
    a = np.array(xs, dtype=np.int64).astype(dtype)  # int32: the interned names
    np.testing.assert_array_equal(member(a, ys), np.isin(a, ys))


@given(values.filter(bool), st.floats(0, 100))
def test_percentile_is_np_percentile(xs: list[int], q: float) -> None:
    a = np.array(xs, dtype=np.int64)
    assert percentile(a, q) == float(np.percentile(a, q))


@given(values.filter(bool))
def test_median_of_integers_is_np_median(xs: list[int]) -> None:
    assert median(np.array(xs, dtype=np.int64)) == float(np.median(xs))


@given(st.lists(st.floats(-1e300, 1e300), min_size=1, max_size=60))
def test_median_of_floats_is_np_median(xs: list[float]) -> None:
    assert median(xs) == float(np.median(np.array(xs)))


def test_median_of_nothing_is_nan() -> None:
    assert np.isnan(median([]))


@given(st.lists(st.integers(-300, 300), max_size=60) | values,
       st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint32]))
def test_dense_ids_is_np_unique_with_inverse(xs: list[int], dtype: type) -> None:
    """Narrow ranges take the table path, wide ones the sort; both give np.unique's arrays."""
    info = np.iinfo(dtype)
    a = np.array([min(max(x, info.min), info.max) for x in xs], dtype=dtype)
    uniq, inverse = dense_ids(a)
    want_uniq, want_inverse = np.unique(a, return_inverse=True)
    assert uniq.dtype == want_uniq.dtype and inverse.dtype == want_inverse.dtype
    np.testing.assert_array_equal(uniq, want_uniq)
    np.testing.assert_array_equal(inverse, want_inverse.reshape(-1))


def test_dense_ids_of_other_dtypes_falls_back_to_np_unique() -> None:
    a = np.array([2.5, -1.0, 2.5])
    uniq, inverse = dense_ids(a)
    np.testing.assert_array_equal(uniq, [-1.0, 2.5])
    np.testing.assert_array_equal(inverse, [1, 0, 1])
