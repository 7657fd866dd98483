"""MemPursuit adapter for SimpleMem (aiming-lab/SimpleMem).

``system.hybrid_retriever = MemPursuitRetriever(system.hybrid_retriever, k=10)`` makes
SimpleMem answer from the ``k`` entries MemPursuit selects from its retrieval pool (its stored
LanceDB vectors, its own query embedder). Importing this package does not import SimpleMem or
lancedb.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
