"""MemPursuit for Graphiti (the graph memory behind Zep): a read policy on fact and entity search.

The one line, after building the ``Graphiti`` instance::

    from mempursuit_graphiti import MemPursuitGraphiti

    graphiti = MemPursuitGraphiti(graphiti)

``graphiti.search(...)`` and ``graphiti.search_(...)`` then return what the read policy picks
from Graphiti's own fused top ``P``; every other attribute and method is the wrapped instance's.
Importing this package imports nothing from Graphiti.
"""

from __future__ import annotations

from mempursuit_core.adapter import lazy_exports

__all__ = ["EDGE_SIGNALS", "EmptyPoolError", "GraphitiPool", "GraphitiReadError", "MemPursuitGraphiti",
           "POOL_RERANKERS"]

__getattr__, __dir__ = lazy_exports(globals(), {name: "search" for name in __all__},
                                    needs={"*": "graphiti_core"}, framework="Graphiti",
                                    extra="graphiti")
