"""The second read (mempursuit_core.follow, centered-fusion's ``follow``): the titles the first
picks and the question name that the pool lacks are fetched from the store by title, by the
read path's stage (the policy only asks)."""

from __future__ import annotations

import dataclasses
import threading
import time
import unicodedata
import warnings

import numpy as np
import pytest

from mempursuit_core import get_selector
from mempursuit_core.follow import (Fetched, ScopedTitleIndexes, TitleIndex, TitleLookup,
                                    extended_signals, follow_up, note_write, plain_match,
                                    write_version)
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


def _lookup(rows, V, calls=None, fail=None, **options):
    by_title = {t: i for i, (t, _) in enumerate(rows)}

    def fetch(titles, limit):
        if calls is not None:
            calls.append(list(titles))
        if fail is not None:
            raise fail
        at = [by_title[t] for t in titles if t in by_title][:limit]
        return Fetched([rows[i][0] for i in at], V[at],
                       {"texts": [rows[i][1] for i in at], "titles": [rows[i][0] for i in at]})
    options.setdefault("timeout", None)
    return TitleLookup(TitleIndex(lambda: [t for t, _ in rows], framework="the test store"),
                       fetch, **options)


def _read(sel, q, M, k, signals, items=None):
    """The read path's stages: the policy's choice, then the second read."""
    return follow_up(sel.select(q, M, k, signals=signals), q, M, k, signals=signals,
                     items=items)


def _fetching(rows, V, pick):
    """A fetch that returns ``pick(titles, limit)``'s rows of the store (any rows, any count)."""
    def fetch(titles, limit):
        at = list(pick(titles, limit))
        return Fetched([rows[i][0] for i in at], V[at],
                       {"texts": [rows[i][1] for i in at], "titles": [rows[i][0] for i in at]})
    return fetch


def test_the_second_read_brings_in_what_the_first_pick_names(rng):
    rows, V, q = _store(rng)
    calls = []
    order, signals = _pool(rows, V, q, 8, _lookup(rows, V, calls))
    sel = get_selector("centered-fusion")
    first = sel.select(q, V[order], 3, signals=signals)
    assert calls == [] and first.extra is None  # the policy asks; it never reads the store
    assert first.follow is not None and first.follow.limit == 2
    got = follow_up(first, q, V[order], 3, signals=signals)
    assert got.extra is not None and got.extra.items == ["Aretha Franklin"]
    assert len(order) in got.order[:2]  # the fetched performer, numbered after the pool
    assert calls == [["Aretha Franklin"]]  # one round trip, only what the pool lacks
    assert got.info["reorder"]["follow"]["fetched"] == 1 and got.follow is None
    without = _read(get_selector("centered-fusion", follow=0), q, V[order], 3, signals)
    assert without.extra is None and without.follow is None
    assert without.order.max() < len(order)


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
    base = _read(get_selector("centered-fusion", follow=0), q, V[order], 5, signals)
    got = _read(get_selector("centered-fusion"), q, V[order], 5, signals)
    assert got.extra is None and np.array_equal(got.order, base.order)
    calls = []
    untitled = {k: v for k, v in _pool(rows, V, q, 8, _lookup(rows, V, calls))[1].items()
                if k != "titles"}
    assert _read(get_selector("centered-fusion"), q, V[order], 5, untitled).extra is None
    assert calls == []


@pytest.mark.parametrize("fail", [RuntimeError("store down"), None])
def test_a_failing_lookup_gives_the_first_read_and_one_warning(rng, fail):
    rows, V, q = _store(rng)
    lookup = _lookup(rows, V, fail=fail)
    if fail is None:  # a fetch whose vectors do not fit the pool
        lookup = lookup.with_fetch(lambda t, n: Fetched(list(t), np.ones((len(t), D + 1)),
                                                        {"texts": list(t), "titles": list(t)}))
    order, signals = _pool(rows, V, q, 8, lookup)
    base = _read(get_selector("centered-fusion", follow=0), q, V[order], 3, signals)
    sel = get_selector("centered-fusion")
    with pytest.warns(RuntimeWarning, match="second read through the test store failed"):
        got = _read(sel, q, V[order], 3, signals)
    assert got.extra is None and np.array_equal(got.order, base.order)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per store, not once per read
        _read(sel, q, V[order], 3, signals)


def test_the_second_read_keeps_orders_nested(rng):
    rows, V, q = _store(rng)
    order, signals = _pool(rows, V, q, 10, _lookup(rows, V))
    sel = get_selector("centered-fusion")
    assert sel.nested
    small = _read(sel, q, V[order], 2, signals)
    large = _read(sel, q, V[order], 6, signals)
    assert np.array_equal(small.order, large.order[:2])


def test_named_takes_each_text_in_turn_and_skips_what_the_pool_has():
    titles = ["Kiss and Tell (1945 film)", "Kiss and Tell (1953 film)", "Shirley Temple",
              "Detroit", "The Who"]
    index = TitleIndex(lambda: titles + [None, "Detroit"])
    texts = ["Kiss and Tell starred Shirley Temple.", "She lived in Detroit."]
    # within a text the longer phrase first; each text's first name before any text's second
    assert index.named(texts) == ["Shirley Temple", "Detroit", "Kiss and Tell (1945 film)",
                                  "Kiss and Tell (1953 film)"]
    assert index.named(texts, exclude=["Detroit"], limit=2) == [
        "Shirley Temple", "Kiss and Tell (1945 film)"]
    assert index.named(["The Who played."]) == []  # stop words only name nothing


def test_the_title_index_is_rebuilt_when_the_store_changes():
    titles = ["Alpha Centauri"]
    index = TitleIndex(lambda: list(titles), version=lambda: len(titles))
    assert index.named(["Beta Pictoris and Alpha Centauri"]) == ["Alpha Centauri"]
    titles.append("Beta Pictoris")
    assert index.named(["Beta Pictoris and Alpha Centauri"]) == ["Alpha Centauri",
                                                                 "Beta Pictoris"]
    lookup = TitleLookup(index, lambda t, n: None)
    assert lookup.with_fetch(lambda t, n: None).index is index  # one index per store


class _Store:
    """A store whose writes go through its own methods (as a framework's do)."""

    def __init__(self, titles):
        self.docs = dict(enumerate(titles))

    def write(self, i, title):
        self.docs[i] = title

    def delete(self, i):
        del self.docs[i]

    def count(self):
        return len(self.docs)


def test_the_title_index_follows_a_delete_plus_an_add_and_a_title_changed_in_place():
    store = _Store(["Alpha Centauri", "Beta Pictoris"])
    writes = write_version(store, ("write", "delete"))
    index = TitleIndex(lambda: list(store.docs.values()),
                       version=lambda: (store.count(), writes()))
    text = ["Gamma Draconis, Delta Cephei and Beta Pictoris"]
    assert index.named(text) == ["Beta Pictoris"]
    store.delete(0)
    store.write(2, "Gamma Draconis")  # the same count as before
    assert index.named(text) == ["Gamma Draconis", "Beta Pictoris"]
    store.write(1, "Delta Cephei")  # a title changed in place
    assert index.named(text) == ["Gamma Draconis", "Delta Cephei"]
    builds = index.builds
    for _ in range(5):  # no change, no rebuild: a read costs the version, not the store
        index.named(text)
    assert index.builds == builds
    assert write_version(store, ("write", "delete"))() == writes()  # wrapped once, shared


def test_titles_and_texts_are_compared_in_one_normal_form(rng):
    composed, decomposed = "Café Noir", unicodedata.normalize("NFD", "Café Noir")
    assert composed != decomposed
    index = TitleIndex(lambda: [decomposed, "Other"])
    assert index.named([f"She sang at the {composed} in 1950."]) == [composed]
    assert index.named([f"She sang at the {decomposed}."], exclude=[composed]) == []


def _first_and_followed(rng, fetch, **options):
    rows, V, q = _store(rng)
    lookup = _lookup(rows, V, **options).with_fetch(fetch(rows, V))
    order, signals = _pool(rows, V, q, 8, lookup)
    items = [rows[i][0] for i in order]
    base = _read(get_selector("centered-fusion", follow=0), q, V[order], 3, signals)
    got = _read(get_selector("centered-fusion"), q, V[order], 3, signals, items)
    return rows, order, items, base, got


def test_fetched_candidates_the_pool_has_or_repeats_or_were_not_asked_for_are_dropped(rng):
    def fetch(rows, V):
        # the pool's song twice, the performer twice, a title nobody asked for, more than asked
        return _fetching(rows, V, lambda titles, limit: [0, 0, 1, 1, 2, 5, 6, 1])
    rows, order, items, base, got = _first_and_followed(rng, fetch)
    assert got.extra.items == ["Aretha Franklin"]  # asked for, new, once
    picked = [(items + got.extra.items)[i] for i in got.order]
    assert len(picked) == len(set(picked)) == 3


def test_a_store_that_returns_more_than_asked_is_cut_to_the_limit(rng):
    def fetch(rows, V):
        def more(titles, limit):
            at = _fetching(rows, V, lambda t, n: [1, 1, 1])(titles, limit)
            return Fetched(at.items * 12, np.tile(at.vectors, (12, 1)),
                           {"texts": at.signals["texts"] * 12,
                            "titles": at.signals["titles"] * 12})
        return more
    rows, order, items, base, got = _first_and_followed(rng, fetch)
    assert got.extra.items == ["Aretha Franklin"]


def test_signals_that_do_not_match_the_fetched_items_give_the_first_read(rng):
    def fetch(rows, V):
        return lambda titles, limit: Fetched(["Aretha Franklin"], V[[1]],
                                             {"texts": ["a", "b", "c"],
                                              "titles": ["Aretha Franklin"]})
    with pytest.warns(RuntimeWarning, match="'texts' has 3 entries for 1"):
        rows, order, items, base, got = _first_and_followed(rng, fetch)
    assert got.extra is None and np.array_equal(got.order, base.order)


def test_a_fetched_item_outside_the_scope_never_comes_back(rng):
    def fetch(rows, V):
        return _fetching(rows, V, lambda titles, limit: [1])
    rows, order, items, base, got = _first_and_followed(
        rng, fetch, in_scope=lambda item: item != "Aretha Franklin")
    assert got.extra is None and np.array_equal(got.order, base.order)


def test_a_slow_lookup_gives_the_first_read_within_its_deadline_and_one_warning(rng):
    release = threading.Event()

    def fetch(rows, V):
        inner = _fetching(rows, V, lambda titles, limit: [1])

        def slow(titles, limit):
            release.wait(10)  # a store that hangs until the test ends
            return inner(titles, limit)
        return slow
    try:
        with pytest.warns(RuntimeWarning, match="slower than its deadline"):
            rows, order, items, base, got = _first_and_followed(rng, fetch, timeout=0.05)
        assert got.extra is None and np.array_equal(got.order, base.order)
    finally:
        release.set()


def test_a_slow_title_index_gives_the_first_read_then_serves_later_reads(rng):
    rows, V, q = _store(rng)
    release = threading.Event()

    def titles():
        release.wait(10)
        return [t for t, _ in rows]
    fetch = _fetching(rows, V, lambda names, limit: [1])
    lookup = TitleLookup(TitleIndex(titles, framework="a slow store"), fetch, timeout=0.05)
    order, signals = _pool(rows, V, q, 8, lookup)
    sel = get_selector("centered-fusion")
    with pytest.warns(RuntimeWarning, match="reading the titles of a slow store"):
        first = _read(sel, q, V[order], 3, signals)
    assert first.extra is None
    release.set()
    for _ in range(200):  # the index is built in the background, then used
        if lookup.index.builds:
            break
        time.sleep(0.01)
    assert _read(sel, q, V[order], 3, signals).extra.items == ["Aretha Franklin"]


def test_extended_signals_pad_what_the_store_did_not_fetch():
    signals = {"texts": ["a", "b"], "lexical": np.array([2.0, 1.0]), "query_text": "q",
               "sparse": np.ones((2, 3)), "speakers": ["x", "y"]}
    out = extended_signals(signals, 2, Fetched(["c"], np.ones((1, 2)), {"texts": ["c"]}))
    assert out["texts"] == ["a", "b", "c"] and out["speakers"] == ["x", "y", None]
    assert out["lexical"].tolist() == [2.0, 1.0, 1.0] and out["query_text"] == "q"
    assert "sparse" not in out


def test_a_fetched_row_that_cannot_be_normalised_gives_the_first_read(rng):
    rows, V, q = _store(rng)
    bad = _lookup(rows, V).with_fetch(
        lambda t, n: Fetched(list(t), np.zeros((len(t), D)), {"texts": list(t), "titles": list(t)}))
    order, signals = _pool(rows, V, q, 8, bad)
    base = _read(get_selector("centered-fusion", follow=0), q, V[order], 3, signals)
    with pytest.warns(RuntimeWarning, match="zero norm"):
        got = _read(get_selector("centered-fusion"), q, V[order], 3, signals)
    assert got.extra is None and np.array_equal(got.order, base.order)


def test_no_policy_module_reads_a_store():
    import inspect

    import mempursuit_core.policies as policies
    import mempursuit_core.selectors as selectors

    for module in (policies, selectors):
        source = inspect.getsource(module)
        assert "title_lookup" not in source and ".fetch(" not in source, module.__name__


def test_a_read_that_returns_fewer_items_than_asked_without_a_reason_is_refused(rng):
    from mempursuit_core.selectors import Selection

    class Short:
        def select(self, q, M, k, native_scores=None, signals=None):
            return Selection(order=np.arange(min(k, len(M)) - 1))

    class Stopped(Short):
        def select(self, *args, **kwargs):
            return dataclasses.replace(super().select(*args, **kwargs), stopped="converged")

    rows, V, q = _store(rng)
    pool = CandidatePool(list(range(6)), q, V[:6])
    with pytest.raises(ValueError, match="returned 2 of the 3 items"):
        pool.select(Short(), 3)
    assert len(pool.select(Stopped(), 3).items) == 2  # a stop the policy states is kept


# -- the helpers every adapter with a second read shares ----------------------------------------

class _ScopedStore:
    def __init__(self):
        self.rows = {"u1": ["Alpha"], "u2": ["Beta"]}

    def add(self, scope, title):
        self.rows[scope].append(title)


def test_scoped_title_indexes_one_per_scope_following_writes_and_bounded():
    store = _ScopedStore()
    indexes = ScopedTitleIndexes(store, ["add"], size=2)
    one = indexes.index("u1", lambda: store.rows["u1"])
    assert indexes.index("u1", lambda: []) is one  # the same scope: the same index
    assert one.named(["Alpha and Gamma"]) == ["Alpha"]
    store.add("u1", "Gamma")  # a write through the store's own method: read again
    assert one.named(["Alpha and Gamma"]) == ["Alpha", "Gamma"]
    store.rows["u1"].append("Delta")  # a write it cannot see, until note_write says so
    assert one.named(["Delta"]) == []
    note_write(store)
    assert one.named(["Delta"]) == ["Delta"]
    indexes.index({"user": "u2"}, lambda: store.rows["u2"])  # an unhashable scope
    indexes.index("u3", lambda: [])
    assert len(indexes) == 2 and indexes.index("u1", lambda: []) is not one  # the oldest went


def test_plain_match_checks_plain_conditions_only():
    inside = plain_match({"user_id": "A", "$and": [{"x": 1}], "OR": [{"x": 2}],
                          "score": {"$gt": 1}})
    assert inside({"user_id": "A", "score": 0}) and not inside({"user_id": "B"})
    assert not inside({}) and not inside(None)
    assert plain_match(None) is None and plain_match({"score": {"gte": 2}}) is None


def test_fetched_of_keeps_the_per_candidate_signals():
    from mempursuit_core.signals import pool_signals

    got = Fetched.of(["a", "b"], np.ones((2, 3)), pool_signals(["x", "y"], "q", titles=["A", "B"],
                                                               title_lookup=object()))
    assert set(got.signals) == {"texts", "titles"} and got.vectors.shape == (2, 3)
    assert len(Fetched.of([], [], {})) == 0
