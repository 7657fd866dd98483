"""MemPursuit for LlamaIndex: :class:`MemPursuitPostprocessor`, a ``BaseNodePostprocessor`` for
``VectorMemoryBlock`` and any retriever, query engine or chat engine.

Importing this package does not import LlamaIndex; the names below do.
"""

__all__ = ["DEFAULT_METADATA_KEYS", "MemPursuitPostprocessor"]


def __getattr__(name):
    if name in __all__:
        from . import postprocessor

        return getattr(postprocessor, name)
    raise AttributeError(f"module 'mempursuit_llamaindex' has no attribute {name!r}")
