"""Registers the Haystack adapter (imports cleanly without Haystack)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="haystack",
    module="mempursuit_haystack.ranker",
    framework="haystack",
    extra="haystack",
    swap=('pipeline.add_component("ranker", MemPursuitRanker(top_k=10, document_store=store, '
          "filters=scope)) after a retriever with top_k=200 (return_embedding=True, "
          "filters=scope), connected to retriever.documents; whole_store=True instead of "
          "filters= for a store of one corpus"),
    docs="docs/adapters/haystack.md",
    second_read=("filter_documents on meta.title ('in'), ANDed with filters= (or "
                 "whole_store=True)"),
    summary="Haystack: a ranker component that reorders the documents a retriever returns",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
