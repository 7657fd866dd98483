"""Add many raw memories to Mem0 quickly, with exactly what ``Memory.add(..., infer=False)`` stores.

The harness's (it builds the ``mem0`` evaluation store with it): it copies Mem0's private write
path, so it lives here and not in the adapter (``mempursuit_mem0.add_bulk`` before).

``Memory.add(text, user_id=..., infer=False)`` embeds one message at a time and writes one
point per call (the FAISS wrapper even rewrites its whole index and docstore on every insert),
which makes stores of thousands of memories slow to build. :func:`add_bulk` writes the same
records through the same Mem0 objects, batched:

* scope and metadata go through Mem0's own ``_build_filters_and_metadata`` (identity keys in
  ``metadata`` are dropped, ids validated and trimmed), ``role`` is set as for a plain string
  message (``"user"``);
* the payload is built like ``Memory._create_memory`` builds it: ``data``, ``hash`` (MD5 of the
  text), ``created_at`` (kept when given in ``metadata``: backdating), ``updated_at`` =
  ``created_at``, ``text_lemmatized`` (Mem0's ``lemmatize_for_bm25``);
* vectors come from ``memory.embedding_model.embed_batch(texts, "add")`` (or are given);
* rows are written with ``memory.vector_store.insert(vectors, payloads, ids)`` in batches and,
  with ``history=True``, one ``ADD`` row per memory in Mem0's history database.

The integration tests check that a memory added this way has the same payload keys and values
(apart from id and time) as one added by ``Memory.add``.
"""

from __future__ import annotations

import hashlib
import uuid
from copy import deepcopy
from datetime import datetime, timezone
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__all__ = ["add_bulk", "memory_payload"]


def memory_payload(text: str, metadata: Mapping[str, Any], *, role: str = "user") -> dict:
    """The payload Mem0 stores for ``text`` added with ``infer=False`` (see module docstring).

    ``metadata`` is the processed metadata (scope ids included), as Mem0's
    ``_build_filters_and_metadata`` returns it.
    """
    from mem0.utils.lemmatization import lemmatize_for_bm25

    payload = deepcopy(dict(metadata))
    payload["role"] = role
    payload["data"] = text
    payload["hash"] = hashlib.md5(text.encode()).hexdigest()
    if "created_at" not in payload:
        payload["created_at"] = datetime.now(timezone.utc).isoformat()
    payload["updated_at"] = payload["created_at"]
    payload["text_lemmatized"] = lemmatize_for_bm25(text)
    return payload


def add_bulk(
    memory: Any,
    texts: Sequence[str],
    *,
    user_id: str | Sequence[str] | None = None,
    agent_id: str | None = None,
    run_id: str | None = None,
    metadata: Mapping[str, Any] | Sequence[Mapping[str, Any] | None] | None = None,
    vectors: np.ndarray | None = None,
    ids: Sequence[str] | None = None,
    batch_size: int = 256,
    history: bool = True,
    progress: Callable[[int], None] | None = None,
) -> list[str]:
    """Add ``texts`` as raw memories (``infer=False`` semantics), batched.

    Parameters
    ----------
    memory : mem0.Memory or mem0.AsyncMemory
    texts : sequence of str, length n
    user_id : str or sequence of str (length n), optional
        One scope for all, or one per text. At least one of user / agent / run id is needed.
    agent_id, run_id : str, optional
    metadata : dict or sequence of dict (length n), optional
        Stored with each memory; a ``created_at`` here backdates it.
    vectors : ndarray, shape (n, d), optional
        Precomputed embeddings (must come from the memory's embedder to be meaningful); by
        default ``memory.embedding_model.embed_batch`` computes them.
    ids : sequence of str (length n), optional
        Memory ids (UUID strings; Qdrant and pgvector need UUIDs); default: random UUID4s.
    batch_size : int
        Texts embedded and written per call.
    history : bool
        Also write Mem0's history rows (one ``ADD`` per memory), as ``Memory.add`` does.
    progress : callable, optional
        Called with the number of memories written after each batch.

    Returns
    -------
    list of str
        The memory ids, aligned with ``texts``.
    """
    from mem0.memory.main import _build_filters_and_metadata

    n = len(texts)
    if any(not isinstance(t, str) or not t for t in texts):
        raise ValueError("every text must be a non-empty string")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")

    def per_item(value, name):
        if value is None or isinstance(value, (str, Mapping)):
            return [value] * n
        value = list(value)
        if len(value) != n:
            raise ValueError(f"{name} has {len(value)} entries for {n} texts")
        return value

    users = per_item(user_id, "user_id")
    metas = per_item(metadata, "metadata")
    if ids is None:
        ids = [str(uuid.uuid4()) for _ in range(n)]
    else:
        ids = [str(i) for i in ids]
        if len(ids) != n or len(set(ids)) != n:
            raise ValueError("ids must hold one distinct id per text")
    if vectors is not None:
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != n:
            raise ValueError(f"vectors must have shape ({n}, d), got {vectors.shape}")
        if not np.isfinite(vectors).all():
            raise ValueError("vectors contain NaN or infinite values")

    payloads = []
    for text, uid, meta in zip(texts, users, metas):
        processed, _ = _build_filters_and_metadata(
            user_id=uid, agent_id=agent_id, run_id=run_id, input_metadata=dict(meta or {})
        )
        payloads.append(memory_payload(text, processed))

    for start in range(0, n, batch_size):
        stop = min(start + batch_size, n)
        if vectors is None:
            batch_vecs = memory.embedding_model.embed_batch(list(texts[start:stop]), "add")
            if len(batch_vecs) != stop - start:
                raise ValueError(
                    f"embed_batch returned {len(batch_vecs)} vectors for {stop - start} texts"
                )
            batch_vecs = [list(map(float, v)) for v in batch_vecs]
        else:
            batch_vecs = vectors[start:stop].tolist()
        memory.vector_store.insert(
            vectors=batch_vecs, payloads=payloads[start:stop], ids=ids[start:stop]
        )
        if history:
            for mid, payload in zip(ids[start:stop], payloads[start:stop]):
                memory.db.add_history(
                    mid, None, payload["data"], "ADD",
                    created_at=payload.get("created_at"), updated_at=payload.get("updated_at"),
                    actor_id=payload.get("actor_id"), role=payload.get("role"),
                )
        if progress is not None:
            progress(stop - start)
    return ids
