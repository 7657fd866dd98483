"""Registers the Agno adapter (imports cleanly without Agno)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="agno",
    module="mempursuit_agno.reranker",
    framework="agno",
    extra="agno",
    swap="Knowledge(vector_db=db, reranker=MemPursuitReranker(k=10))",
    docs="docs/adapters/agno.md",
    second_read=("LanceDb with vector_db= and the search's filters= / user_id=: a LanceDB where "
                 "on the titles in meta_data and the owner clause, filters checked as LanceDb "
                 "checks them"),
    summary="Agno: a Knowledge reranker that reorders the widened pool its vector db returns",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
