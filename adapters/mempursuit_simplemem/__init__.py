"""MemPursuit adapter for SimpleMem (aiming-lab/SimpleMem).

``system.hybrid_retriever = MemPursuitRetriever(system.hybrid_retriever, k=10)`` makes
SimpleMem answer from the ``k`` entries MemPursuit selects from its retrieval pool (its stored
LanceDB vectors, its own query embedder). Importing this package does not import SimpleMem or
lancedb.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="simplemem", framework="simplemem", extra="simplemem",
    module="mempursuit_simplemem.adapter",
    swap='system.hybrid_retriever = MemPursuitRetriever(system.hybrid_retriever, k=10)',
    docs="docs/adapters/simplemem.md",
    summary=("SimpleMem (aiming-lab/SimpleMem): reorders HybridRetriever.retrieve's pool "
             "(top-200, stored LanceDB vectors)"),
    exports=dict.fromkeys(("DEFAULT_POOL_SIZE", "MemPursuitRetriever", "SimpleMemPool",
                           "SimpleMemSelection", "enable", "ensure_fts_index", "fetch_vectors",
                           "has_fts_index", "keyword_scores", "lance_table"), "adapter"),
    needs={},  # the wrapper takes the caller's SimpleMem retriever
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
