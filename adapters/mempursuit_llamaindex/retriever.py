"""MemPursuit as a LlamaIndex retriever, for apps that call a retriever rather than a query
engine (LlamaIndex retrievers do not run ``node_postprocessors``)::

    retriever = MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=10)
    nodes = retriever.retrieve("...")          # was index.as_retriever(similarity_top_k=10)

It runs the wrapped retriever (its ``similarity_top_k`` is the pool), then a
:class:`~mempursuit_llamaindex.MemPursuitPostprocessor` on its nodes, with what the wrapped
retriever knows: its vector store (stored vectors read by id; FAISS rows through the index's
id map), its embed model (the one given to the index, not ``Settings``), and the query's
embedding the retriever computed; for the default policy's second read, the index's docstore
(the titles it can follow) and the retriever's own ``filters``.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Mapping, Optional

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from mempursuit_core.adapter import ReadOptions

from .postprocessor import MemPursuitPostprocessor

__all__ = ["MemPursuitRetriever"]

logger = logging.getLogger("mempursuit")


def _scope(retriever: BaseRetriever, index: Any) -> Dict[str, Any]:
    """The second read's scope, the wrapped retriever's own: its ``filters`` (the whole store
    when it has none); none at all (no second read) when it reads only some ``doc_ids`` or
    ``node_ids`` (other than all of the index's, which ``as_retriever`` passes), which a title
    lookup cannot say."""
    filters = getattr(retriever, "_filters", None)
    node_ids = getattr(retriever, "_node_ids", None)
    if node_ids and index is not None:
        every = getattr(index.index_struct, "nodes_dict", None)
        if every is not None and set(node_ids) >= set(every.values()):
            node_ids = None
    limited = getattr(retriever, "_doc_ids", None) or node_ids
    return {"filters": filters, "whole_store": filters is None and not limited}


class MemPursuitRetriever(BaseRetriever):
    """The ``k`` nodes a read policy picks from what ``retriever`` returns.

    Parameters
    ----------
    retriever : BaseRetriever
        The retriever that fetches the pool, e.g. ``index.as_retriever(similarity_top_k=200)``.
    k, pool, policy, policy_options, strict, metadata_keys
        As for :class:`MemPursuitPostprocessor`; ``policy="native"`` returns the wrapped
        retriever's first ``k`` nodes (``index.as_retriever(similarity_top_k=k)``), and so does
        any failure with ``strict=False`` (one warning). An empty query (no text, no
        embedding), which LlamaIndex's own retriever cannot read, returns no nodes with one
        warning (``strict=True``: a ``ValueError``).
    embed_model : BaseEmbedding, optional
        Default the wrapped retriever's (the index's) embed model.
    vector_store : BasePydanticVectorStore, optional
        Default the wrapped retriever's vector store.
    """

    def __init__(self, retriever: BaseRetriever, *, k: Optional[int] = None,
                 pool: Optional[int] = None, policy: Any = None,
                 policy_options: Optional[Mapping[str, Any]] = None,
                 strict: Optional[bool] = None, embed_model: Any = None,
                 vector_store: Any = None, metadata_keys: Optional[Mapping[str, str]] = None,
                 **options: Any):
        if not isinstance(retriever, BaseRetriever):
            raise TypeError("MemPursuitRetriever wraps a LlamaIndex retriever, e.g. "
                            "index.as_retriever(similarity_top_k=200); got "
                            f"{type(retriever).__name__}")
        self.retriever = retriever
        if options:  # a misspelt keyword is named here, with the retriever's names
            ReadOptions.build("MemPursuitRetriever", policy=policy, **options,
                              own=(self.__init__, MemPursuitPostprocessor.__init__))
        index = getattr(retriever, "_index", None)
        if not (hasattr(index, "index_struct") and hasattr(index, "vector_store")):
            index = None
        self.postprocessor = MemPursuitPostprocessor(
            k=k, pool=pool, policy=policy, policy_options=policy_options, strict=strict,
            embed_model=embed_model if embed_model is not None else getattr(
                retriever, "_embed_model", None),
            vector_store=vector_store if vector_store is not None or index is not None
            else getattr(retriever, "_vector_store", None),
            metadata_keys=metadata_keys, index=index, **_scope(retriever, index), **options)
        super().__init__(callback_manager=getattr(retriever, "callback_manager", None),
                         verbose=getattr(retriever, "_verbose", False))

    @property
    def vector_sources(self) -> Dict[str, int]:
        """How many node vectors came from each source so far (see the postprocessor)."""
        return self.postprocessor.vector_sources

    def _empty(self, query_bundle: QueryBundle) -> bool:
        """Whether the query has nothing to embed (LlamaIndex's retriever then raises a
        ``TypeError`` from inside its store): a ``ValueError`` with ``strict=True``, else one
        warning and no nodes."""
        if query_bundle.embedding is not None or query_bundle.embedding_strs:
            return False
        message = ("MemPursuitRetriever: the query is empty (no text, no embedding), so there "
                   "is nothing to retrieve: pass the question's text")
        if self.postprocessor.strict:
            raise ValueError(message)
        logger.warning("mempursuit: %s; returning no nodes", message)
        return True

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        if self._empty(query_bundle):
            return []
        nodes = self.retriever.retrieve(query_bundle)  # sets query_bundle.embedding
        return self.postprocessor.postprocess_nodes(nodes, query_bundle=query_bundle)

    async def _aretrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        if self._empty(query_bundle):
            return []
        nodes = await self.retriever.aretrieve(query_bundle)
        return await self.postprocessor.apostprocess_nodes(nodes, query_bundle=query_bundle)

