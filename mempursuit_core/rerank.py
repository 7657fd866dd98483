"""The shared read of rerank-style adapters: documents already retrieved in, ``K`` out.

A rerank-style adapter (LlamaIndex's node postprocessor, LangChain's document compressor, a
Haystack ranker) is handed the framework's retrieved items in native order; it reads their
vectors (the stored ones where it can), and the policy keeps ``K`` of them. What is the same
for every such adapter lives here, free of any framework:

* :class:`Reranker`: the read options, the budget rule (``K`` above the pool: one warning), the
  pass-through rule (``policy="native"`` or nothing to reorder: the first ``K`` items as
  given) and the fallback (any failure: the first ``K`` items and one warning);
* :func:`metadata_signals`: item metadata -> signals, through a ``{signal: metadata key}``
  table (:data:`DEFAULT_METADATA_KEYS`), plus the document signals ``titles`` and
  ``session_ids`` from a title / file name / source (:func:`document_title`,
  :func:`document_source`);
* :func:`native_scores`: the framework's scores, or None when any is missing.

An adapter keeps only the translation: its items' texts, metadata, scores and vectors::

    reranker = Reranker(ReadOptions.build("MyRanker", k=k, policy=policy), framework="Haystack")

    def run(documents, query):
        def pool(items):
            return CandidatePool(items, embed(query), [d.embedding for d in items],
                                 native_scores=native_scores([d.score for d in items]),
                                 signals=pool_signals([d.content for d in items], query,
                                                      **metadata_signals([d.meta for d in items])))
        return reranker.rerank(documents, pool)
"""

from __future__ import annotations

import logging
import math
import posixpath
from typing import Any, Awaitable, Callable, Mapping, Sequence, TypeVar

import numpy as np

from .options import ReadOptions, blank_query
from .readpath import CandidatePool, aread_or_native, read_or_native
from .trace import ReadTrace, TraceSlot, note_final, note_policy, note_pool

__all__ = ["DEFAULT_METADATA_KEYS", "PATH_KEYS", "SOURCE_KEYS", "TITLE_KEYS", "Reranker", "document_source",
           "document_title", "metadata_signals", "native_scores", "warn_short_budget"]

T = TypeVar("T")

logger = logging.getLogger("mempursuit")

#: signal -> the metadata key it is read from (memories written by the framework's own memory)
DEFAULT_METADATA_KEYS: dict[str, str] = {"timestamps": "timestamp", "speakers": "speaker",
                                         "session_ids": "session_id"}
#: metadata keys naming a document, first found wins: a title as it is, a path or URL by its stem
TITLE_KEYS: tuple[str, ...] = ("title", "file_name", "filename", "file_path", "source", "url")
#: metadata keys naming the source document of a chunk, first found wins
SOURCE_KEYS: tuple[str, ...] = ("file_path", "source", "file_name", "filename", "url", "title")


#: the keys of :data:`TITLE_KEYS` that hold a path or URL (a title is their file's stem)
PATH_KEYS = frozenset(TITLE_KEYS) - {"title"}


def document_title(metadata: Mapping[str, Any] | None,
                   keys: Sequence[str] = TITLE_KEYS) -> str | None:
    """A document's title: ``metadata["title"]``, else the stem of its file name / path / URL
    (the one derivation every adapter uses).

    Parameters
    ----------
    metadata : mapping or None
    keys : sequence of str
        The keys read, first found wins (default :data:`TITLE_KEYS`); those of
        :data:`PATH_KEYS` give their file's stem, any other its value as it is.

    Returns
    -------
    str or None
        ``"handbook"`` for ``{"file_path": "/data/handbook.md"}``; None when no key holds a
        non-empty string.
    """
    for key in keys:
        value = (metadata or {}).get(key) if isinstance(metadata, Mapping) else None
        if isinstance(value, str) and value.strip():
            if key not in PATH_KEYS:
                return value.strip()
            name = posixpath.basename(value.replace("\\", "/").rstrip("/").split("?")[0])
            stem = name.rsplit(".", 1)[0] if "." in name.strip(".") else name
            return stem or value
    return None


def document_source(metadata: Mapping[str, Any] | None) -> str | None:
    """The source document a chunk comes from (its path, URL, file name or title), or None."""
    for key in SOURCE_KEYS:
        value = (metadata or {}).get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def metadata_signals(metadatas: Sequence[Mapping[str, Any] | None],
                     metadata_keys: Mapping[str, str] | None = None, *,
                     sources: Sequence[Any] | None = None) -> dict[str, list]:
    """Signals read from the items' metadata (each a list of length P, None where absent).

    Parameters
    ----------
    metadatas : sequence of mapping, length P
        Each item's metadata (None counts as empty).
    metadata_keys : mapping, optional
        ``{signal: metadata key}``, default :data:`DEFAULT_METADATA_KEYS`.
    sources : sequence, length P, optional
        Each item's source document where the framework knows it outside the metadata (a
        LlamaIndex node's ``ref_doc_id``); used after the metadata's :data:`SOURCE_KEYS`.

    Returns
    -------
    dict of str to list
        A signal is left out when no item has it. The table's signals, plus the document
        signals: ``titles`` (:func:`document_title`: str or None per item) and, where the
        table's ``session_ids`` key is absent from every item, ``session_ids``: one session per
        source document (:func:`document_source`, else ``sources``).
    """
    metadatas = [m or {} for m in metadatas]
    keys = DEFAULT_METADATA_KEYS if metadata_keys is None else metadata_keys
    out: dict[str, list] = {}
    for signal, key in keys.items():
        values = [m.get(key) for m in metadatas]
        if any(v is not None for v in values):
            out[signal] = values
    if "titles" not in out:
        titles = [document_title(m) for m in metadatas]
        if any(t is not None for t in titles):
            out["titles"] = titles
    if "session_ids" not in out:
        given = list(sources) if sources is not None else [None] * len(metadatas)
        if len(given) != len(metadatas):
            raise ValueError(f"sources has {len(given)} entries for {len(metadatas)} items")
        found = [document_source(m) or s for m, s in zip(metadatas, given)]
        if any(s is not None for s in found):
            out["session_ids"] = found
    return out


def native_scores(scores: Sequence[Any]) -> np.ndarray | None:
    """The framework's scores as a (P,) float array, or None when any is None or NaN."""
    scores = list(scores)
    if any(s is None or (isinstance(s, float) and math.isnan(s)) for s in scores):
        return None
    return np.asarray(scores, dtype=np.float64)


class Reranker:
    """What a rerank-style adapter does with the items it is given, framework-free.

    Parameters
    ----------
    options : ReadOptions
        The adapter's checked options (``ReadOptions.build``).
    framework : str
        Named in the warnings (``"LlamaIndex"``).
    where : str, optional
        The adapter's class name, named in the budget warning.
    log : Logger, optional
        Where the fallback warning goes (default the ``mempursuit`` logger).
    ids : callable, optional
        ``ids(item)``: an item's short id in :attr:`last_trace` (a document or node id;
        default its position in the given items).
    trace : TraceSlot, optional
        Where the reads' traces go (default a slot of its own; an adapter that builds a new
        reranker per read passes its own slot).

    Notes
    -----
    The budget rule every adapter shares: the candidates are the first ``max(pool, K)`` items,
    the result at most ``K`` of them; a ``K`` above ``pool`` is logged once per reranker (the
    read returns what the retriever gave, never more: raise the retriever's top-k).
    """

    def __init__(self, options: ReadOptions, *, framework: str, where: str = "",
                 log: logging.Logger | None = None, ids: Callable[[Any], Any] | None = None,
                 trace: TraceSlot | None = None):
        self.options = options
        self.ids = ids
        self.trace = trace if trace is not None else TraceSlot()
        self.selector = options.selector()
        self.framework = framework
        self.where = where or framework
        self.log = log
        self._warned_budget = False

    @property
    def last_trace(self) -> ReadTrace | None:
        """The :class:`~mempursuit_core.trace.ReadTrace` of the last read on this thread."""
        return self.trace.last

    @property
    def is_native(self) -> bool:
        """``policy="native"``: every read passes the items through."""
        return self.options.is_native

    def sizes(self, available: int) -> tuple[int, int]:
        """``(K, P)`` for ``available`` items: ``K`` at most ``available`` (all of them when
        ``k`` is None), ``P = max(pool, K)``; warns once when ``k`` is above ``pool``."""
        warn_short_budget(self, self.options, self.where)
        return self.options.sizes(max(available, 1))

    def candidates(self, items: Sequence[T]) -> list[T]:
        """The first ``P`` items: the pool the policy chooses from."""
        return list(items)[: self.sizes(len(items))[1]]

    def passthrough(self, items: Sequence[T]) -> list[T] | None:
        """The first ``K`` items as given when nothing is to be reordered (``policy="native"``
        without a token budget, or no items), else None."""
        if (self.is_native and self.options.budget_tokens is None) or not items:
            kept = list(items)[: self.sizes(len(items))[0]]
            note_policy("native" if self.is_native else self.selector, len(kept))
            note_pool(items)
            note_final(kept)
            return kept
        return None

    def rerank(self, items: Sequence[T], build: Callable[[list[T]], CandidatePool[T]], *,
               strict: bool | None = None, query: Any = None) -> list[T]:
        """The policy's ``K`` of ``items``; any failure returns the first ``K`` and one warning,
        and so does an empty or blank ``query`` (:func:`~mempursuit_core.options.blank_query`).

        Parameters
        ----------
        items : sequence, length n
            The retrieved items, native order.
        build : callable
            ``build(candidates) -> CandidatePool`` over the first ``P`` items.
        strict : bool, optional
            Default the options' ``strict``: raise instead of falling back.
        query : str, optional
            The read's query text, checked for blankness (not checked when not given).

        Returns
        -------
        list, length <= K
        """
        items = list(items)
        k = self.sizes(len(items))[0]
        if not self.is_native and blank_query(query, self.where, log=self.log):
            return items[:k]

        def ours():
            kept = self.passthrough(items)
            return kept if kept is not None else build(self.candidates(items)).select(
                self.selector, k).items

        return read_or_native(ours, lambda: items[:k], framework=self.framework, log=self.log,
                              strict=self.options.strict if strict is None else strict,
                              trace=self.trace, ids=self.ids, result_items=list)

    async def arerank(self, items: Sequence[T],
                      build: Callable[[list[T]], Awaitable[CandidatePool[T]]], *,
                      strict: bool | None = None, query: Any = None) -> list[T]:
        """:meth:`rerank` with an async ``build``."""
        items = list(items)
        k = self.sizes(len(items))[0]
        if not self.is_native and blank_query(query, self.where, log=self.log):
            return items[:k]

        async def ours():
            kept = self.passthrough(items)
            if kept is not None:
                return kept
            return (await build(self.candidates(items))).select(self.selector, k).items

        return await aread_or_native(ours, lambda: items[:k], framework=self.framework,
                                     log=self.log,
                                     strict=self.options.strict if strict is None else strict,
                                     trace=self.trace, ids=self.ids, result_items=list)


def warn_short_budget(owner: Any, options: ReadOptions, where: str) -> None:
    """Log once per ``owner`` that ``k`` is above ``pool`` (the pool read grows to ``K``)."""
    if options.k is None or options.k <= options.pool or getattr(owner, "_warned_budget", False):
        return
    try:
        owner._warned_budget = True
    except Exception:  # an owner that takes no new attribute: warn every time rather than never
        pass
    logger.warning("mempursuit: %s k=%d is above pool=%d: the candidates are the first %d "
                   "retrieved (never more than the retriever returns); set pool >= k, and the "
                   "retriever's top-k to the pool", where, options.k, options.pool, options.k)
