"""MemPursuit as the read policy of Graphiti's search: the one-line swap.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[graphiti,embed]"
    python examples/graphiti_quickstart.py

Writes a few facts about Priya (three paraphrases of one fact, the fact that complements it, and
others) as edges of a Graphiti graph on the embedded Kuzu driver, through Graphiti's own node and
edge ``save`` methods, with the packaged all-MiniLM-L6-v2 (int8 ONNX, offline) as Graphiti's
embedder and no LLM. It then compares Graphiti's own top 3 facts with the wrapped instance's
under the default read policy (and, named as a reproduction, the paper's rule,
``policy="mempursuit"``). The swap is one line, after building the ``Graphiti`` instance::

    graphiti = MemPursuitGraphiti(graphiti)

``graphiti.search(...)`` and ``graphiti.search_(...)`` then read through the policy; everything
else (``add_episode``, ``add_triplet``, ...) is Graphiti's own (docs/adapters/graphiti.md).
"""

import asyncio
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("GRAPHITI_TELEMETRY_ENABLED", "false")

from graphiti_core.edges import EntityEdge  # noqa: E402
from graphiti_core.nodes import EntityNode  # noqa: E402

from mempursuit_core.embed import get_embedder  # noqa: E402
from mempursuit_eval.backends.graphiti import (EncoderEmbedder, build_fulltext,  # noqa: E402
                                               open_kuzu_graphiti)
from mempursuit_graphiti import MemPursuitGraphiti  # noqa: E402
# the sample memories (examples/_sample.py)
from _sample import PRIYA_FACTS as FACTS, PRIYA_QUESTION as QUESTION  # noqa: E402


async def main(path: Path) -> None:
    # Graphiti on embedded Kuzu, MiniLM as its EmbedderClient, no LLM (none is needed to read)
    graphiti = open_kuzu_graphiti(path, EncoderEmbedder(get_embedder()))
    when = datetime(2024, 5, 1, tzinfo=timezone.utc)
    priya = EntityNode(name="Priya", group_id="priya", labels=["Entity"], created_at=when)
    world = EntityNode(name="World", group_id="priya", labels=["Entity"], created_at=when)
    for node in (priya, world):
        await node.generate_name_embedding(graphiti.embedder)
        await node.save(graphiti.driver)
    for fact in FACTS:
        edge = EntityEdge(source_node_uuid=priya.uuid, target_node_uuid=world.uuid,
                          name="FACT", fact=fact, group_id="priya", created_at=when,
                          valid_at=when)
        await edge.generate_embedding(graphiti.embedder)
        await edge.save(graphiti.driver)
    await build_fulltext(graphiti)

    native = await graphiti.search(QUESTION, group_ids=["priya"], num_results=3)
    wrapped = MemPursuitGraphiti(graphiti)  # the one line: the default read policy
    ours = await wrapped.search(QUESTION, group_ids=["priya"], num_results=3)
    # the paper's rule (MemPursuit, arXiv 2610.15642), named: a reproduction, not the default
    paper = await MemPursuitGraphiti(graphiti, policy="mempursuit").search(
        QUESTION, group_ids=["priya"], num_results=3)

    print(f"Q: {QUESTION}\n")
    print("Graphiti's own top 3:")
    for edge in native:
        print(f"  {edge.fact}")
    print("\nMemPursuitGraphiti's 3 (the default policy, from Graphiti's fused top 200):")
    for edge in ours:
        print(f"  {edge.fact}")
    print('\nthe paper\'s rule, policy="mempursuit" (a reproduction of the paper, not the default):')
    for edge in paper:
        print(f"  {edge.fact}")


with tempfile.TemporaryDirectory() as tmp:
    asyncio.run(main(Path(tmp) / "graph.kuzu"))
