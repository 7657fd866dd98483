"""MemPursuit for Agno: :class:`MemPursuitReranker`, a ``Knowledge`` reranker that reorders the
widened pool ``Knowledge.search`` reads from its vector db (``Knowledge(vector_db=db,
reranker=MemPursuitReranker(k=10))``); :class:`MemPursuitEmbedder`, the packaged offline
MiniLM as an Agno embedder.

Importing this package does not import Agno; the names below do.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="agno", framework="agno", extra="agno", label="Agno",
    module="mempursuit_agno.reranker",
    swap="Knowledge(vector_db=db, reranker=MemPursuitReranker(k=10))",
    docs="docs/adapters/agno.md",
    second_read=("LanceDb with vector_db= and the search's filters= / user_id=: a LanceDB where "
                 "on the titles in meta_data and the owner clause, filters checked as LanceDb "
                 "checks them"),
    summary="Agno: a Knowledge reranker that reorders the widened pool its vector db returns",
    exports={"DEFAULT_METADATA_KEYS": "reranker", "MemPursuitReranker": "reranker",
             "MemPursuitEmbedder": "embedder"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
