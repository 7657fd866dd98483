"""The harness measures what ships: helpers for the per-framework parity tests.

A framework row of ``mempursuit eval`` must read the pool exactly as the adapter a user installs
does. Each framework's integration module builds the harness's store on the project's fixture,
then reads the same question through the adapter (on the same framework store) with a
:class:`Recorder` policy, and checks with :func:`assert_parity` that both handed the policy the
same signals and ended with the same order.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from mempursuit_core import DEFAULT_POLICY, Selector, get_selector

#: Signals compared (every one an adapter may hand over; a key absent on one side fails).
COMPARED = ("texts", "query_text", "timestamps", "session_ids", "speakers", "positions",
            "lexical", "dense", "sparse", "query_sparse", "titles")


def materialise(signals: Mapping[str, Any] | None) -> dict[str, Any]:
    """The compared signals present in ``signals``, as plain lists / float arrays."""
    out: dict[str, Any] = {}
    for key in COMPARED:
        if signals is None or key not in signals:
            continue
        value = signals[key]
        if key in ("sparse", "query_sparse", "lexical", "dense", "positions"):
            value = np.asarray(value.toarray() if hasattr(value, "toarray") else value,
                               dtype=np.float64)
        elif not isinstance(value, str):
            value = list(value)
        out[key] = value
    return out


class Recorder(Selector):
    """A read policy (default :data:`DEFAULT_POLICY`) that records what it was handed."""

    name = "recorder"

    def __init__(self, policy: str = DEFAULT_POLICY):
        self.inner = get_selector(policy)
        self.calls: list[dict[str, Any]] = []

    def select(self, query, candidates, k, *, native_scores=None, signals=None):
        self.calls.append({"signals": materialise(signals), "P": len(candidates)})
        return self.inner.select(query, candidates, k, native_scores=native_scores,
                                 signals=signals)


def harness_order(pool, k: int, policy: str = DEFAULT_POLICY) -> tuple[list[str], dict]:
    """The uids the policy keeps from a harness :class:`~mempursuit_eval.base.Pool`, and the
    signals it was handed."""
    rec = Recorder(policy)
    sel = rec.select(pool.query_vector, pool.vectors, k, native_scores=pool.native_scores,
                     signals=pool.signals)
    return [pool.items[i] for i in np.asarray(sel.order)[:k]], rec.calls[-1]["signals"]


def assert_parity(harness: Mapping[str, Any], adapter: Mapping[str, Any],
                  expected: set[str] | None = None) -> None:
    """Both sides handed over the same signals, with the same values (``expected``: the keys)."""
    assert set(harness) == set(adapter), (sorted(harness), sorted(adapter))
    if expected is not None:
        assert expected <= set(harness), (sorted(expected - set(harness)))
    for key, value in harness.items():
        other = adapter[key]
        if isinstance(value, np.ndarray):
            np.testing.assert_allclose(value, other, atol=1e-5, err_msg=key)
        else:
            assert value == other, key


def fixture_units(facts, speaker: str | None = "alice") -> list:
    """The two-user fixture as harness units: alice holds every fact, bob the first three; each
    unit in one of two sessions of its user (``speaker`` on every unit, None: no speaker)."""
    from mempursuit_eval.base import MemoryUnit

    extra = {} if speaker is None else {"speaker": speaker}
    return [MemoryUnit(uid=f"{g}/{i}", text=f, group=g, session_id=f"{g}/S{i % 2}", **extra)
            for g, group in (("alice", facts), ("bob", facts[:3])) for i, f in enumerate(group)]


def built_pool(backend, encoder, workdir, facts, question: str):
    """``backend`` built on :func:`fixture_units` (its progress counting every unit) and its
    pool of alice's question, checked: alice's units only, each with its fact as its text and
    its stored vector the encoder's. Returns ``(units, pool, texts)``."""
    units = fixture_units(facts)
    done = []
    backend.build(units, embedder=encoder, workdir=workdir, progress=done.append)
    assert sum(done) == len(units)
    pool = backend.pool("alice", question, 200)
    assert sorted(pool.items) == sorted(u.uid for u in units if u.group == "alice")
    texts = [facts[int(u.split("/")[1])] for u in pool.items]
    assert list(pool.signals["texts"]) == texts
    assert np.allclose(pool.vectors, encoder.encode(texts), atol=1e-5)
    return units, pool, texts
