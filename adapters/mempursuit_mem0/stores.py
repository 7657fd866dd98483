"""Read the **stored** vectors of Mem0 memories back from the vector store, by memory id.

None of Mem0's vector-store wrappers return vectors from ``search``; each backend keeps them
in its own client object, so one small reader per backend fetches them by id:

* Qdrant (local ``path=`` / ``":memory:"`` and server): ``client.retrieve(ids, with_vectors=True)``
  (the dense vector is the unnamed one, ``""``; the ``"bm25"`` sparse vector comes along when
  Mem0 wrote one).
* FAISS: ``index.reconstruct_batch(positions)`` through the inverse of Mem0's ``index_to_id``.
* Chroma: ``collection.get(ids, include=["embeddings"])``.
* pgvector: ``SELECT id, vector_send(vector) ... WHERE id = ANY(...)`` (binary; psycopg2:
  ``vector::real[]``).

Readers are looked up through the vector store's class (and its base classes), so a subclass
of a supported store works; :func:`register_vector_reader` adds a reader for another store.
Nothing here imports Mem0 or a store client: the readers use the objects Mem0 built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_core import adapter as core

__all__ = [
    "StoredVectors",
    "VectorAccessError",
    "fetch_stored_vectors",
    "register_vector_reader",
    "supported_stores",
]


class VectorAccessError(RuntimeError):
    """The pool's stored vectors could not be read (unsupported store, missing or bad vector)."""


@dataclass
class StoredVectors:
    """Vectors read from the store for a list of memory ids.

    Attributes
    ----------
    ids : list of str, length P
        The memory ids asked for, in the order asked.
    dense : ndarray of float32, shape (P, d)
        Row ``i`` is the stored dense vector of ``ids[i]``.
    sparse : list of (ndarray of int64, ndarray of float32) or None
        Stored sparse (BM25) vectors aligned with ``ids`` (``None`` entries where a memory has
        none), or ``None`` when the store keeps no sparse vectors.
    """

    ids: list[str]
    dense: np.ndarray
    sparse: list[tuple[np.ndarray, np.ndarray] | None] | None = None


Reader = Callable[[Any, list[str]], "tuple[dict[str, Any], dict[str, Any] | None]"]


def register_vector_reader(class_path: str, reader: Reader) -> None:
    """Register ``reader(vector_store, ids) -> (dense_by_id, sparse_by_id_or_None)``.

    ``class_path`` is ``"module.ClassName"`` of a Mem0 vector-store class; subclasses match too.
    ``dense_by_id`` maps a memory id (``str``) to its stored vector; ids absent from it are
    reported as missing. Readers live in the core's one registry
    (:func:`mempursuit_core.adapter.register_vector_reader`).
    """
    core.register_vector_reader(class_path, reader, framework="mem0")


def supported_stores() -> list[str]:
    """Class paths of the vector stores whose stored vectors can be read."""
    return core.supported_stores("mem0")


def _reader_for(vector_store: Any) -> Reader:
    reader = core.vector_reader_for(vector_store, "mem0")
    if reader is not None:
        return reader
    names = ", ".join(p.rsplit(".", 1)[1] for p in supported_stores())
    raise VectorAccessError(
        f"the {type(vector_store).__module__}.{type(vector_store).__qualname__} vector store has "
        f"no stored-vector reader (supported: {names}); register one with "
        "mempursuit_mem0.register_vector_reader"
    )


def is_qdrant(vector_store: Any) -> bool:
    """Whether ``vector_store`` is Mem0's Qdrant store (or a subclass read as one)."""
    return core.vector_reader_for(vector_store, "mem0") is _read_qdrant


def fetch_stored_vectors(vector_store: Any, ids: Sequence[str]) -> StoredVectors:
    """Read the stored vectors of ``ids`` from a Mem0 vector store.

    Parameters
    ----------
    vector_store : mem0.vector_stores.base.VectorStoreBase
        ``memory.vector_store``.
    ids : sequence of str, length P
        Memory ids (as Mem0's search results give them).

    Returns
    -------
    StoredVectors
        ``dense`` has shape ``(P, d)``, float32, rows aligned with ``ids``.

    Raises
    ------
    VectorAccessError
        The store has no reader, a memory has no stored vector, or a vector is empty,
        non-finite or of another dimension than the rest.
    """
    ids = [str(i) for i in ids]
    reader = _reader_for(vector_store)
    try:
        dense_by_id, sparse_by_id = reader(vector_store, ids)
    except VectorAccessError:
        raise
    except Exception as exc:  # a client error, a changed internal attribute, ...
        raise VectorAccessError(
            f"reading stored vectors from {type(vector_store).__name__} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    missing = [i for i in ids if dense_by_id.get(i) is None]
    if missing:
        shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
        raise VectorAccessError(
            f"{len(missing)} of {len(ids)} pool memories have no stored vector in "
            f"{type(vector_store).__name__} ({shown})"
        )
    if not ids:
        return StoredVectors([], np.zeros((0, 0), dtype=np.float32), None)
    rows = [np.asarray(dense_by_id[i], dtype=np.float32).reshape(-1) for i in ids]
    d = rows[0].shape[0]
    for i, row in zip(ids, rows):
        if row.shape[0] != d or d == 0:
            raise VectorAccessError(
                f"stored vector of memory {i} has dimension {row.shape[0]}, others have {d}"
            )
    dense = np.stack(rows)
    bad = ~np.isfinite(dense).all(axis=1)
    if bad.any():
        raise VectorAccessError(
            f"stored vector of memory {ids[int(np.argmax(bad))]} has NaN or infinite values"
        )
    sparse = None
    if sparse_by_id is not None:
        sparse = [sparse_by_id.get(i) for i in ids]
    return StoredVectors(ids, dense, sparse)


# --------------------------------------------------------------------------- Qdrant


def _sparse_pair(vec: Any) -> tuple[np.ndarray, np.ndarray]:
    return (np.asarray(vec.indices, dtype=np.int64), np.asarray(vec.values, dtype=np.float32))


def _read_qdrant(vs: Any, ids: list[str]):
    points = vs.client.retrieve(
        collection_name=vs.collection_name, ids=ids, with_vectors=True, with_payload=False
    )
    dense: dict[str, Any] = {}
    sparse: dict[str, Any] = {}
    has_sparse_slot = bool(getattr(vs, "_has_bm25_slot", False))
    for p in points:
        key = str(p.id)
        vec = p.vector
        if isinstance(vec, dict):
            # Mem0 writes named vectors: "" = dense, "bm25" = sparse (when its encoder ran).
            found = vec.get("")
            if found is None:
                named = [v for v in vec.values() if isinstance(v, (list, tuple, np.ndarray))]
                if len(named) > 1:
                    raise VectorAccessError(
                        f"Qdrant point {key} has dense vectors {sorted(vec)}; expected Mem0's "
                        "single unnamed dense vector"
                    )
                found = named[0] if named else None
            if found is not None:  # a point whose dense vector was deleted counts as missing
                dense[key] = found
            if vec.get("bm25") is not None:
                sparse[key] = _sparse_pair(vec["bm25"])
        elif vec is not None:
            dense[key] = vec
    return dense, (sparse if has_sparse_slot else None)


# --------------------------------------------------------------------------- FAISS

_INVERSE_ATTR = "_mempursuit_id_to_position"


def _faiss_positions(vs: Any, ids: list[str]) -> list[int | None]:
    """Positions of ``ids`` in the FAISS index, via a cached inverse of ``vs.index_to_id``."""
    index_to_id = vs.index_to_id
    cached = getattr(vs, _INVERSE_ATTR, None)
    if cached is None or cached[0] is not index_to_id or cached[1] != len(index_to_id):
        cached = (index_to_id, len(index_to_id), {str(v): int(k) for k, v in index_to_id.items()})
        setattr(vs, _INVERSE_ATTR, cached)
    positions = [cached[2].get(i) for i in ids]
    # The cache is keyed by identity and size; check each hit against the live mapping so an
    # in-place edit that keeps the size can never hand back another memory's vector.
    if any(p is not None and index_to_id.get(p) != i for p, i in zip(positions, ids)):
        cached = (index_to_id, len(index_to_id), {str(v): int(k) for k, v in index_to_id.items()})
        setattr(vs, _INVERSE_ATTR, cached)
        positions = [cached[2].get(i) for i in ids]
    return positions


def _read_faiss(vs: Any, ids: list[str]):
    if vs.index is None:
        raise VectorAccessError("the FAISS collection is not initialised (index is None)")
    positions = _faiss_positions(vs, ids)
    found = [(i, p) for i, p in zip(ids, positions) if p is not None and p < vs.index.ntotal]
    dense: dict[str, Any] = {}
    if found:
        rows = vs.index.reconstruct_batch(np.asarray([p for _, p in found], dtype=np.int64))
        for (i, _), row in zip(found, rows):
            dense[i] = row
    return dense, None


# --------------------------------------------------------------------------- Chroma


def _read_chroma(vs: Any, ids: list[str]):
    got = vs.collection.get(ids=ids, include=["embeddings"])
    embeddings = got.get("embeddings")
    if embeddings is None:
        embeddings = []
    return {str(i): e for i, e in zip(got["ids"], embeddings)}, None


# --------------------------------------------------------------------------- pgvector


def _decode_vector_send(buf: Any) -> np.ndarray:
    """pgvector's binary ``vector`` format: int16 dim, int16 unused, dim big-endian float4."""
    raw = bytes(buf)
    dim = int.from_bytes(raw[:2], "big")
    if len(raw) != 4 + 4 * dim:
        raise VectorAccessError(f"unexpected pgvector binary value of {len(raw)} bytes (dim {dim})")
    return np.frombuffer(raw, dtype=">f4", count=dim, offset=4).astype(np.float32)


def _read_pgvector(vs: Any, ids: list[str]):
    import importlib
    import sys

    store_module = sys.modules.get(type(vs).__module__)
    psycopg3 = getattr(store_module, "PSYCOPG_VERSION", None) == 3
    sql = importlib.import_module("psycopg.sql" if psycopg3 else "psycopg2.sql")
    table = sql.Identifier(vs.collection_name)
    with vs._get_cursor() as cur:
        if psycopg3:
            # Binary transfer of pgvector's own send format: ~10x faster than a text array.
            cur.execute(
                sql.SQL("SELECT id::text, vector_send(vector) FROM {} WHERE id = ANY(%s::uuid[])").format(table),
                (list(ids),), binary=True,
            )
            return {str(r[0]): (None if r[1] is None else _decode_vector_send(r[1]))
                    for r in cur.fetchall()}, None
        cur.execute(
            sql.SQL("SELECT id::text, vector::real[] FROM {} WHERE id = ANY(%s::uuid[])").format(table),
            (list(ids),),
        )
        return {str(r[0]): r[1] for r in cur.fetchall()}, None


register_vector_reader("mem0.vector_stores.qdrant.Qdrant", _read_qdrant)
register_vector_reader("mem0.vector_stores.faiss.FAISS", _read_faiss)
register_vector_reader("mem0.vector_stores.chroma.ChromaDB", _read_chroma)
register_vector_reader("mem0.vector_stores.pgvector.PGVector", _read_pgvector)
