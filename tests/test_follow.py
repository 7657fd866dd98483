"""The second read (mempursuit_core.follow, centered-fusion's ``follow``): the titles the first
picks and the question name that the pool lacks are fetched from the store by title."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from mempursuit_core import get_selector
from mempursuit_core.follow import Fetched, TitleLookup, extended_signals
from mempursuit_core.readpath import CandidatePool

D = 16


def _store(rng):
    """A store of titled passages: the song names its performer, whose passage is far from
    the question (never in a small pool)."""
    rows = [("I Can't See Myself Leaving You",
             "I Can't See Myself Leaving You is a song recorded by Aretha Franklin."),
            ("Aretha Franklin", "Aretha Franklin was a singer who died in Detroit."),
            ("Leaving You", "Leaving You is a song by a band.")]
    rows += [(f"Filler {i}", f"Filler passage {i} about songs.") for i in range(20)]
    q = rng.normal(size=D)
    q /= np.linalg.norm(q)
    V = rng.normal(size=(len(rows), D))
    V[0] = q + 0.3 * rng.normal(size=D)      # the song: near the question
    V[1] = -q + 0.5 * rng.normal(size=D)     # the performer: far from it
    V[2] = q + 0.6 * rng.normal(size=D)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    return rows, V, q


def _pool(rows, V, q, P, lookup=None, calls=None):
    """The P nearest passages (never the performer's) with texts, titles and the lookup."""
    order = [i for i in np.argsort(-(V @ q)) if i != 1][:P]
    text = "Where did the performer of song I Can't See Myself Leaving You die?"
    signals = {"texts": [rows[i][1] for i in order], "titles": [rows[i][0] for i in order],
               "query_text": text}
    if lookup is not None:
        signals["title_lookup"] = lookup
    return order, signals


def _lookup(rows, V, calls=None, fail=None):
    by_title = {t: i for i, (t, _) in enumerate(rows)}

    def fetch(titles, limit):
        if calls is not None:
            calls.append(list(titles))
        if fail is not None:
            raise fail
        at = [by_title[t] for t in titles if t in by_title][:limit]
        return Fetched([rows[i][0] for i in at], V[at],
                       {"texts": [rows[i][1] for i in at], "titles": [rows[i][0] for i in at]})
    return TitleLookup(lambda: [t for t, _ in rows], fetch, framework="the test store")


def test_the_second_read_brings_in_what_the_first_pick_names(rng):
    rows, V, q = _store(rng)
    calls = []
    order, signals = _pool(rows, V, q, 8, _lookup(rows, V, calls))
    got = get_selector("centered-fusion").select(q, V[order], 3, signals=signals)
    assert got.extra is not None and got.extra.items == ["Aretha Franklin"]
    assert len(order) in got.order[:2]  # the fetched performer, numbered after the pool
    assert calls == [["Aretha Franklin"]]  # one round trip, only what the pool lacks
    assert got.info["reorder"]["follow"]["fetched"] == 1
    without = get_selector("centered-fusion", follow=0).select(q, V[order], 3, signals=signals)
    assert without.extra is None and without.order.max() < len(order)


def test_candidate_pool_returns_the_fetched_items(rng):
    rows, V, q = _store(rng)
    order, signals = _pool(rows, V, q, 8, _lookup(rows, V))
    pool = CandidatePool([rows[i][0] for i in order], q, V[order],
                         native_scores=V[order] @ q, signals=signals)
    chosen = pool.select(get_selector("centered-fusion"), 2)
    assert "Aretha Franklin" in chosen.items and len(chosen.pool) == 9
    assert chosen.pool.native_scores[-1] < pool.native_scores.min()


def test_no_lookup_no_titles_or_follow_0_read_nothing(rng):
    rows, V, q = _store(rng)
    order, signals = _pool(rows, V, q, 8)
    base = get_selector("centered-fusion", follow=0).select(q, V[order], 5, signals=signals)
    got = get_selector("centered-fusion").select(q, V[order], 5, signals=signals)
    assert got.extra is None and np.array_equal(got.order, base.order)
    calls = []
    untitled = {k: v for k, v in _pool(rows, V, q, 8, _lookup(rows, V, calls))[1].items()
                if k != "titles"}
    assert get_selector("centered-fusion").select(q, V[order], 5, signals=untitled).extra is None
    assert calls == []


@pytest.mark.parametrize("fail", [RuntimeError("store down"), None])
def test_a_failing_lookup_gives_the_first_read_and_one_warning(rng, fail):
    rows, V, q = _store(rng)
    lookup = _lookup(rows, V, fail=fail)
    if fail is None:  # a fetch whose vectors do not fit the pool
        lookup = lookup.with_fetch(lambda t, n: Fetched(["x"], np.ones((1, D + 1)),
                                                        {"texts": ["x"], "titles": ["x"]}))
    order, signals = _pool(rows, V, q, 8, lookup)
    base = get_selector("centered-fusion", follow=0).select(q, V[order], 3, signals=signals)
    sel = get_selector("centered-fusion")
    with pytest.warns(RuntimeWarning, match="second read through the test store failed"):
        got = sel.select(q, V[order], 3, signals=signals)
    assert got.extra is None and np.array_equal(got.order, base.order)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per store, not once per read
        sel.select(q, V[order], 3, signals=signals)


def test_the_second_read_keeps_orders_nested(rng):
    rows, V, q = _store(rng)
    order, signals = _pool(rows, V, q, 10, _lookup(rows, V))
    sel = get_selector("centered-fusion")
    assert sel.nested
    small = sel.select(q, V[order], 2, signals=signals)
    large = sel.select(q, V[order], 6, signals=signals)
    assert np.array_equal(small.order, large.order[:2])


def test_named_takes_each_text_in_turn_and_skips_what_the_pool_has():
    titles = ["Kiss and Tell (1945 film)", "Kiss and Tell (1953 film)", "Shirley Temple",
              "Detroit", "The Who"]
    lookup = TitleLookup(lambda: titles + [None, "Detroit"], lambda t, n: None)
    texts = ["Kiss and Tell starred Shirley Temple.", "She lived in Detroit."]
    # within a text the longer phrase first; each text's first name before any text's second
    assert lookup.named(texts) == ["Shirley Temple", "Detroit", "Kiss and Tell (1945 film)",
                                   "Kiss and Tell (1953 film)"]
    assert lookup.named(texts, exclude=["Detroit"], limit=2) == [
        "Shirley Temple", "Kiss and Tell (1945 film)"]
    assert lookup.named(["The Who played."]) == []  # stop words only name nothing


def test_the_title_index_is_rebuilt_when_the_store_changes():
    titles = ["Alpha Centauri"]
    lookup = TitleLookup(lambda: list(titles), lambda t, n: None, version=lambda: len(titles))
    assert lookup.named(["Beta Pictoris and Alpha Centauri"]) == ["Alpha Centauri"]
    titles.append("Beta Pictoris")
    assert lookup.named(["Beta Pictoris and Alpha Centauri"]) == ["Alpha Centauri",
                                                                  "Beta Pictoris"]
    other = lookup.with_fetch(lambda t, n: None)
    assert other.index() is lookup.index()  # one index for every read of the store


def test_extended_signals_pad_what_the_store_did_not_fetch():
    signals = {"texts": ["a", "b"], "lexical": np.array([2.0, 1.0]), "query_text": "q",
               "sparse": np.ones((2, 3)), "speakers": ["x", "y"]}
    out = extended_signals(signals, 2, Fetched(["c"], np.ones((1, 2)), {"texts": ["c"]}))
    assert out["texts"] == ["a", "b", "c"] and out["speakers"] == ["x", "y", None]
    assert out["lexical"].tolist() == [2.0, 1.0, 1.0] and out["query_text"] == "q"
    assert "sparse" not in out


def test_a_fetched_row_that_cannot_be_normalised_gives_the_first_read(rng):
    rows, V, q = _store(rng)
    bad = _lookup(rows, V).with_fetch(lambda t, n: Fetched(["x"], np.zeros((1, D)),
                                                          {"texts": ["x"], "titles": ["x"]}))
    order, signals = _pool(rows, V, q, 8, bad)
    base = get_selector("centered-fusion", follow=0).select(q, V[order], 3, signals=signals)
    with pytest.warns(RuntimeWarning, match="zero norm"):
        got = get_selector("centered-fusion").select(q, V[order], 3, signals=signals)
    assert got.extra is None and np.array_equal(got.order, base.order)
