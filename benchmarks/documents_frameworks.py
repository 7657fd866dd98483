"""The second read through the frameworks' own read paths: 2WikiMultihopQA (the dev half, its
6,119-paragraph corpus) written once into Haystack's ``InMemoryDocumentStore``, a LlamaIndex
``VectorStoreIndex`` (``SimpleVectorStore``) and LangChain's ``InMemoryVectorStore``, each
paragraph with ``title`` metadata and the packaged MiniLM's vector (no second-read deadline:
``follow_timeout=None``). Per question, the
framework's own top K (dense) against its one-line swap with the default policy (the second
read on: ``document_store=`` / the index's docstore / the vector store) and with ``follow=0``;
P = 200. Complete coverage at K = 5 / 10 and recall@2 / @5, over all questions and over the
held-out half (questions 251-500; the options were chosen on the first 250, plain store).

    python benchmarks/documents_frameworks.py [DATA_DIR] [--limit N] \\
        --out benchmarks/results/eval/documents/frameworks.json

Read by benchmarks/documents_report.py (docs/results-documents.md).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("NUMBA_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import numpy as np  # noqa: E402

from mempursuit_core.embed import get_embedder  # noqa: E402
from mempursuit_eval.cache import CachedEmbedder  # noqa: E402
from mempursuit_eval.datasets import default_cache_dir, load_dataset  # noqa: E402

KS = (2, 5, 10)
POOL = 200
TUNED_ON = 250  # the first 250 questions chose the options


class Vectors:
    """Precomputed vectors by text, as each framework's embeddings interface."""

    def __init__(self, texts, vectors, embedder):
        self.by_text = {t: v for t, v in zip(texts, vectors)}
        self.embedder = embedder

    def get(self, text):
        v = self.by_text.get(text)
        if v is None:
            v = self.embedder.encode([text])[0]
            self.by_text[text] = v
        return [float(x) for x in v]


def haystack_reads(units, vectors, V):
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from mempursuit_haystack import MemPursuitRanker

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents([Document(id=u.uid, content=u.text, meta={"title": u.title},
                                    embedding=v.tolist()) for u, v in zip(units, vectors)])
    retriever = InMemoryEmbeddingRetriever(store, top_k=POOL, return_embedding=True)
    # one corpus in the store: the second read may read all of it (whole_store=True); no
    # deadline, so that the numbers do not depend on the machine's load
    rankers = {"swap": MemPursuitRanker(top_k=max(KS), document_store=store, whole_store=True,
                                        follow_timeout=None),
               "swap follow=0": MemPursuitRanker(top_k=max(KS), document_store=store,
                                                 whole_store=True, follow=0)}

    def read(text):
        qv = V.get(text)
        docs = retriever.run(query_embedding=qv)["documents"]
        out = {"native": [d.id for d in docs[:max(KS)]]}
        for name, ranker in rankers.items():
            t = time.perf_counter()
            got = ranker.run(query=text, documents=docs, query_embedding=qv)["documents"]
            out[name] = [d.id for d in got]
            out[f"{name} ms"] = 1000 * (time.perf_counter() - t)
        return out
    return read


def llamaindex_reads(units, vectors, V):
    from llama_index.core import StorageContext, VectorStoreIndex
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.bridge.pydantic import PrivateAttr
    from llama_index.core.schema import TextNode

    from mempursuit_llamaindex import MemPursuitRetriever

    class Precomputed(BaseEmbedding):
        _v: object = PrivateAttr()

        def __init__(self, v):
            super().__init__(model_name="minilm-precomputed")
            self._v = v

        def _get_query_embedding(self, query):
            return self._v.get(query)

        def _get_text_embedding(self, text):
            return self._v.get(text)

        async def _aget_query_embedding(self, query):
            return self._v.get(query)

    model = Precomputed(V)
    nodes = [TextNode(id_=u.uid, text=u.text, metadata={"title": u.title},
                      embedding=v.tolist()) for u, v in zip(units, vectors)]
    index = VectorStoreIndex(nodes, embed_model=model,
                             storage_context=StorageContext.from_defaults())
    base = index.as_retriever(similarity_top_k=POOL)
    swaps = {"swap": MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL),
                                         k=max(KS), follow_timeout=None),
             "swap follow=0": MemPursuitRetriever(index.as_retriever(similarity_top_k=POOL),
                                                  k=max(KS), follow=0)}

    def read(text):
        out = {"native": [n.node.node_id for n in base.retrieve(text)[:max(KS)]]}
        for name, swap in swaps.items():
            t = time.perf_counter()
            out[name] = [n.node.node_id for n in swap.retrieve(text)]
            out[f"{name} ms"] = 1000 * (time.perf_counter() - t)
        return out
    return read


def langchain_reads(units, vectors, V):
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    from mempursuit_langchain import MemPursuitRetriever

    class Precomputed(Embeddings):
        def embed_documents(self, texts):
            return [V.get(t) for t in texts]

        def embed_query(self, text):
            return V.get(text)

    store = InMemoryVectorStore(Precomputed())
    store.add_documents([Document(id=u.uid, page_content=u.text, metadata={"title": u.title})
                         for u in units])
    swaps = {"swap": MemPursuitRetriever(vectorstore=store, k=max(KS), pool=POOL,
                                         follow_timeout=None),
             "swap follow=0": MemPursuitRetriever(vectorstore=store, k=max(KS), pool=POOL,
                                                  follow=0)}

    def read(text):
        out = {"native": [d.id for d in store.similarity_search(text, k=max(KS))]}
        for name, swap in swaps.items():
            t = time.perf_counter()
            out[name] = [d.id for d in swap.invoke(text)]
            out[f"{name} ms"] = 1000 * (time.perf_counter() - t)
        return out
    return read


def scores(rows, questions):
    """Complete coverage at K=5 / 10 and recall@2 / @5 (%) per read."""
    names = [n for n in rows[0] if not n.endswith(" ms")]
    out = {}
    for name in names:
        cov = {k: [] for k in KS}
        rec = {k: [] for k in KS}
        for row, q in zip(rows, questions):
            gold = set(q.gold_sessions)
            for k in KS:
                top = set(row[name][:k])
                cov[k].append(gold <= top)
                rec[k].append(len(gold & top) / len(gold))
        out[name] = {"complete_coverage@5": 100 * float(np.mean(cov[5])),
                     "complete_coverage@10": 100 * float(np.mean(cov[10])),
                     "recall@2": 100 * float(np.mean(rec[2])),
                     "recall@5": 100 * float(np.mean(rec[5]))}
        if f"{name} ms" in rows[0]:
            ms = [row[f"{name} ms"] for row in rows]
            out[name]["read_ms_p50"] = float(np.median(ms))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", nargs="?", default=str(Path(__file__).resolve().parents[2] / "shared"
                                                   / "data" / "2wikimultihopqa"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--frameworks", nargs="+", default=["haystack", "llamaindex", "langchain"])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore", DeprecationWarning)

    ds = load_dataset("2wikimultihopqa", args.data)
    questions = [q for q in ds.questions if q.gold_sessions][:args.limit]
    units = list(ds.units)
    embedder = CachedEmbedder(get_embedder(), default_cache_dir())
    vectors = np.asarray(embedder.encode([u.text for u in units]), dtype=np.float32)
    qvecs = np.asarray(embedder.encode([q.text for q in questions]), dtype=np.float32)
    V = Vectors([u.text for u in units] + [q.text for q in questions],
                list(vectors) + list(qvecs), embedder)
    build = {"haystack": haystack_reads, "llamaindex": llamaindex_reads,
             "langchain": langchain_reads}
    report = {"dataset": "2wikimultihopqa", "n": len(questions), "pool": POOL,
              "tuned_on_first": TUNED_ON, "embedder": "all-MiniLM-L6-v2-int8",
              "native": "each framework's own dense top K", "frameworks": {}}
    for name in args.frameworks:
        t = time.perf_counter()
        read = build[name](units, vectors, V)
        rows = [read(q.text) for q in questions]
        held = [(r, q) for i, (r, q) in enumerate(zip(rows, questions)) if i >= TUNED_ON]
        report["frameworks"][name] = {
            "all": scores(rows, questions),
            "held_out": scores([r for r, _ in held], [q for _, q in held]) if held else None,
            "seconds": time.perf_counter() - t}
        print(f"{name}: {len(rows)} questions, {time.perf_counter() - t:.0f} s")
        for part in ("all", "held_out"):
            for read_name, m in (report["frameworks"][name][part] or {}).items():
                print(f"  {part:8s} {read_name:14s} " + "  ".join(
                    f"{k} {v:5.1f}" for k, v in m.items()))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
