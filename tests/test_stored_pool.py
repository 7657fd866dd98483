"""stored_pool: the adapters' shared steps from stored vectors to a checked CandidatePool."""

from types import SimpleNamespace

import numpy as np
import pytest

from mempursuit_core import get_selector
from mempursuit_core.adapter import CandidatePool, stored_pool


class ReadError(RuntimeError):
    """An adapter's own error type."""


def _vec(*xs):
    return np.asarray(xs, dtype=np.float64)


Q = _vec(1.0, 0.0, 0.0)


def test_kept_and_unscored_keep_the_native_order():
    items = ["a", "b", "c", "d", "e"]
    stored = [_vec(0, 1, 0), None, _vec(1, 0, 0), None, [0.5, 0.5, 0.0]]
    seen = []

    def signals(kept):
        seen.append(list(kept))
        return {"texts": [f"text {x}" for x in kept]}

    pool, unscored = stored_pool(items, stored, Q, native_scores=[0.9, 0.8, 0.7, None, 0.5],
                                 signals=signals, error=ReadError)
    assert isinstance(pool, CandidatePool)
    assert pool.items == ["a", "c", "e"] and unscored == ["b", "d"]
    assert pool.vectors.dtype == np.float32 and pool.query_vector.dtype == np.float32
    np.testing.assert_array_equal(pool.vectors, [[0, 1, 0], [1, 0, 0], [0.5, 0.5, 0]])
    # the scores of the kept items only: "d"'s None score does not count
    np.testing.assert_array_equal(pool.native_scores, [0.9, 0.7, 0.5])
    assert seen == [["a", "c", "e"]] and pool.signals["texts"] == ["text a", "text c", "text e"]
    assert pool.select(get_selector("native"), 2).items == ["a", "c"]


def test_signals_are_not_computed_when_a_check_fails():
    calls = []
    with pytest.raises(ReadError):
        stored_pool(["a"], [_vec(1, 0)], Q, signals=calls.append, error=ReadError)
    assert calls == []


def test_none_readable_raises_the_adapters_error_in_its_wording():
    with pytest.raises(ReadError) as got:
        stored_pool(["a", "b"], [None, None], Q, error=ReadError, what="fact_embedding",
                    messages={"none": "none of the {n} candidates has a stored {what} "
                                      "(a graph written without embeddings?)"})
    assert type(got.value) is ReadError
    assert str(got.value) == ("none of the 2 candidates has a stored fact_embedding "
                              "(a graph written without embeddings?)")
    with pytest.raises(ReadError, match="^none of the 3 candidates has a stored vector$"):
        stored_pool([1, 2, 3], [None] * 3, Q, error=ReadError)


def test_none_readable_without_a_none_message_is_an_empty_pool():
    pool, unscored = stored_pool(["a", "b"], [None, None], Q, native_scores=[1.0, 2.0],
                                 error=ReadError, messages={"none": None})
    assert pool.items == [] and unscored == ["a", "b"]
    assert pool.vectors.shape == (0, 3)
    assert pool.select(get_selector("native"), 2).items == []


def test_empty_input_is_an_empty_pool_not_an_error():
    pool, unscored = stored_pool([], [], Q, native_scores=[], error=ReadError)
    assert len(pool) == 0 and unscored == []
    assert pool.vectors.shape == (0, 3) and pool.native_scores.shape == (0,)


def test_ragged_rows_raise_the_ragged_message():
    with pytest.raises(ReadError, match="^the pool's stored vector rows differ in dimension$"):
        stored_pool(["a", "b"], [_vec(1, 0, 0), _vec(1, 0)], Q, error=ReadError)
    with pytest.raises(ReadError, match="^the pool's stored vectors differ in dimension$"):
        stored_pool(["a", "b"], [_vec(1, 0, 0), _vec(1, 0)], Q, error=ReadError,
                    messages={"ragged": "the pool's stored vectors differ in dimension"})


def test_a_dimension_other_than_the_querys_raises_the_shape_message():
    with pytest.raises(ReadError) as got:
        stored_pool(["a", "b"], [_vec(1, 0), _vec(0, 1)], Q, error=ReadError)
    assert str(got.value) == "stored vector rows of shape (2,) for a 3-d query"
    with pytest.raises(ReadError, match="^stored chunk vectors of size 4 for a 3-d query$"):
        stored_pool(["a"], [_vec(1, 0, 0, 0)], Q, error=ReadError,
                    messages={"shape": "stored chunk vectors of size {size} for a {d}-d query"})
    with pytest.raises(ReadError, match=r"of shape \(1, 3\) for a 3-d query"):  # not flattened
        stored_pool(["a"], [[[1.0, 0.0, 0.0]]], Q, error=ReadError)


def test_nan_or_infinite_rows_raise_naming_the_first_bad_item():
    items = [SimpleNamespace(key=k) for k in ("a", "b", "c")]
    stored = [_vec(1, 0, 0), _vec(0, np.inf, 0), _vec(np.nan, 0, 0)]
    with pytest.raises(ReadError, match="^a stored vector has NaN or infinite values$"):
        stored_pool(items, stored, Q, error=ReadError)
    with pytest.raises(ReadError, match="^the stored vector of 'b' has NaN or infinite values$"):
        stored_pool(items, stored, Q, error=ReadError,
                    messages={"nonfinite": "the stored vector of {item.key!r} has NaN or "
                                           "infinite values"})


@pytest.mark.parametrize("bad", [np.nan, None, np.inf, -np.inf])
def test_a_kept_items_missing_or_non_finite_score_means_no_native_scores(bad):
    pool, _ = stored_pool(["a", "b"], [_vec(1, 0, 0), _vec(0, 1, 0)], Q,
                          native_scores=[0.5, bad], error=ReadError)
    assert pool.native_scores is None
    pool, _ = stored_pool(["a", "b"], [_vec(1, 0, 0), _vec(0, 1, 0)], Q, error=ReadError)
    assert pool.native_scores is None


def test_misuse_is_a_plain_error_not_the_adapters():
    with pytest.raises(ValueError, match="1 stored entries for 2 items"):
        stored_pool(["a", "b"], [_vec(1, 0, 0)], Q, error=ReadError)
    with pytest.raises(TypeError, match="unknown message keys"):
        stored_pool(["a"], [_vec(1, 0, 0)], Q, error=ReadError, messages={"nan": "x"})


def test_a_stored_pool_chooses_then_keeps_the_unscored_after_the_picks():
    from mempursuit_core.adapter import ReadOptions, StoredPool

    items = ["a", "b", "c", "d", "e"]
    stored = [_vec(0, 1, 0), None, _vec(1, 0, 0), None, [0.9, 0.1, 0.0]]
    pool = StoredPool(items, *stored_pool(items, stored, Q))
    native = get_selector("native")
    assert pool.choose(native, 2) == ["a", "c"]
    assert pool.choose(native, 5) == ["a", "c", "e", "b", "d"]  # never dropped
    assert pool.choose(native, 2, offset=2) == ["e", "b"]
    assert pool.choose(get_selector("mempursuit"), 1) == ["c"]  # the policy's pick
    empty = StoredPool(["x"], *stored_pool(["x"], [None], Q, messages={"none": None}))
    assert empty.choose(native, 3) == ["x"]
    # the K / P rule every adapter applies
    assert ReadOptions(k=5).sizes(10) == (5, 200) and ReadOptions().sizes(10, 3) == (10, 200)
    assert ReadOptions(k=50, pool=20).sizes(100, 10) == (50, 60)
