"""MemPursuit for Agno: :class:`MemPursuitReranker`, a ``Knowledge`` reranker that reorders the
widened pool ``Knowledge.search`` reads from its vector db (``Knowledge(vector_db=db,
reranker=MemPursuitReranker(k=10))``); :class:`MemPursuitEmbedder`, the packaged offline
MiniLM as an Agno embedder.

Importing this package does not import Agno; the names below do.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
