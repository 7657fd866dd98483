"""Runs mempursuit_cognee on a real cognee in its own process and writes what it saw as JSON.

cognee reads its settings from the environment when imported, keeps engines in process-wide
caches and configures logging for the whole process, so ``test_cognee.py`` runs this script in
a subprocess (one cognee per process, stores in a temporary directory) and checks its report::

    python integration_tests/cognee_driver.py REPORT.json STORE_DIR

The store: cognee's defaults (SQLite, LanceDB vectors, the Ladybug graph), the fixture's first
conversation added as one document per turn, cut into chunks and stored by cognee's own tasks
(``classify_documents``, ``extract_chunks_from_documents``, ``add_data_points``), the packaged
MiniLM as cognee's embedding engine, no LLM.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import sys
from pathlib import Path

OUT, ROOT = Path(sys.argv[1]), Path(sys.argv[2])
os.environ.update(SYSTEM_ROOT_DIRECTORY=str(ROOT / "system"), DATA_ROOT_DIRECTORY=str(ROOT / "data"),
                  EMBEDDING_DIMENSIONS="384", ENABLE_BACKEND_ACCESS_CONTROL="false",
                  COGNEE_SKIP_CONNECTION_TEST="true", LLM_API_KEY="unused", TELEMETRY_DISABLED="1",
                  COGNEE_LOG_FILE="false", LOG_LEVEL="WARNING")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import cognee  # noqa: E402
from cognee.modules.pipelines.tasks.task import Task  # noqa: E402
from cognee.modules.retrieval.chunks_retriever import ChunksRetriever  # noqa: E402
from cognee.modules.retrieval.exceptions.exceptions import NoDataError  # noqa: E402
from cognee.modules.retrieval.registered_community_retrievers import (  # noqa: E402
    registered_community_retrievers)
from cognee.tasks.documents import (classify_documents,  # noqa: E402
                                    extract_chunks_from_documents)
from cognee.tasks.storage import add_data_points  # noqa: E402
from dialogue_fixture import fixture_conversation  # noqa: E402

from mempursuit_cognee import (CogneeReadError, MemPursuitChunksRetriever,  # noqa: E402
                               use_mempursuit, use_offline_embedder)

QUERIES = ["What does Priya do for a living?", "Where does Tomas go running?",
           "Which pet did Priya adopt?"]
PETS = ["Priya's cat Miso sleeps on the radiator.", "Tomas walks his neighbour's dog Rex.",
        "Miso the cat was adopted from a shelter."]
K = 3


class Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


class Engine:
    """cognee's vector engine with another ``retrieve`` (a store that misbehaves)."""

    def __init__(self, real, retrieve):
        self.real, self.retrieve = real, retrieve

    def __getattr__(self, name):
        return getattr(self.real, name)


def on(engine, **options) -> MemPursuitChunksRetriever:
    """The retriever, reading through ``engine`` instead of cognee's."""
    retriever = MemPursuitChunksRetriever(top_k=K, **options)

    async def engines():
        from cognee.infrastructure.databases.unified import get_unified_engine

        return engine, (await get_unified_engine()).graph

    retriever.engines = engines
    return retriever


def ids(found) -> list[str]:
    return [str(r.id) for r in found]


async def chunks(dataset: str) -> None:
    await cognee.run_custom_pipeline(
        tasks=[Task(classify_documents), Task(extract_chunks_from_documents, max_chunk_size=512),
               Task(add_data_points)], dataset=dataset)


async def engine():
    from cognee.infrastructure.databases.unified import get_unified_engine

    return (await get_unified_engine()).vector


async def main() -> dict:
    report: dict = {}
    warned = Warnings()
    logging.getLogger("mempursuit_cognee").addHandler(warned)

    # nothing added yet: cognee's own NoDataError, from both
    for name, retriever in (("native", ChunksRetriever(top_k=K)),
                            ("ours", MemPursuitChunksRetriever(top_k=K))):
        try:
            await retriever.get_retrieved_objects(QUERIES[0])
            report[f"empty_{name}"] = "no error"
        except NoDataError:
            report[f"empty_{name}"] = "NoDataError"

    turns = fixture_conversation(0)["turns"]
    await cognee.add([t["text"] for t in turns], dataset_name="dialogue")
    await chunks("dialogue")
    await cognee.add(PETS, dataset_name="pets", node_set=["pets"])
    await chunks("pets")
    vec = await engine()
    table = await (await vec.get_collection("DocumentChunk_text")).query().to_list()
    stored = {str(r["id"]): [float(x) for x in r["vector"]] for r in table}
    report["turns"], report["chunks"] = len(turns), len(stored)

    per_query = []
    for q in QUERIES:
        native = await ChunksRetriever(top_k=K).get_retrieved_objects(q)
        passthrough = await MemPursuitChunksRetriever(top_k=K, policy="native") \
            .get_retrieved_objects(q)
        ours_r = MemPursuitChunksRetriever(top_k=K)
        ours = await ours_r.get_retrieved_objects(q)
        trace = ours_r.last_trace
        pool = await ours_r.chunk_pool(q)
        search = await vec.search("DocumentChunk_text", q, limit=200, include_payload=True)
        rows = pool.candidates.vectors
        gap = max(abs(a - b) for r, row in zip(pool.candidates.items, rows)
                  for a, b in zip(stored[str(r.id)], row.tolist()))
        expected = pool.candidates.select(ours_r.selector, K).items
        capped = await MemPursuitChunksRetriever(top_k=K, k=2).get_retrieved_objects(q)
        per_query.append({
            "query": q, "native": ids(native), "passthrough": ids(passthrough),
            "ours": ids(ours), "expected": ids(expected), "capped": ids(capped),
            "pool": ids(pool.native), "search": ids(search), "unscored": len(pool.unscored),
            "stored_gap": gap, "signals": sorted(pool.candidates.signals.keys()),
            "session_ids_distinct": len(set(pool.candidates.signals["session_ids"])),
            "payload_keys": sorted(ours[0].payload) if ours else [],
            "trace": {"final": list(trace.final), "native": list(trace.native),
                      "vectors": dict(trace.vectors), "fallback": trace.fallback},
        })
    report["queries"] = per_query

    # the one line: cognee.search through the registered retriever
    q = QUERIES[0]
    before = await cognee.search(q, query_type=cognee.SearchType.CHUNKS, top_k=K)
    use_mempursuit()
    after = await cognee.search(q, query_type=cognee.SearchType.CHUNKS, top_k=K)
    use_mempursuit(policy="native")
    back = await cognee.search(q, query_type=cognee.SearchType.CHUNKS, top_k=K)
    registered_community_retrievers.clear()
    report["search"] = {"before": [c["text"] for c in before], "after": [c["text"] for c in after],
                        "native_again": [c["text"] for c in back],
                        "scores": [c.get("score") for c in after]}
    completion = await MemPursuitChunksRetriever(top_k=K).get_completion(q)
    report["completion_texts"] = [c["text"] for c in completion]

    # a pool shorter than K: every chunk, once
    everything = await MemPursuitChunksRetriever(top_k=1000).get_retrieved_objects(q)
    report["short_pool"] = {"n": len(everything), "distinct": len(set(ids(everything)))}

    # the caller's node-set filter reaches the pool's search
    pets = await MemPursuitChunksRetriever(top_k=K, node_name=["pets"]).get_retrieved_objects(
        "Which pet?")
    report["node_set"] = [list(r.payload.get("belongs_to_set") or []) for r in pets]

    # an empty or blank query: whatever cognee's own search does with it (its LanceDB worker
    # raises on ""), and what the swap said
    report["empty_query"] = {}
    for blank in ("", "   "):
        outcome = {}
        for name, retriever in (("native", ChunksRetriever(top_k=K)),
                                ("ours", MemPursuitChunksRetriever(top_k=K))):
            warned.messages.clear()
            try:
                outcome[name] = ids(await retriever.get_retrieved_objects(blank))
            except Exception as exc:  # noqa: BLE001 - compared by type and message
                outcome[name] = f"{type(exc).__name__}: {exc}"
            outcome[f"{name}_warnings"] = list(warned.messages)
        report["empty_query"][blank] = outcome

    # faults: stored vectors of the wrong size -> native + one warning; strict -> CogneeReadError
    async def short_vectors(collection, data_ids, include_vector=False):
        rows = await vec.retrieve(collection, data_ids, include_vector=include_vector)
        for r in rows:
            r.payload["vector"] = r.payload["vector"][:10]
        return rows

    warned.messages.clear()
    fell_back = await on(Engine(vec, short_vectors)).get_retrieved_objects(q)
    report["fault"] = {"same_as_native": ids(fell_back) == per_query[0]["native"],
                       "warnings": list(warned.messages),
                       "trace": {"final": list(MemPursuitChunksRetriever.last_trace.final),
                                 "fallback": MemPursuitChunksRetriever.last_trace.fallback}}
    try:
        await on(Engine(vec, short_vectors), strict=True).get_retrieved_objects(q)
        report["fault"]["strict"] = "no error"
    except CogneeReadError as exc:
        report["fault"]["strict"] = f"CogneeReadError: {exc}"

    # an engine without LanceDB's include_vector: the pool's texts embedded once, one warning
    async def no_vectors(collection, data_ids):
        return await vec.retrieve(collection, data_ids)

    warned.messages.clear()
    retriever = on(Engine(vec, no_vectors))
    embedded = [ids(await retriever.get_retrieved_objects(x)) for x in QUERIES[:2]]
    report["embedded"] = {"orders": embedded, "warnings": list(warned.messages)}

    # bad options fail at registration, not at search time
    for name, call in (("bad_policy", lambda: use_mempursuit(policy="no-such-policy")),
                       ("bad_type", lambda: use_mempursuit("CHUNKS")),
                       ("bad_pool", lambda: use_mempursuit(pool=0))):
        try:
            call()
            report[name] = "no error"
        except Exception as exc:  # noqa: BLE001 - the report names the type
            report[name] = type(exc).__name__
    report["registered_after_bad"] = len(registered_community_retrievers)

    # the shared read options (tests/test_adapter_surface.py, which cannot import cognee)
    report["surface"] = {
        fn.__qualname__: {p: [str(sig.parameters[p].kind), sig.parameters[p].default]
                          for p in ("k", "pool", "policy", "policy_options", "strict")
                          if p in sig.parameters}
        for fn in (MemPursuitChunksRetriever.__init__, use_mempursuit)
        for sig in [inspect.signature(fn)]}
    return report


use_offline_embedder()
OUT.write_text(json.dumps(asyncio.run(main()), indent=1))
