"""MemPursuit for cognee: a read policy on cognee's chunk search.

The one line, once, before ``cognee.search``::

    from mempursuit_cognee import use_mempursuit

    use_mempursuit()            # SearchType.CHUNKS now returns what the read policy picks

``cognee.search(query, query_type=SearchType.CHUNKS, top_k=K)`` then reads ``P`` chunks from
cognee's vector engine with their stored vectors and returns the policy's ``K``. Importing this
package imports nothing from cognee.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

__all__ = ["CHUNK_SIGNALS", "ChunkPool", "CogneeReadError", "MemPursuitChunksRetriever",
           "MiniLMEmbeddingEngine", "use_mempursuit", "use_offline_embedder"]

_LAZY = {name: ("retriever", name) for name in __all__}
_LAZY.update({name: ("offline", name) for name in ("MiniLMEmbeddingEngine",
                                                    "use_offline_embedder")})


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, or blocked in sys.modules
        return False


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'mempursuit_cognee' has no attribute {name!r}")
    if not _installed("cognee"):
        from mempursuit_core.adapter import AdapterNotInstalledError

        raise AdapterNotInstalledError(
            f"mempursuit_cognee.{name} needs cognee, which is not installed: "
            'pip install "mempursuit[cognee]"')
    module_name, attr = target
    value = getattr(importlib.import_module(f".{module_name}", __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
