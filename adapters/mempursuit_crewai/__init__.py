"""MemPursuit for CrewAI: :class:`MemPursuitMemory`, CrewAI's unified ``Memory`` whose ``recall``
reads a pool of 200 from its storage (LanceDB by default) with the stored embeddings and keeps
the ``K`` the read policy picks before CrewAI's own recency / importance scoring orders them
(``MemPursuitMemory(storage=..., embedder=...)``, was ``Memory(...)``);
:class:`MemPursuitEmbedder`, the packaged offline MiniLM as a CrewAI embedder.

Importing this package does not import CrewAI; the names below do.
"""

from mempursuit_core.adapter import lazy_exports

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitEmbedder", "MemPursuitMemory", "PolicyStorage"]


__getattr__, __dir__ = lazy_exports(globals(), {"DEFAULT_METADATA_KEYS": "memory",
                                                "MemPursuitMemory": "memory",
                                                "PolicyStorage": "memory",
                                                "MemPursuitEmbedder": "embedder"},
                                    needs={"memory": "crewai.memory"}, framework="CrewAI",
                                    extra="crewai")
