"""A real LangGraph store for ``mempursuit eval --framework langgraph`` (a ``StoreBackend``).

``--backend-opt store=memory|sqlite|postgres`` (default ``sqlite``) picks LangGraph's
``InMemoryStore``, ``SqliteStore`` (sqlite-vec, a file in the work directory) or
``PostgresStore`` (pgvector, exact search unless ``--backend-opt ann=hnsw``;
``--backend-opt conninfo=postgresql://...``, else a PostgreSQL started from the ``pgserver``
wheel in the work directory and stopped on close).

* ``build``: one namespace per group, ``("mempursuit", "g<n>")``; one item per unit, key the
  unit id, value ``{"text", "session", "speaker", "timestamp"}`` as an application would store
  a dialogue turn (plus ``"title"`` for a unit with one: the adapter's ``titles`` and second
  read); the store's index embeds ``text`` with the harness's embedder (its own
  embedding function, ``index={"dims", "embed", "fields": ["text"]}``).
* ``pool``: exactly :meth:`mempursuit_langgraph.MemPursuitStore.pool`, the read every wrapped
  search makes: the store's own search with ``limit = size``, the stored vectors read back from
  the store, the query vector the store computed, and the adapter's signals (``texts``,
  ``timestamps``, ``session_ids``, ``speakers`` from the values); ``dataset_signals=True``
  (``--dataset-signals``) puts the benchmark's own session ids and speakers over them.
"""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.backends.framework_store import FrameworkStore
from mempursuit_eval.base import Embedder, MemoryUnit

__all__ = ["LangGraphBackend"]

STORES = ("memory", "sqlite", "postgres")


def _sqlite_module() -> Any:
    """``sqlite3``, or ``pysqlite3`` where this Python's sqlite3 cannot load extensions
    (sqlite-vec needs ``enable_load_extension``; pyenv builds often lack it)."""
    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    try:
        from pysqlite3 import dbapi2
    except ImportError:
        raise RuntimeError("this Python's sqlite3 cannot load extensions (sqlite-vec): pip "
                           "install pysqlite3-binary, or use --backend-opt store=memory") from None
    return dbapi2


class _HarnessEmbed:
    """The harness's embedder as LangGraph's embedding function (texts -> list of vectors)."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.ready: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        texts = list(texts)
        todo = [t for t in texts if t not in self.ready]
        fresh = dict(zip(todo, self.embedder.encode(todo))) if todo else {}
        return [np.asarray(self.ready[t] if t in self.ready else fresh[t],
                           dtype=np.float32).tolist() for t in texts]


class LangGraphBackend(FrameworkStore):
    """LangGraph's own store (memory, SQLite or PostgreSQL) as an evaluation store.

    Parameters
    ----------
    store : str
        ``"memory"``, ``"sqlite"`` (default) or ``"postgres"``.
    conninfo : str, optional
        A PostgreSQL connection string for ``store=postgres`` (else a pgserver one).
    ann : str
        The pgvector index for ``store=postgres``: ``"flat"`` (default: exact search, whole
        pools), or LangGraph's default ``"hnsw"`` (pools cut at ``hnsw.ef_search`` = 40).
    batch_size : int
        Units per ``store.batch`` of puts.
    native : str, optional
        Only the store's own (dense cosine) order exists: ``"dense"`` or ``"langgraph"``.
    dataset_signals : bool
        Put the benchmark's own ``session_ids`` and ``speakers`` over the adapter's
        (``--dataset-signals``).
    """

    framework, native_order = "langgraph", "the store's dense search"

    def __init__(self, *, store: str = "sqlite", conninfo: str | None = None,
                 ann: str = "flat", batch_size: int = 256, native: str | None = None,
                 dataset_signals: bool = False):
        if store not in STORES:
            raise ValueError(f"the langgraph backend's store is one of {', '.join(STORES)}; "
                             f"got store={store!r}")
        super().__init__(batch_size=batch_size, native=native, dataset_signals=dataset_signals)
        if ann not in ("flat", "hnsw", "ivfflat"):
            raise ValueError(f"ann must be flat, hnsw or ivfflat (the pgvector index); got {ann!r}")
        self.kind, self.conninfo, self.ann = store, conninfo, ann
        self.name = f"langgraph-{store}"

    def _reset(self) -> None:
        self._store: Any = None
        self._reader: Any = None
        self._embed: _HarnessEmbed | None = None
        self._namespaces: dict[str, tuple[str, str]] = {}
        self._closers: list[Callable[[], None]] = []

    def _open(self, dim: int, workdir: Path) -> Any:
        # SqliteStore reads "text_fields", InMemoryStore and PostgresStore "fields"
        index = {"dims": dim, "embed": self._embed, "fields": ["text"], "text_fields": ["text"]}
        if self.kind == "memory":
            from langgraph.store.memory import InMemoryStore

            return InMemoryStore(index=index)
        if self.kind == "sqlite":
            from langgraph.store.sqlite import SqliteStore

            conn = _sqlite_module().connect(str(workdir / "langgraph.sqlite"),
                                            check_same_thread=False, isolation_level=None)
            self._closers.append(conn.close)
            store = SqliteStore(conn, index=index)
        else:
            from langgraph.store.postgres import PostgresStore
            from psycopg import Connection
            from psycopg.rows import dict_row

            conninfo = self.conninfo or self._pgserver(workdir)
            conn = Connection.connect(conninfo, autocommit=True, prepare_threshold=0,
                                      row_factory=dict_row)
            self._closers.insert(0, conn.close)
            # exact search: with LangGraph's default HNSW index pgvector returns at most
            # hnsw.ef_search (40) rows, so a P=200 pool would hold about 40 (ann=hnsw for that)
            store = PostgresStore(conn, index={**index, "ann_index_config": {"kind": self.ann}})
        store.setup()
        return store

    def _pgserver(self, workdir: Path) -> str:
        import pgserver

        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            server = pgserver.get_server(str(workdir / "pg"), cleanup_mode="stop")
        self._closers.append(server.cleanup)
        return server.get_uri()

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        from mempursuit_langgraph import MemPursuitStore

        self._embedder, self._embed = embedder, _HarnessEmbed(embedder)
        self._store = self._open(int(embedder.dim), Path(workdir))
        self._reader = MemPursuitStore(self._store, policy="native", strict=True)
        by_group = self._hold(units)
        self._namespaces = {group: ("mempursuit", f"g{n}") for n, group in enumerate(by_group)}
        self._write_units(by_group, None, progress)  # the store's index embeds the texts

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: None) -> None:
        from langgraph.store.base import PutOp

        self._store.batch([PutOp(self._namespaces[group], u.uid, {
            "text": u.text, "session": u.session_id, "speaker": u.speaker,
            "timestamp": u.timestamp, **({"title": u.title} if u.title else {})})
            for u in units])

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None):
        """The store's native top-``size`` within ``group``, as the adapter reads it."""
        if query_vector is not None:
            self._embed.ready[query] = np.asarray(query_vector, dtype=np.float32)
        try:
            got = self._reader.pool(self._namespaces[group], query, size=size)
        finally:
            self._embed.ready.pop(query, None)
        if got.unscored:
            raise RuntimeError(f"{len(got.unscored)} pool items have no stored vector")
        return got.candidates

    def _uid(self, item: Any) -> str:
        return item.key

    def _release(self) -> None:
        closers, self._closers = self._closers, []
        for close in closers:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                close()
