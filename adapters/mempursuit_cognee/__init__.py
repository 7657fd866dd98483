"""MemPursuit for cognee: a read policy on cognee's chunk search.

The one line, once, before ``cognee.search``::

    from mempursuit_cognee import use_mempursuit

    use_mempursuit()            # SearchType.CHUNKS now returns what the read policy picks

``cognee.search(query, query_type=SearchType.CHUNKS, top_k=K)`` then reads ``P`` chunks from
cognee's vector engine with their stored vectors and returns the policy's ``K``. Importing this
package imports nothing from cognee.
"""

from __future__ import annotations

from mempursuit_core.adapter import lazy_exports

__all__ = ["CHUNK_SIGNALS", "ChunkPool", "CogneeReadError", "MemPursuitChunksRetriever",
           "MiniLMEmbeddingEngine", "use_mempursuit", "use_offline_embedder"]

__getattr__, __dir__ = lazy_exports(
    globals(), {**{name: "retriever" for name in __all__},
                "MiniLMEmbeddingEngine": "offline", "use_offline_embedder": "offline"},
    needs={"*": "cognee"}, framework="cognee", extra="cognee")
