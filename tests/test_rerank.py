"""mempursuit_core.rerank without any framework: the metadata -> signals table, document titles
and sessions, native scores, the budget / pass-through rule and the fallback."""

import logging

import numpy as np
import pytest

from mempursuit_core.adapter import (CandidatePool, ReadOptions, Reranker, document_title,
                                     metadata_signals, native_scores, pool_signals)


def test_document_titles_and_sessions():
    metas = [{"file_path": "/docs/hr/Leave Policy.md"}, {"title": " Onboarding "},
             {"source": "https://example.com/a/faq.html?x=1"}, {"speaker": "bob"}, None]
    signals = metadata_signals(metas)
    assert signals["titles"] == ["Leave Policy", "Onboarding", "faq", None, None]
    assert signals["session_ids"] == ["/docs/hr/Leave Policy.md", " Onboarding ",
                                      "https://example.com/a/faq.html?x=1", None, None]
    assert signals["speakers"] == [None, None, None, "bob", None]
    assert document_title({"file_name": "README"}) == "README"
    # a session id in the metadata wins over the document's source
    assert metadata_signals([{"session_id": "S1", "source": "a.md"}])["session_ids"] == ["S1"]
    # sources known outside the metadata (LlamaIndex's ref_doc_id)
    assert metadata_signals([{}, {}], sources=["d1", None])["session_ids"] == ["d1", None]
    assert metadata_signals([{}, {}]) == {}
    with pytest.raises(ValueError, match="sources"):
        metadata_signals([{}], sources=[])


def test_native_scores_none_when_any_is_missing():
    assert native_scores([0.5, 0.2]).tolist() == [0.5, 0.2]
    assert native_scores([0.5, None]) is None and native_scores([float("nan")]) is None


def _pool(items):
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(items), 8)).astype(np.float32)
    return CandidatePool(items, vectors[0], vectors, signals=pool_signals(items, "q"))


def test_budget_passthrough_and_fallback(caplog):
    items = [f"doc {i}" for i in range(6)]
    native = Reranker(ReadOptions.build("T", k=2, policy="native"), framework="F")
    assert native.rerank(items, lambda c: 1 / 0) == items[:2]  # never builds a pool
    ours = Reranker(ReadOptions.build("T", k=3), framework="F")
    got = ours.rerank(items, _pool)
    assert len(got) == 3 and set(got) <= set(items)
    assert ours.rerank([], _pool) == []
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        assert ours.rerank(items, lambda c: 1 / 0) == items[:3]
    assert sum("could not reorder this F read" in r.getMessage() for r in caplog.records) == 1
    with pytest.raises(ZeroDivisionError):
        ours.rerank(items, lambda c: 1 / 0, strict=True)
    caplog.clear()
    above = Reranker(ReadOptions.build("T", k=5, pool=2), framework="F", where="MyRanker")
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        assert above.candidates(items) == items[:5]
        assert len(above.rerank(items[:4], _pool)) == 4
    assert sum("MyRanker k=5 is above pool=2" in r.getMessage() for r in caplog.records) == 1


def test_async_rerank():
    import asyncio

    items = [f"doc {i}" for i in range(6)]
    ours = Reranker(ReadOptions.build("T", k=2), framework="F")

    async def build(c):
        return _pool(c)

    assert asyncio.run(ours.arerank(items, build)) == ours.rerank(items, _pool)


def test_a_blank_query_is_the_items_as_given_with_one_warning(caplog):
    """Issue 64: an empty or blank query has nothing to choose by: the first K as retrieved
    (strict or not), one warning naming the adapter and the fix; ``policy="native"`` and a
    query not given say nothing."""
    import asyncio

    items = [f"doc {i}" for i in range(6)]

    async def build(c):
        return 1 / 0

    for strict in (False, True):
        ours = Reranker(ReadOptions.build("T", k=3, strict=strict), framework="F",
                        where="MyRanker")
        for blank in ("", " \n\t"):
            for read in (lambda: ours.rerank(items, lambda c: 1 / 0, query=blank),
                         lambda: asyncio.run(ours.arerank(items, build, query=blank))):
                caplog.clear()
                with caplog.at_level(logging.WARNING, logger="mempursuit"):
                    assert read() == items[:3]
                (record,) = caplog.records
                assert record.getMessage().startswith("mempursuit: MyRanker: the query is "
                                                      + ("empty" if not blank else "blank"))
                assert record.getMessage().endswith("pass the question's text")
    caplog.clear()
    native = Reranker(ReadOptions.build("T", k=2, policy="native"), framework="F")
    with caplog.at_level(logging.WARNING, logger="mempursuit"):
        assert native.rerank(items, lambda c: 1 / 0, query="") == items[:2]
        assert len(Reranker(ReadOptions.build("T", k=2), framework="F").rerank(
            items, _pool, query="a question")) == 2
    assert not caplog.records
