"""Registers the Agno adapter (imports cleanly without Agno)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="agno",
    module="mempursuit_agno.reranker",
    framework="agno",
    extra="agno",
    swap="Knowledge(vector_db=db, reranker=MemPursuitReranker(k=10))",
    docs="docs/adapters/agno.md",
    summary="Agno: a Knowledge reranker that reorders the widened pool its vector db returns",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
