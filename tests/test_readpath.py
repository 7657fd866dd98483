"""The shared read path every adapter uses: CandidatePool and read_or_native."""

import logging

import numpy as np
import pytest

from mempursuit_core import get_selector
from mempursuit_core.options import ReadOptions
from mempursuit_core.readpath import CandidatePool, aread_or_native, read_or_native
from mempursuit_core.selectors import NativeSelector
from mempursuit_core.signals import pool_signals


def _pool(P=6, d=8, seed=0):
    rng = np.random.default_rng(seed)
    V = rng.normal(size=(P, d))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    q = V[0] + V[3]
    q /= np.linalg.norm(q)
    items = [f"m{i}" for i in range(P)]
    return CandidatePool(items, q, V, native_scores=V @ q,
                         signals=pool_signals(items, "question"))


def test_native_keeps_the_framework_order():
    pool = _pool()
    chosen = pool.select(get_selector("native"), 4)
    assert chosen.items == ["m0", "m1", "m2", "m3"]
    assert chosen.order.tolist() == [0, 1, 2, 3]


def test_policy_items_follow_the_order():
    pool = _pool()
    chosen = pool.select(get_selector("mempursuit"), 3)
    assert chosen.items == [pool.items[i] for i in chosen.order]
    assert len(set(chosen.items)) == 3


def test_empty_pool_selects_nothing():
    pool = CandidatePool([], np.ones(4), np.empty((0, 4)))
    assert pool.select(get_selector("centered-fusion"), 5).items == []


@pytest.mark.parametrize("vectors, scores, match", [
    (np.ones((3, 5)), None, r"shape \(2, 4\)"),
    (np.ones((2, 4)), np.ones(3), r"native scores must have shape \(2,\)"),
])
def test_shapes_are_checked(vectors, scores, match):
    with pytest.raises(ValueError, match=match):
        CandidatePool(["a", "b"], np.ones(4), vectors, native_scores=scores)


def test_fallback_returns_native_and_warns_once(caplog):
    reasons = []

    def ours():
        raise KeyError("vector")

    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        out = read_or_native(ours, lambda: ["native"], strict=False, framework="Demo",
                             on_fallback=reasons.append)
    assert out == ["native"]
    assert reasons == ["KeyError: 'vector'"]
    assert len(caplog.records) == 1 and "Demo" in caplog.records[0].getMessage()


def test_strict_raises():
    with pytest.raises(KeyError):
        read_or_native(lambda: {}["x"], lambda: ["native"], strict=True, framework="Demo")


def test_success_does_not_call_native():
    def native():
        raise AssertionError("native ran")

    assert read_or_native(lambda: ["ours"], native, strict=False, framework="Demo") == ["ours"]


def test_with_signals_puts_values_over_the_adapters_and_stays_lazy():
    pool = _pool()
    reads = []
    more = pool.with_signals({"session_ids": list("aabbcc")},
                             producers={"speakers": lambda: reads.append(1) or list("xyxyxy")})
    assert more.signals["session_ids"] == list("aabbcc") and "session_ids" not in pool.signals
    assert more.signals["texts"] == pool.items  # the adapter's signals stay
    assert more.signals.computed() == ["session_ids", "texts"] and reads == []
    assert more.signals["speakers"] == list("xyxyxy") and reads == [1]
    replaced = more.with_signals({"texts": ["t"] * 6})
    assert replaced.signals["texts"] == ["t"] * 6 and more.signals["texts"] == pool.items
    plain = CandidatePool(["a"], np.ones(2), np.ones((1, 2)), signals={"texts": ["a"]})
    assert dict(plain.with_signals({"speakers": ["x"]}).signals) == {"texts": ["a"],
                                                                     "speakers": ["x"]}


def test_strict_error_is_the_adapters_own_type():
    class AdapterError(RuntimeError):
        pass

    with pytest.raises(AdapterError, match=r"KeyError: 'x' \(strict=True; strict=False returns "
                                           r"Demo's own result") as info:
        read_or_native(lambda: {}["x"], lambda: ["native"], strict=True, framework="Demo",
                       strict_error=AdapterError)
    assert isinstance(info.value.__cause__, KeyError)


def test_async_fallback_awaits_the_frameworks_async_read(caplog):
    import asyncio

    reasons, calls = [], []

    async def ours():
        raise KeyError("vector")

    async def native():
        calls.append("async")
        return ["native"]

    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        out = asyncio.run(aread_or_native(ours, native, strict=False, framework="Demo",
                                          on_fallback=reasons.append))
    assert out == ["native"] and calls == ["async"] and reasons == ["KeyError: 'vector'"]
    assert len(caplog.records) == 1 and "Demo" in caplog.records[0].getMessage()
    # a plain value as the native result works too; success never calls it
    assert asyncio.run(aread_or_native(ours, lambda: ["kept"], strict=False,
                                       framework="Demo")) == ["kept"]

    async def good():
        return ["ours"]

    assert asyncio.run(aread_or_native(good, native, strict=False, framework="Demo")) == ["ours"]
    assert calls == ["async"]
    with pytest.raises(KeyError):
        asyncio.run(aread_or_native(ours, native, strict=True, framework="Demo"))

    class AdapterError(RuntimeError):
        pass

    with pytest.raises(AdapterError, match="strict=True") as info:
        asyncio.run(aread_or_native(ours, native, strict=True, framework="Demo",
                                    strict_error=AdapterError))
    assert isinstance(info.value.__cause__, KeyError) and calls == ["async"]


def test_is_native_is_the_name_or_the_registered_selector_itself():
    class Shifted(NativeSelector):
        pass

    assert ReadOptions(policy="native").is_native
    assert ReadOptions(policy=NativeSelector()).is_native
    assert not ReadOptions().is_native and not ReadOptions(policy="mmr").is_native
    assert not ReadOptions(policy=Shifted()).is_native  # a subclass may change the order




def test_the_trace_of_a_read_is_built_in_the_read_path(caplog):
    """``read_or_native(..., trace=slot)``: the pool's own order, the policy's choice, where the
    vectors came from; a failed read: its reason and the framework's own result."""
    from mempursuit_core.adapter import ReadTrace, TraceSlot

    pool, slot = _pool(), TraceSlot()
    got = read_or_native(lambda: pool.select(get_selector("mempursuit"), 3).items,
                         lambda: pool.items[:3], strict=False, framework="Toy", trace=slot,
                         ids=lambda m: m.upper(), result_items=list)
    trace = slot.last
    assert isinstance(trace, ReadTrace) and trace.policy == "mempursuit" and trace.k == 3
    assert trace.native == ("M0", "M1", "M2", "M3", "M4", "M5")
    assert trace.final == tuple(m.upper() for m in got) and trace.fallback is None
    assert trace.vectors == {"store": 6} and trace.second_read is None
    assert "\n" not in repr(trace) and repr(trace).startswith("ReadTrace(policy='mempursuit', k=3")

    def broken():
        pool.select(get_selector("mempursuit"), 3)
        raise RuntimeError("lost the store")

    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        got = read_or_native(broken, lambda: pool.items[:2], strict=False, framework="Toy",
                             trace=slot)  # no ids: items by their place in the pool
    assert slot.last.fallback == "RuntimeError: lost the store" and slot.last.final == ()
    assert read_or_native(broken, lambda: pool.items[:2], strict=False, framework="Toy",
                          trace=slot, result_items=list) == ["m0", "m1"]
    assert slot.last.final == (0, 1) and slot.last.native == (0, 1, 2, 3, 4, 5)


def test_a_token_budget_is_the_longest_prefix_that_fits_and_never_exceeded():
    from mempursuit_core.tokens import token_counter

    rng = np.random.default_rng(3)
    words = "the cat sat on a mat while my sister painted the garden shed blue".split()
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(1, 40, size=30)]
    V = rng.normal(size=(30, 8))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    pool = CandidatePool(list(range(30)), V[0], V, native_scores=V @ V[0],
                         signals=pool_signals(texts, "question"))
    counts = token_counter().counts(texts)
    for policy in ("native", "centered-fusion", "mempursuit"):
        full = pool.select(ReadOptions(policy=policy).selector(), 20).items
        for budget in (1, 5, 30, 100, 250, 10_000):
            got = pool.select(ReadOptions(policy=policy, budget_tokens=budget).selector(),
                              20).items
            assert got == full[:len(got)]  # a prefix of the K-order (nested)
            assert sum(counts[i] for i in got) <= budget  # never exceeded
            if len(got) < len(full):  # the longest: the next one does not fit
                assert sum(counts[i] for i in full[:len(got) + 1]) > budget


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-5, ValueError), (2.5, TypeError),
                                        (True, TypeError), ("500", TypeError)])
def test_a_bad_token_budget_is_one_line(bad, error):
    with pytest.raises(error, match=r"^Toy: budget_tokens takes a whole number of tokens >= 1"):
        ReadOptions.build("Toy", budget_tokens=bad)
