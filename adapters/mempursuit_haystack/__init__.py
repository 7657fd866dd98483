"""MemPursuit for Haystack: :class:`MemPursuitRanker`, a ranker component that reorders the
documents a retriever returns (``pipeline.add_component("ranker", MemPursuitRanker(top_k=10))``
after a retriever asked for a pool of 200); :class:`MemPursuitTextEmbedder` and
:class:`MemPursuitDocumentEmbedder`, the packaged offline embedder as Haystack components.

Importing this package does not import Haystack; the names below do.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="haystack", framework="haystack", extra="haystack", label="Haystack",
    module="mempursuit_haystack.ranker",
    swap=('pipeline.add_component("ranker", MemPursuitRanker(top_k=10, document_store=store, '
          "filters=scope)) after a retriever with top_k=200 (return_embedding=True, "
          "filters=scope), connected to retriever.documents; whole_store=True instead of "
          "filters= for a store of one corpus"),
    docs="docs/adapters/haystack.md",
    second_read=("filter_documents on meta.title ('in'), ANDed with filters= (or "
                 "whole_store=True)"),
    summary="Haystack: a ranker component that reorders the documents a retriever returns",
    exports={"DEFAULT_METADATA_KEYS": "ranker", "MemPursuitRanker": "ranker",
             "MemPursuitTextEmbedder": "embedders", "MemPursuitDocumentEmbedder": "embedders"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
