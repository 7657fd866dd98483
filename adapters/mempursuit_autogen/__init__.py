"""MemPursuit for AutoGen: :class:`MemPursuitChromaDBVectorMemory`, AutoGen's
``ChromaDBVectorMemory`` whose ``query`` reads a pool of 200 from its Chroma collection with the
stored embeddings and returns the read policy's ``k`` (``update_context`` unchanged);
:class:`MemPursuitEmbeddingFunction`, the packaged offline MiniLM as a Chroma embedding
function.

Importing this package does not import AutoGen; the names below do.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="autogen", framework="autogen_ext", extra="autogen", label="AutoGen",
    module="mempursuit_autogen.memory",
    swap=("MemPursuitChromaDBVectorMemory(config) (was ChromaDBVectorMemory(config)): query "
          "reads 200 with their embeddings and returns the policy's k"),
    docs="docs/adapters/autogen.md",
    second_read=("Chroma get with where {title: {$in: titles}}, ANDed with the query's where "
                 "in the memory's collection"),
    summary="AutoGen: a ChromaDBVectorMemory whose query reorders a pool of 200",
    exports={"DEFAULT_METADATA_KEYS": "memory", "MemPursuitChromaDBVectorMemory": "memory",
             "MemPursuitEmbeddingFunction": "memory"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
