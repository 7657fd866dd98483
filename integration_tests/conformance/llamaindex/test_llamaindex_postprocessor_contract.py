"""The LlamaIndex node-postprocessor contract, on :class:`MemPursuitPostprocessor`.

Modelled on llama-index-core's own postprocessor tests (``llama-index-core/tests/postprocessor/``:
``test_base.py``, ``test_llm_rerank.py``, ``test_metadata_replacement.py``): what every
``BaseNodePostprocessor`` owes the engines that call it, checked for the default policy and for
``policy="native"``, sync and async:

* an empty list in, an empty list out (with or without a query);
* ``query_str=`` is a ``QueryBundle(query_str)``; both at once is the base class's ValueError;
* no query at all: ``native`` keeps the first ``k``; the default policy, which needs the query,
  returns the first ``k`` with one warning (the documented fallback), and raises one clear
  ValueError under ``strict=True``;
* the nodes returned are the ``NodeWithScore`` objects given, scores untouched (``None``
  included), none repeated, none invented, the input list not mutated, ``k`` of them (all when
  fewer);
* ``apostprocess_nodes`` returns what ``postprocess_nodes`` returns.

Nodes carry vectors from the packaged MiniLM (int8 ONNX, offline), as a vector store's
retrieval hands them over; one case leaves them off and passes the embed model instead.
"""

from __future__ import annotations

import asyncio
import copy
import logging

import pytest

pytest.importorskip("llama_index.core", reason='needs pip install -e ".[llamaindex]"')

from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.bridge.pydantic import PrivateAttr  # noqa: E402
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode  # noqa: E402

from mempursuit_llamaindex import MemPursuitPostprocessor  # noqa: E402

TEXTS = [
    "Alice adopted a grey cat named Miso last spring.",
    "Miso the cat sleeps on the radiator every afternoon.",
    "Alice's cat Miso is afraid of the vacuum cleaner.",
    "Bob is training for the Berlin marathon in September.",
    "Carol booked a flat near the river in Lisbon for June.",
    "Dan keeps a vegetable garden with tomatoes and beans.",
    "Alice's grey cat is called Miso.",
    "Eve plays the cello in a community orchestra.",
]
QUERY = "What do we know about Alice's cat?"
POLICIES = ["default", "native"]


class MiniLM(BaseEmbedding):
    """The packaged all-MiniLM-L6-v2 (int8 ONNX, mempursuit_core.embed) as a LlamaIndex model."""

    _encoder = PrivateAttr()

    def __init__(self, **kwargs):
        super().__init__(model_name="all-MiniLM-L6-v2-int8", **kwargs)
        from mempursuit_core.embed import get_embedder

        self._encoder = get_embedder("minilm", threads=1)

    def _get_query_embedding(self, query):
        return self._get_text_embeddings([query])[0]

    async def _aget_query_embedding(self, query):
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text):
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts):
        return self._encoder.encode(list(texts)).tolist()


@pytest.fixture(scope="module")
def embed_model():
    return MiniLM()


@pytest.fixture(scope="module")
def retrieved(embed_model):
    """The nodes as a vector store returns them: by descending score, with their vectors;
    one score is None (LlamaIndex allows it)."""
    vectors = embed_model.get_text_embedding_batch(TEXTS)
    query = embed_model.get_query_embedding(QUERY)
    scores = [sum(a * b for a, b in zip(v, query)) for v in vectors]
    order = sorted(range(len(TEXTS)), key=lambda i: -scores[i])
    nodes = [NodeWithScore(node=TextNode(text=TEXTS[i], id_=f"n{i}", embedding=vectors[i]),
                           score=scores[i]) for i in order]
    nodes[-1].score = None
    return nodes, query


def make(policy, **kwargs):
    if policy == "native":
        return MemPursuitPostprocessor(policy="native", **kwargs)
    return MemPursuitPostprocessor(**kwargs)


def run(post, nodes, mode, **kwargs):
    if mode == "async":
        return asyncio.run(post.apostprocess_nodes(nodes, **kwargs))
    return post.postprocess_nodes(nodes, **kwargs)


def ids(nodes):
    return [n.node.node_id for n in nodes]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("query", [None, QUERY])
def test_empty_list(policy, mode, query, embed_model, caplog):
    post = make(policy, k=3, strict=True, embed_model=embed_model)
    with caplog.at_level(logging.WARNING):
        assert run(post, [], mode, query_str=query) == []
    assert not caplog.records


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("policy", POLICIES)
def test_query_str_and_query_bundle_together_is_the_base_class_error(policy, mode, retrieved):
    nodes, _ = retrieved
    with pytest.raises(ValueError, match="Cannot specify both query_str and query_bundle"):
        run(make(policy, k=3), nodes, mode, query_str=QUERY, query_bundle=QueryBundle(QUERY))


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("policy", POLICIES)
def test_query_str_is_a_query_bundle(policy, mode, retrieved, embed_model):
    nodes, query = retrieved
    post = make(policy, k=3, strict=True, embed_model=embed_model)
    by_str = run(post, nodes, mode, query_str=QUERY)
    assert ids(by_str) == ids(run(post, nodes, mode, query_bundle=QueryBundle(QUERY)))
    assert ids(by_str) == ids(run(post, nodes, mode, query_bundle=QueryBundle(
        QUERY, embedding=query)))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_no_query_native_keeps_the_first_k(mode, retrieved, caplog):
    nodes, _ = retrieved
    with caplog.at_level(logging.WARNING):
        kept = run(make("native", k=3, strict=True), nodes, mode)
    assert kept == nodes[:3]
    assert not caplog.records


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_no_query_default_policy_falls_back_with_one_warning(mode, retrieved, caplog):
    nodes, _ = retrieved
    with caplog.at_level(logging.WARNING):
        kept = run(make("default", k=3), nodes, mode)
    assert kept == nodes[:3]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "needs the query" in warnings[0].getMessage()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_no_query_default_policy_strict_raises_one_clear_error(mode, retrieved):
    nodes, _ = retrieved
    with pytest.raises(ValueError, match="needs the query") as info:
        run(make("default", k=3, strict=True), nodes, mode)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("k", [1, 3, len(TEXTS), 50])
def test_nodes_and_scores_are_kept(policy, mode, k, retrieved, embed_model):
    nodes, _ = retrieved
    given = list(nodes)
    before = copy.deepcopy([(n.node.node_id, n.score, n.node.text) for n in nodes])
    kept = run(make(policy, k=k, strict=True, embed_model=embed_model), given, mode,
               query_str=QUERY)
    assert len(kept) == min(k, len(nodes))
    assert len(set(map(id, kept))) == len(kept)  # none repeated
    assert all(any(n is m for m in nodes) for n in kept)  # the objects given, none new
    assert [(n.node.node_id, n.score, n.node.text) for n in nodes] == before  # untouched
    assert given == nodes  # the input list is not mutated
    if policy == "native":
        assert kept == nodes[:k]


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("with_vectors", [True, False])
def test_async_returns_what_sync_returns(policy, with_vectors, retrieved, embed_model):
    nodes, _ = retrieved
    if not with_vectors:  # nodes without vectors: the embed model embeds them
        nodes = [NodeWithScore(node=TextNode(text=n.node.text, id_=n.node.node_id), score=n.score)
                 for n in nodes]
    post = make(policy, k=4, strict=True, embed_model=embed_model)
    sync = post.postprocess_nodes(nodes, query_str=QUERY)
    assert ids(asyncio.run(post.apostprocess_nodes(nodes, query_str=QUERY))) == ids(sync)


def test_default_policy_reorders_this_pool(retrieved, embed_model):
    """The contract tests above are not vacuous: the default policy (``strict=True``, so it did
    read the pool) does not simply hand back the retrieval order on this pool."""
    nodes, _ = retrieved
    kept = make("default", k=len(nodes), strict=True, embed_model=embed_model).postprocess_nodes(
        nodes, query_str=QUERY)
    assert sorted(ids(kept)) == sorted(ids(nodes))
    assert ids(kept) != ids(nodes)
