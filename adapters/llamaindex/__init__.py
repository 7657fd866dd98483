"""MemPursuit for LlamaIndex: :class:`MemPursuitPostprocessor`, a ``BaseNodePostprocessor`` for
``VectorMemoryBlock`` and any retriever, query engine or chat engine.

Importing this package does not import LlamaIndex; the names below do.
"""

from mempursuit_core.adapter import lazy_exports

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitPostprocessor"]


__getattr__, __dir__ = lazy_exports(globals(), {name: "postprocessor" for name in __all__},
                                    needs={"*": "llama_index.core"}, framework="LlamaIndex",
                                    extra="llamaindex")
