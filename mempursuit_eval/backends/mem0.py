"""A real Mem0 store for ``mempursuit eval --framework mem0`` (the harness's ``StoreBackend``).

* ``build``: one ``mem0.Memory`` (Qdrant local in ``workdir`` by default; FAISS or Chroma on
  request), every unit added as a raw memory (``infer=False`` semantics) with
  ``user_id = unit.group``, backdated ``created_at = unit.timestamp`` and metadata ``uid``,
  ``session_id``, ``source_ids``, ``speaker`` and ``title`` (a titled unit's). Written with :func:`mempursuit_eval.backends.mem0_bulk.add_bulk`
  (batched, same payload as ``Memory.add``, no history rows: Mem0 commits one SQLite
  transaction per history row, ~18 ms each here, and search never reads them);
  ``bulk=False`` uses ``Memory.add`` one by one.
* The harness's embedder is Mem0's embedder: it is wrapped as a Mem0 ``EmbeddingBase`` and set
  as ``memory.embedding_model``, so stored and query vectors are the harness's vectors.
* ``pool``: Mem0's own retrieval step for ``filters={"user_id": group}``, ``limit=size`` and
  ``threshold`` (Mem0's default 0.1), with the stored vectors read back from the store and the
  query vector Mem0 computed (:func:`mempursuit_mem0.search.collect_pool`).

Signals: exactly what the adapter hands a policy (:func:`mempursuit_mem0.search.candidate_pool`):
Mem0's own per-item scores (``dense`` = semantic, ``bm25``, ``entity``; offline, Mem0 has no
BM25 on Qdrant, so ``bm25`` is zeros there), ``timestamps`` (``created_at``), ``texts``,
``speakers`` (the ``speaker`` metadata), ``session_ids`` (the ``session_id`` metadata the
build writes, as a user's own ``metadata`` would carry it) and the pool's tf-idf features.
``dataset_signals=True`` (``--dataset-signals``) puts the benchmark's own session ids and
speakers over them; ``lexical=True`` adds the harness's BM25 / tf-idf over the whole group
(``bm25_group``, ``sparse``, ``query_sparse``, ``sparse_terms``), which no adapter hands over.
"""

from __future__ import annotations

import functools
import logging
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size,
                                  pool_from_candidates)
from mempursuit_core.lexical import LexicalIndex

__all__ = ["Mem0Backend", "HarnessEmbedding"]

logger = logging.getLogger("mempursuit_mem0")

_UID_NAMESPACE = uuid.UUID("6f1c3c1e-5b8e-4a53-9a55-6d656d307075")
STORES = ("qdrant", "faiss", "chroma")


def memory_id_for(uid: str) -> str:
    """The (stable) Mem0 memory id of a harness unit."""
    return str(uuid.uuid5(_UID_NAMESPACE, uid))


def _embedding_base():
    from mem0.embeddings.base import EmbeddingBase

    return EmbeddingBase


def HarnessEmbedding(embedder: Embedder, *, dims: int | None = None):
    """Wrap a harness :class:`Embedder` as a Mem0 embedder (``embed`` / ``embed_batch``).

    ``prefill(text, vector)`` lets the next ``embed(text, "search")`` return a vector the
    harness already computed with the same embedder (the value is identical; it only saves
    the work).
    """
    from mem0.configs.embeddings.base import BaseEmbedderConfig

    base = _embedding_base()

    class _HarnessEmbedding(base):
        def __init__(self):
            super().__init__(BaseEmbedderConfig(embedding_dims=dims or int(embedder.dim)))
            self.harness_embedder = embedder
            self._prefilled: dict[str, Any] = {}

        def prefill(self, text: str, vector) -> None:
            self._prefilled[text] = np.asarray(vector, dtype=np.float32).reshape(-1).tolist()

        def embed(self, text, memory_action=None):
            if memory_action == "search" and text in self._prefilled:
                return self._prefilled.pop(text)
            vec = np.asarray(self.harness_embedder.encode([text]), dtype=np.float32)[0]
            return vec.tolist()

        def embed_batch(self, texts, memory_action="add"):
            if not texts:
                return []
            vecs = np.asarray(self.harness_embedder.encode(list(texts)), dtype=np.float32)
            return vecs.tolist()

    return _HarnessEmbedding()


class Mem0Backend:
    """Mem0 as an evaluation store (see the module docstring).

    Parameters
    ----------
    store : {"qdrant", "faiss", "chroma"}
        Mem0 vector store, kept in the harness's ``workdir``.
    threshold : float
        Mem0's search threshold on the semantic score (Mem0's default 0.1).
    bulk : bool
        Build with :func:`add_bulk` (default) or ``Memory.add`` per unit.
    lexical : bool
        Attach the harness's group-wide lexical features to pools (see the module docstring;
        not what the adapter hands over).
    dataset_signals : bool
        Put the benchmark's own session ids and speakers over the adapter's signals.
    native : str, optional
        Only Mem0's own order exists here; ``"dense"`` / ``"mem0"`` are accepted, anything
        else is an error (Mem0's BM25 needs a hub model offline).
    """

    #: Mem0's own loggers, held back while the harness builds its fresh store ("Resetting all
    #: memories", notes about optional packages).
    loggers = ("mem0",)
    option_constraints = {"store": STORES}

    def __init__(self, store: str = "qdrant", *, threshold: float = 0.1, bulk: bool = True,
                 lexical: bool = False, native: str | None = None, batch_size: int = 256,
                 dataset_signals: bool = False):
        if store not in STORES:
            raise ValueError(f"store must be one of {STORES}, got {store!r}")
        if native not in (None, "dense", "mem0"):
            raise ValueError(
                f"the mem0 backend's native order is Mem0's own combined score; got native={native!r}. "
                "Mem0 adds BM25 only where its store has a keyword index (Qdrant needs fastembed's "
                "Qdrant/bm25 model from the hub), so a 'hybrid' order cannot be built offline here"
            )
        self.store = store
        self.threshold = float(threshold)
        self.bulk = bool(bulk)
        self.lexical = bool(lexical)
        self.dataset_signals = bool(dataset_signals)
        self.batch_size = int(batch_size)
        self.name = f"mem0-{store}"
        self.memory = None
        self._units: dict[str, MemoryUnit] = {}
        self._group_texts: dict[str, list[str]] = {}
        self._group_index: dict[str, dict[str, int]] = {}
        self._lexical: dict[str, Any] = {}

    # ------------------------------------------------------------------ construction

    def _config(self, workdir: Path, dim: int) -> dict:
        collection = "mempursuit_eval"
        if self.store == "qdrant":
            vs = {"provider": "qdrant", "config": {"path": str(workdir / "qdrant"), "on_disk": True,
                                                     "collection_name": collection,
                                                     "embedding_model_dims": dim}}
        elif self.store == "faiss":
            vs = {"provider": "faiss", "config": {"path": str(workdir / "faiss"),
                                                    "collection_name": collection,
                                                    "embedding_model_dims": dim,
                                                    "distance_strategy": "cosine"}}
        else:
            vs = {"provider": "chroma", "config": {"path": str(workdir / "chroma"),
                                                     "collection_name": collection}}
        return {
            "vector_store": vs,
            # Placeholder, replaced by the harness's embedder right after construction.
            "embedder": {"provider": "openai", "config": {"api_key": "unused-offline",
                                                          "embedding_dims": dim}},
            # Never called: memories are added raw (infer=False semantics).
            "llm": {"provider": "openai", "config": {"api_key": "unused-offline"}},
            "history_db_path": str(workdir / "history.db"),
        }

    def _open(self, embedder: Embedder, workdir: Path):
        os.environ.setdefault("MEM0_TELEMETRY", "False")
        from mem0 import Memory

        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        dim = int(embedder.dim)
        memory = Memory.from_config(self._config(workdir, dim))
        memory.embedding_model = HarnessEmbedding(embedder, dims=dim)
        self.memory = memory
        return memory

    def _remember(self, units: Sequence[MemoryUnit]) -> None:
        self._units = {}
        self._group_texts = {}
        self._group_index = {}
        self._lexical = {}
        for u in units:
            if u.uid in self._units:
                raise ValueError(f"duplicate unit uid {u.uid!r}")
            self._units[u.uid] = u
            idx = self._group_index.setdefault(u.group, {})
            idx[u.uid] = len(idx)
            self._group_texts.setdefault(u.group, []).append(u.text)

    @staticmethod
    def _metadata(u: MemoryUnit) -> dict:
        meta = {"uid": u.uid, "session_id": u.session_id, "source_ids": list(u.source_ids)}
        if u.speaker is not None:
            meta["speaker"] = u.speaker
        if u.timestamp:
            meta["created_at"] = u.timestamp
        if u.title is not None:  # the adapter's default title key: its titles and second read
            meta["title"] = u.title
        return meta

    # ------------------------------------------------------------------ StoreBackend

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        """Write every unit into a fresh Mem0 store in ``workdir``."""
        from .mem0_bulk import add_bulk

        units = list(units)
        self._remember(units)
        memory = self._open(embedder, workdir)
        memory.reset()  # a rebuild in a used workdir starts empty (ids are stable per uid)
        if self.bulk:
            texts = [u.text for u in units]
            add_bulk(
                memory, texts, user_id=[u.group for u in units],
                metadata=[self._metadata(u) for u in units],
                ids=[memory_id_for(u.uid) for u in units],
                batch_size=self.batch_size, history=False, progress=progress,
            )
        else:
            for u in units:
                memory.add(u.text, user_id=u.group, metadata=self._metadata(u), infer=False)
                if progress is not None:
                    progress(1)

    def load_existing(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path) -> bool:
        """Reopen a store that ``build`` wrote into ``workdir`` before (True when reused)."""
        units = list(units)
        self._remember(units)
        memory = self._open(embedder, workdir)
        try:
            if units:
                probe = memory.vector_store.get(memory_id_for(units[-1].uid))
                if probe is None:
                    return False
        except Exception:  # an unreadable store is rebuilt
            return False
        return True

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """Mem0's native pool of ``size`` for ``query`` within ``group`` (``user_id``)."""
        from mempursuit_mem0.search import collect_pool

        size = checked_pool_size(self.memory is not None, size)
        query = query.strip()
        if query_vector is not None:
            self.memory.embedding_model.prefill(query, query_vector)
        prepared = collect_pool(self.memory, query, {"user_id": group}, size,
                                threshold=self.threshold)
        if prepared is None:
            d = int(self.memory.embedding_model.config.embedding_dims)
            qv = (np.asarray(query_vector, dtype=np.float64) if query_vector is not None
                  else np.asarray(self.memory.embedding_model.embed(query, "search")))
            return Pool([], vectors=np.zeros((0, d), dtype=np.float32), query_vector=qv,
                        native_scores=np.zeros(0))
        return self._pool_from(prepared, group, query,
                               [self._uid_of(item) for item in prepared.items])

    @staticmethod
    def _uid_of(item: Any) -> str:
        """The unit of a Mem0 result (a pool's or the second read's): its ``uid`` metadata."""
        uid = (item.get("metadata") or {}).get("uid")
        if uid is None:
            raise ValueError(f"memory {item.get('id')} has no 'uid' in its metadata")
        return uid

    def _pool_from(self, prepared: Any, group: str, query: str, uids: list[str]) -> Pool:
        """The harness's Pool for the adapter's pool; ``uids`` are its units' ids."""
        producers = None
        if self.lexical:
            lexical = functools.lru_cache(maxsize=1)(
                lambda: self._lexical_signals(group, query, uids))
            producers = {key: (lambda key=key: lexical()[key])
                         for key in ("bm25_group", "sparse", "query_sparse", "sparse_terms")}
        return pool_from_candidates(prepared, uids, units=self._units,
                                    dataset_signals=self.dataset_signals, producers=producers,
                                    uid_of=self._uid_of)

    def _lexical_signals(self, group: str, query: str, uids: list[str]) -> dict:
        index = self._lexical.get(group)
        if index is None:
            index = LexicalIndex(self._group_texts[group])
            self._lexical[group] = index
        rows = np.asarray([self._group_index[group][u] for u in uids], dtype=np.int64)
        sparse, qsparse, terms = index.tfidf(rows, query)
        return {"bm25_group": index.bm25(query)[rows], "sparse": sparse,
                "query_sparse": qsparse, "sparse_terms": terms}

    def close(self) -> None:
        memory, self.memory = self.memory, None
        if memory is not None:
            try:
                client = getattr(memory.vector_store, "client", None)
                if client is not None and hasattr(client, "close"):
                    client.close()
            finally:
                memory.close()

    def __repr__(self) -> str:
        return f"<Mem0Backend store={self.store!r} threshold={self.threshold}>"
