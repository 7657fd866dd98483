"""Graphiti on embedded FalkorDB (``falkordblite``) through graphiti-core's own ``FalkorDriver``
(issue 47): graphiti-core 0.31 deprecates its Kuzu driver, and falkordblite runs FalkorDB inside
the process's own Redis server, with no service to start.

falkordblite needs Python >= 3.12, and this project's CI runs Python 3.11 (LightMem needs
< 3.12), so the module is skipped there (``ALLOWED_CI_SKIPS`` in the root conftest.py says so)
and Kuzu stays the embedded store of the Graphiti tests and of ``--framework graphiti``. Where it
runs: ``pip install -e ".[graphiti,embed]" "graphiti-core[falkordb]" falkordblite``.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

pytest.importorskip("redislite.async_falkordb_client",
                    reason="falkordblite (Python >= 3.12): pip install falkordblite")
pytest.importorskip("falkordb", reason='pip install "graphiti-core[falkordb]"')

from graphiti_core.edges import EntityEdge  # noqa: E402
from graphiti_core.nodes import EntityNode  # noqa: E402

from mempursuit_core.embed import get_embedder  # noqa: E402
from mempursuit_eval.backends.graphiti import (  # noqa: E402
    EncoderEmbedder, close_falkordblite_graphiti, open_falkordblite_graphiti)
from mempursuit_graphiti import MemPursuitGraphiti  # noqa: E402

FACTS = ["Priya works as a nurse at the city hospital.",
         "Priya is a nurse; she works at the city hospital.",
         "At the city hospital, Priya has a job as a nurse.",
         "Priya's hospital shifts start at six in the morning, Monday to Thursday.",
         "Priya adopted a grey cat called Miso last spring.",
         "Priya bakes sourdough bread every Sunday."]
QUESTION = "When does Priya start work at the hospital?"


async def test_the_wrapper_reads_and_reorders_graphiti_on_embedded_falkordb(tmp_path):
    graphiti = open_falkordblite_graphiti(tmp_path / "graph.db", EncoderEmbedder(get_embedder()),
                                          database="priya")
    try:
        await graphiti.build_indices_and_constraints()
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

        wrapped = MemPursuitGraphiti(graphiti, strict=True)  # a failed read raises
        pool = await wrapped.edge_pool(QUESTION, group_ids=["priya"])
        assert pool.candidates.vectors.shape == (len(FACTS), 384)  # every fact, stored vectors
        native = await graphiti.search(QUESTION, group_ids=["priya"], num_results=3)
        same = await MemPursuitGraphiti(graphiti, policy="native", strict=True).search(
            QUESTION, group_ids=["priya"], num_results=3)
        assert [e.uuid for e in same] == [e.uuid for e in native]  # native = Graphiti's own
        ours = await wrapped.search(QUESTION, group_ids=["priya"], num_results=3)
        assert "six in the morning" in ours[0].fact  # the answer first, as on Kuzu
    finally:
        await close_falkordblite_graphiti(graphiti)
