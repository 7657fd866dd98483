"""Registers the AutoGen adapter (imports cleanly without AutoGen)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="autogen",
    module="mempursuit_autogen.memory",
    framework="autogen_ext",
    extra="autogen",
    swap="MemPursuitChromaDBVectorMemory(config) (was ChromaDBVectorMemory(config)): query "
         "reads 200 with their embeddings and returns the policy's k",
    docs="docs/adapters/autogen.md",
    second_read=("Chroma get with where {title: {$in: titles}}, ANDed with the query's where "
                 "in the memory's collection"),
    summary="AutoGen: a ChromaDBVectorMemory whose query reorders a pool of 200",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
