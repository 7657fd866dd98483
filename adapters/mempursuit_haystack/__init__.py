"""MemPursuit for Haystack: :class:`MemPursuitRanker`, a ranker component that reorders the
documents a retriever returns (``pipeline.add_component("ranker", MemPursuitRanker(top_k=10))``
after a retriever asked for a pool of 200); :class:`MemPursuitTextEmbedder` and
:class:`MemPursuitDocumentEmbedder`, the packaged offline embedder as Haystack components.

Importing this package does not import Haystack; the names below do.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
