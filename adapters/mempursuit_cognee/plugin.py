"""Registers the cognee adapter (imports cleanly without cognee)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="cognee",
    module="mempursuit_cognee",
    framework="cognee",
    extra="cognee",
    swap='use_mempursuit()  once, then cognee.search(..., query_type=SearchType.CHUNKS)',
    docs="docs/adapters/cognee.md",
    summary=("cognee: a chunks retriever registered with use_retriever that reorders the top-200 "
             "chunks of cognee's vector engine with their stored vectors (LanceDB by default)"),
)


@hookimpl
def register_adapters(register):
    register(SPEC)
