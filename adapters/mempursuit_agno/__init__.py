"""MemPursuit for Agno: :class:`MemPursuitReranker`, a ``Knowledge`` reranker that reorders the
widened pool ``Knowledge.search`` reads from its vector db (``Knowledge(vector_db=db,
reranker=MemPursuitReranker(k=10))``); :class:`MemPursuitEmbedder`, the packaged offline
MiniLM as an Agno embedder.

Importing this package does not import Agno; the names below do.
"""

from mempursuit_core.adapter import lazy_exports

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitEmbedder", "MemPursuitReranker"]


__getattr__, __dir__ = lazy_exports(globals(), {"DEFAULT_METADATA_KEYS": "reranker",
                                                "MemPursuitReranker": "reranker",
                                                "MemPursuitEmbedder": "embedder"},
                                    needs={"*": "agno"}, framework="Agno", extra="agno")
