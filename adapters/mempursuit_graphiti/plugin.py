"""Registers the Graphiti adapter (imports cleanly without Graphiti)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="graphiti",
    module="mempursuit_graphiti",
    framework="graphiti_core",
    extra="graphiti",
    swap='graphiti = MemPursuitGraphiti(graphiti)',
    docs="docs/adapters/graphiti.md",
    second_read=("entity searches with entity_titles=True: EntityNode.get_by_names within the "
                 "search's group_ids, name embeddings read back"),
    summary=("Graphiti (Zep's graph memory): a Graphiti wrapper whose search / search_ reorder "
             "the fused top-200 facts and entities with the fact / name embeddings read back "
             "from the graph"),
)


@hookimpl
def register_adapters(register):
    register(SPEC)
