"""Registers the CrewAI adapter (imports cleanly without CrewAI)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="crewai",
    module="mempursuit_crewai.memory",
    framework="crewai",
    extra="crewai",
    swap="MemPursuitMemory(storage=..., embedder=...) (was Memory(...)): recall reads 200 "
         "with their stored embeddings and keeps the policy's K before CrewAI's scoring",
    docs="docs/adapters/crewai.md",
    second_read=("LanceDB where on the asked titles in the metadata ANDed with the recall's "
                 "scope prefix; its categories, metadata filter and privacy kept"),
    summary="CrewAI: a unified Memory whose recall reorders a pool of 200 from its storage",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
