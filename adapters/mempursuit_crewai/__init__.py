"""MemPursuit for CrewAI: :class:`MemPursuitMemory`, CrewAI's unified ``Memory`` whose ``recall``
reads a pool of 200 from its storage (LanceDB by default) with the stored embeddings and keeps
the ``K`` the read policy picks before CrewAI's own recency / importance scoring orders them
(``MemPursuitMemory(storage=..., embedder=...)``, was ``Memory(...)``);
:class:`MemPursuitEmbedder`, the packaged offline MiniLM as a CrewAI embedder.

Importing this package does not import CrewAI; the names below do.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="crewai", framework="crewai", extra="crewai", label="CrewAI",
    module="mempursuit_crewai.memory",
    swap=("MemPursuitMemory(storage=..., embedder=...) (was Memory(...)): recall reads 200 "
          "with their stored embeddings and keeps the policy's K before CrewAI's scoring"),
    docs="docs/adapters/crewai.md",
    second_read=("LanceDB where on the asked titles in the metadata ANDed with the recall's "
                 "scope prefix; its categories, metadata filter and privacy kept"),
    summary="CrewAI: a unified Memory whose recall reorders a pool of 200 from its storage",
    exports={"DEFAULT_METADATA_KEYS": "memory", "MemPursuitMemory": "memory",
             "PolicyStorage": "memory", "MemPursuitEmbedder": "embedder"},
    needs={"memory": "crewai.memory"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
