"""MemPursuit for cognee: a read policy on cognee's chunk search.

The one line, once, before ``cognee.search``::

    from mempursuit_cognee import use_mempursuit

    use_mempursuit()            # SearchType.CHUNKS now returns what the read policy picks

``cognee.search(query, query_type=SearchType.CHUNKS, top_k=K)`` then reads ``P`` chunks from
cognee's vector engine with their stored vectors and returns the policy's ``K``. Importing this
package imports nothing from cognee.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="cognee", framework="cognee", extra="cognee",
    module="mempursuit_cognee",
    swap='use_mempursuit()  once, then cognee.search(..., query_type=SearchType.CHUNKS)',
    docs="docs/adapters/cognee.md",
    summary=("cognee: a chunks retriever registered with use_retriever that reorders the top-200 "
             "chunks of cognee's vector engine with their stored vectors (LanceDB by default)"),
    exports={"use_mempursuit": "retriever", "MemPursuitChunksRetriever": "retriever",
             "ChunkPool": "retriever", "CogneeReadError": "retriever",
             "CHUNK_SIGNALS": "retriever", "use_offline_embedder": "offline",
             "MiniLMEmbeddingEngine": "offline"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
