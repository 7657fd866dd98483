"""MemPursuit for Graphiti (the graph memory behind Zep): a read policy on fact and entity search.

The one line, after building the ``Graphiti`` instance::

    from mempursuit_graphiti import MemPursuitGraphiti

    graphiti = MemPursuitGraphiti(graphiti)

``graphiti.search(...)`` and ``graphiti.search_(...)`` then return what the read policy picks
from Graphiti's own fused top ``P``; every other attribute and method is the wrapped instance's.
Importing this package imports nothing from Graphiti.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="graphiti", framework="graphiti_core", extra="graphiti", label="Graphiti",
    module="mempursuit_graphiti",
    swap='graphiti = MemPursuitGraphiti(graphiti)',
    docs="docs/adapters/graphiti.md",
    second_read=("entity searches with entity_titles=True: EntityNode.get_by_names within the "
                 "search's group_ids, name embeddings read back"),
    summary=("Graphiti (Zep's graph memory): a Graphiti wrapper whose search / search_ reorder "
             "the fused top-200 facts and entities with the fact / name embeddings read back "
             "from the graph"),
    exports={"MemPursuitGraphiti": "search", "GraphitiPool": "search",
             "GraphitiReadError": "search", "EmptyPoolError": "search", "EDGE_SIGNALS": "search",
             "POOL_RERANKERS": "search"},
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
