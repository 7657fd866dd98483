"""A real SimpleMem store for ``mempursuit eval --framework simplemem`` (a ``StoreBackend``).

* ``build``: one LanceDB table per group (SimpleMem has no user scoping), written by SimpleMem's
  own ``VectorStore.add_entries``: one ``MemoryEntry`` per unit (``entry_id = unit.uid``,
  ``lossless_restatement = unit.text``, ``timestamp``, ``persons = [speaker]``). The harness's
  embedder stands in for SimpleMem's ``EmbeddingModel`` (same methods), so stored and query
  vectors are the harness's vectors.
* ``pool``: SimpleMem's retrieval without LLM planning (``HybridRetriever`` with
  ``enable_planning=False`` and ``semantic_top_k = size``: one semantic search), the stored
  vectors read back from LanceDB by :class:`mempursuit_simplemem.MemPursuitRetriever`.
  Planning needs an LLM and is not part of an offline evaluation.

Signals: exactly what the adapter hands a policy (:meth:`mempursuit_simplemem.MemPursuitRetriever.pool_from`):
``dense`` (cosine of each stored vector with the query vector, also the native scores),
``texts``, ``query_text``, ``timestamps``, tf-idf features and ``lexical``: SimpleMem's
keyword-channel score of each pool entry (LanceDB full-text BM25 over the group's table, the
question as the keyword string, as :func:`mempursuit_simplemem.keyword_scores`), computed only
when a policy reads it. ``build`` creates the native full-text index that channel needs.
SimpleMem keeps no session id and no writer (the build's ``persons`` / ``topic`` fields are not
read back); ``dataset_signals=True`` (``--dataset-signals``) puts the benchmark's own session
ids and speakers over the adapter's signals.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.backends.framework_store import FrameworkStore
from mempursuit_eval.base import Embedder, MemoryUnit

from mempursuit_simplemem.adapter import MemPursuitRetriever, ensure_fts_index

__all__ = ["HarnessEmbeddingModel", "SimpleMemBackend"]


class HarnessEmbeddingModel:
    """A harness :class:`Embedder` with SimpleMem's ``EmbeddingModel`` methods.

    The last query embedding is kept (SimpleMem's search and the adapter both embed the query),
    and ``prefill(text, vector)`` sets it to a vector the harness already computed with the
    same embedder (same value, less work).
    """

    model_type = "mempursuit-harness"
    supports_query_prompt = False

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.model_name = getattr(embedder, "name", "harness")
        self.dimension = int(embedder.dim)
        self._last_query: tuple[str, np.ndarray] | None = None

    def prefill(self, text: str, vector: Any) -> None:
        self._last_query = (text, np.asarray(vector, dtype=np.float32).reshape(-1))

    def encode(self, texts, is_query: bool = False) -> np.ndarray:
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        single_query = is_query and len(texts) == 1
        if single_query and self._last_query is not None and self._last_query[0] == texts[0]:
            return self._last_query[1][None, :].copy()
        out = np.asarray(self.embedder.encode(texts), dtype=np.float32)
        if single_query:
            self._last_query = (texts[0], out[0].copy())
        return out

    def encode_single(self, text: str, is_query: bool = False) -> np.ndarray:
        return self.encode([text], is_query=is_query)[0]

    def encode_query(self, queries) -> np.ndarray:
        return self.encode(queries, is_query=True)

    def encode_documents(self, documents) -> np.ndarray:
        return self.encode(documents, is_query=False)


def _vector_store_class():
    try:  # simplemem 0.1.0 (the registry)
        from simplemem.database.vector_store import VectorStore
    except ImportError:  # the repository's newer layout
        from simplemem.core.database.vector_store import VectorStore
    return VectorStore


def _entry_class():
    try:
        from simplemem.models.memory_entry import MemoryEntry
    except ImportError:
        from simplemem.core.models.memory_entry import MemoryEntry
    return MemoryEntry


def _retriever_class():
    from simplemem.core.hybrid_retriever import HybridRetriever

    return HybridRetriever


class SimpleMemBackend(FrameworkStore):
    """SimpleMem (LanceDB through its ``VectorStore``) as an evaluation store.

    Parameters
    ----------
    batch_size : int
        Units per ``add_entries`` call.
    quiet : bool
        Swallow SimpleMem's progress prints while building and reading.
    native : str, optional
        Only SimpleMem's own (semantic) order exists here: ``"dense"`` or ``"simplemem"``.
    dataset_signals : bool
        Put the benchmark's own session ids and speakers over the adapter's signals.
    """

    framework, native_order = "simplemem", "SimpleMem's semantic search"

    def __init__(self, *, batch_size: int = 256, quiet: bool = True, native: str | None = None,
                 dataset_signals: bool = False):
        super().__init__(batch_size=batch_size, native=native, dataset_signals=dataset_signals)
        self.quiet = bool(quiet)

    def _reset(self) -> None:
        self._stores: dict[str, Any] = {}
        self._model: HarnessEmbeddingModel | None = None

    def _silence(self):
        return contextlib.redirect_stdout(io.StringIO()) if self.quiet else contextlib.nullcontext()

    @staticmethod
    def table_name(group: str) -> str:
        return "g_" + hashlib.sha1(group.encode("utf-8")).hexdigest()[:20]

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        VectorStore = _vector_store_class()
        self._embedder, self._model = embedder, HarnessEmbeddingModel(embedder)
        db_path = str(Path(workdir) / "simplemem_lancedb")
        by_group = self._hold(units)
        with self._silence():
            for group in by_group:
                store = VectorStore(db_path=db_path, embedding_model=self._model,
                                    table_name=self.table_name(group))
                if store.table.count_rows():
                    raise ValueError(f"the LanceDB table for group {group!r} in {db_path} is not "
                                     "empty; use a fresh workdir")
                self._stores[group] = store
            self._write_units(by_group, None, progress)  # SimpleMem embeds the entries
            for store in self._stores.values():
                ensure_fts_index(store)  # SimpleMem's own (Tantivy) index is gone from lancedb

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: None) -> None:
        MemoryEntry = _entry_class()
        self._stores[group].add_entries([
            MemoryEntry(entry_id=u.uid, lossless_restatement=u.text, timestamp=u.timestamp,
                        persons=[u.speaker] if u.speaker else [], topic=u.session_id)
            for u in units])

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None):
        """SimpleMem's native pool (one semantic search of ``size``) within ``group``."""
        if query_vector is not None:
            self._model.prefill(query, query_vector)
        retriever = _retriever_class()(llm_client=None, vector_store=self._stores[group],
                                       semantic_top_k=size, enable_planning=False,
                                       enable_reflection=False)
        wrapper = MemPursuitRetriever(retriever, pool=size, policy="native", strict=True)
        with self._silence():
            return wrapper.pool(query)

    def _uid(self, entry: Any) -> str:
        return entry.entry_id
