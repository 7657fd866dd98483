"""MemPursuit for CrewAI: :class:`MemPursuitMemory`, CrewAI's unified ``Memory`` whose ``recall``
reads a pool of 200 from its storage (LanceDB by default) with the stored embeddings and keeps
the ``K`` the read policy picks before CrewAI's own recency / importance scoring orders them
(``MemPursuitMemory(storage=..., embedder=...)``, was ``Memory(...)``);
:class:`MemPursuitEmbedder`, the packaged offline MiniLM as a CrewAI embedder.

Importing this package does not import CrewAI; the names below do.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
