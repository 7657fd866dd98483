"""Your own Mem0 store, read-only: ``mempursuit eval --framework mem0 --mem0-config CONFIG.json
--dataset custom --data QUESTIONS``.

CONFIG.json is the dict you give ``mem0.Memory.from_config`` (the store must be Qdrant: a local
``path`` or a server ``url`` / ``host`` + ``port``). QUESTIONS is a custom data file
(:mod:`mempursuit_eval.datasets.custom`), usually questions only: their ``gold`` ids are the store's
memory ids and their ``group`` is the ``user_id`` they search.

What is read, and how nothing is written:

* The memories (the harness's units) are listed from the collection with Qdrant's ``scroll``:
  unit id = memory id, text = ``data``, group = ``user_id`` (memories without one are left out,
  with a note), session = the payload's ``session_id``, else ``run_id``, else the memory itself,
  timestamp = ``created_at``, speaker = ``speaker`` / ``actor_id``, sources = ``source_ids``
  when the payload has that list, else the memory id.
* Pools are Mem0's own retrieval step on that store (:func:`mempursuit_mem0.search.collect_pool`:
  ``user_id = group``, Mem0's threshold, its combined order), the query embedded by the
  config's own embedder, the pool's stored vectors read back from Qdrant. ``--embedder`` plays
  no part in the pools. Memories with a title metadata (``title``, or the key
  ``--backend-opt metadata_keys='{"titles": "name"}'`` names, the adapter's option) give the
  ``titles`` signal and the adapter's second read, whose fetched memories are units by id.
* Read-only by construction: the harness opens the Qdrant client itself, replaces every method
  that writes (upsert, delete, set_payload, create / recreate / delete collection, payload
  indexes, ...) on that client instance by one that raises :class:`ReadOnlyStoreError`, and
  hands the client to Mem0 (``vector_store.config.client``). ``Memory.from_config`` then finds
  the collection and does not recreate it (Mem0 skips creation of an existing collection; the
  payload-index creation it tries on a client it did not open is refused and Mem0 ignores that);
  Mem0's history database is ``:memory:``, never the config's ``history_db_path``; when the
  store has no entity collection (``<collection>_entities``), searches see an empty one instead
  of Mem0 creating it (its entity boosts are then zero, as they would be on an empty one).
  A local ``path`` that does not exist, or a missing collection, is an error: nothing is
  created.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.base import Embedder, MemoryUnit, Pool, checked_pool_size

from .mem0 import Mem0Backend

__all__ = ["ExistingMem0Backend", "ReadOnlyStoreError", "Mem0ConfigError", "read_config",
           "open_readonly_client", "store_units", "WRITE_METHODS"]

#: QdrantClient methods that change a store; blocked on the client the harness opens.
WRITE_METHODS = (
    "upsert", "upload_points", "upload_collection", "upload_records", "delete", "delete_vectors",
    "update_vectors", "set_payload", "overwrite_payload", "delete_payload", "clear_payload",
    "batch_update_points", "create_collection", "recreate_collection", "delete_collection",
    "update_collection", "update_collection_aliases", "create_payload_index",
    "delete_payload_index", "create_snapshot", "delete_snapshot", "create_full_snapshot",
    "delete_full_snapshot", "recover_snapshot", "recover_shard_snapshot", "create_shard_key",
    "delete_shard_key", "create_shard_snapshot", "delete_shard_snapshot", "add",
    "migrate", "upload_snapshot", "upload_shard_snapshot",
)
_CONNECT_KEYS = ("path", "url", "host", "port", "api_key", "https")


class Mem0ConfigError(ValueError):
    """The ``--mem0-config`` file cannot be used (one line: the file and what is wrong)."""


class ReadOnlyStoreError(RuntimeError):
    """Something tried to write to the store evaluated read-only."""


def read_config(path: str | os.PathLike) -> dict:
    """The Mem0 config dict in ``path``, checked for what the read-only mode needs."""
    p = Path(path).expanduser()
    try:
        with open(p, encoding="utf-8") as f:
            cfg = json.load(f)
    except FileNotFoundError:
        raise Mem0ConfigError(f"--mem0-config {p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise Mem0ConfigError(f"--mem0-config {p}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise Mem0ConfigError(f"--mem0-config {p}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(cfg, dict):
        raise Mem0ConfigError(f"--mem0-config {p}: expected a JSON object (Memory.from_config's dict)")
    vs = cfg.get("vector_store")
    if not isinstance(vs, dict) or not isinstance(vs.get("config"), dict):
        raise Mem0ConfigError(f"--mem0-config {p}: needs 'vector_store': {{'provider': 'qdrant', "
                              "'config': {...}} naming the store to evaluate")
    provider = vs.get("provider", "qdrant")
    if provider != "qdrant":
        raise Mem0ConfigError(f"--mem0-config {p}: vector_store provider {provider!r} is not "
                              "supported read-only; only 'qdrant' (local path or server) is")
    conf = vs["config"]
    if "client" in conf:
        raise Mem0ConfigError(f"--mem0-config {p}: vector_store.config.client cannot come from "
                              "JSON; give path, url or host and port")
    if not (conf.get("path") or conf.get("url") or (conf.get("host") and conf.get("port"))):
        raise Mem0ConfigError(f"--mem0-config {p}: vector_store.config needs 'path' (local "
                              "Qdrant) or 'url' / 'host' + 'port' (a Qdrant server)")
    cfg = copy.deepcopy(cfg)
    cfg["_source"] = str(p)
    return cfg


def _blocked(name: str, where: str):
    def refuse(*args, **kwargs):
        raise ReadOnlyStoreError(f"refused {name}() on {where}: mempursuit evaluates this Mem0 "
                                 "store read-only")
    return refuse


def open_readonly_client(cfg: dict):
    """A QdrantClient on the config's store with every writing method blocked, and the
    collection name; errors when the local path or the collection does not exist."""
    from qdrant_client import QdrantClient

    src = cfg.get("_source", "--mem0-config")
    conf = cfg["vector_store"]["config"]
    collection = conf.get("collection_name", "mem0")
    if conf.get("path") and not (conf.get("url") or conf.get("host")):
        path = Path(conf["path"]).expanduser()
        if not path.is_dir():
            raise Mem0ConfigError(f"{src}: vector_store.config.path {path} does not exist (a "
                                  "read-only evaluation never creates a store)")
        where = f"local Qdrant {path}"
        params: dict[str, Any] = {"path": str(path)}
    else:
        params = {k: conf[k] for k in ("url", "host", "port", "api_key", "https")
                  if conf.get(k) is not None}
        where = f"Qdrant {conf.get('url') or conf.get('host')}"
    try:
        client = QdrantClient(**params)
    except Exception as exc:  # noqa: BLE001 - a lock held by another process, a bad URL, ...
        raise Mem0ConfigError(f"{src}: cannot open {where}: {type(exc).__name__}: {exc}") from None
    for name in WRITE_METHODS:
        if hasattr(client, name):
            setattr(client, name, _blocked(name, where))
    try:
        names = [c.name for c in client.get_collections().collections]
    except Exception as exc:  # noqa: BLE001
        client.close()
        raise Mem0ConfigError(f"{src}: cannot list the collections of {where}: {exc}") from None
    if collection not in names:
        client.close()
        raise Mem0ConfigError(f"{src}: {where} has no collection {collection!r} (it has: "
                              f"{', '.join(names) or 'none'})")
    return client, collection


def _unit(point_id: Any, payload: dict) -> MemoryUnit | None:
    group = payload.get("user_id")
    text = payload.get("data")
    if not isinstance(group, str) or not group or not isinstance(text, str) or not text:
        return None
    uid = str(point_id)
    session = payload.get("session_id") or payload.get("run_id") or uid
    sources = payload.get("source_ids")
    if isinstance(sources, list) and sources and all(isinstance(s, str) for s in sources):
        sources = tuple(sources)
    else:
        sources = (uid,)
    speaker = payload.get("speaker") or payload.get("actor_id")
    stamp = payload.get("created_at")
    return MemoryUnit(uid=uid, text=text, group=group, session_id=str(session),
                      source_ids=sources, timestamp=stamp if isinstance(stamp, str) else None,
                      speaker=speaker if isinstance(speaker, str) else None)


def store_units(cfg: dict, *, batch: int = 1000) -> tuple[list[MemoryUnit], list[str]]:
    """Every memory of the store as a unit (see the module docstring), and notes."""
    client, collection = open_readonly_client(cfg)
    units: list[MemoryUnit] = []
    skipped = 0
    try:
        offset = None
        while True:
            points, offset = client.scroll(collection_name=collection, limit=batch, offset=offset,
                                           with_payload=True, with_vectors=False)
            for pt in points:
                u = _unit(pt.id, pt.payload or {})
                if u is None:
                    skipped += 1
                else:
                    units.append(u)
            if offset is None:
                break
    finally:
        client.close()
    units.sort(key=lambda u: (u.group, u.timestamp or "", u.uid))
    notes = []
    if skipped:
        notes.append(f"mem0 store: {skipped} point(s) without a user_id or text are not "
                     "searchable by group and were left out")
    return units, notes


class _NoEntities:
    """Stands in for a missing entity collection: searches find nothing, writes are refused."""

    def search(self, *args, **kwargs):
        return []

    def search_batch(self, queries=None, *args, **kwargs):
        return [[] for _ in (queries or [])]

    def list(self, *args, **kwargs):
        return []

    def __getattr__(self, name):
        return _blocked(name, "the (absent) entity collection")


class ExistingMem0Backend(Mem0Backend):
    """An existing Mem0 store (Qdrant) as an evaluation store, read-only (module docstring).

    Parameters
    ----------
    config : path
        The ``--mem0-config`` JSON file.
    threshold : float
        Mem0's search threshold (Mem0's default 0.1).
    lexical : bool
        Attach the harness's lexical features to pools (as the ``mem0`` store does).
    metadata_keys : dict, optional
        ``{"titles": key}``: the metadata key that holds a memory's title (default ``title``),
        the adapter's option (:class:`mempursuit_mem0.MemPursuitSettings`).
    """

    #: Never reopened from the harness's cache: the store is yours, not a build of the harness.
    load_existing = None

    def __init__(self, config: str | os.PathLike, *, threshold: float = 0.1,
                 lexical: bool = False, native: str | None = None,
                 metadata_keys: dict | None = None):
        from mempursuit_mem0.settings import title_key

        title_key(metadata_keys)  # a bad option fails before the store is opened
        super().__init__("qdrant", threshold=threshold, lexical=lexical, native=native)
        self.metadata_keys = None if metadata_keys is None else dict(metadata_keys)
        self.config_path = str(config)
        self.cfg = read_config(config)
        self.name = "mem0-existing"
        self._client = None

    def _open(self, embedder: Embedder | None = None, workdir: Path | None = None):
        os.environ.setdefault("MEM0_TELEMETRY", "False")
        from mem0 import Memory

        client, collection = open_readonly_client(self.cfg)
        cfg = copy.deepcopy({k: v for k, v in self.cfg.items() if k != "_source"})
        vs = cfg["vector_store"]["config"]
        vs["client"] = client
        cfg["history_db_path"] = ":memory:"  # Mem0's SQLite history: never the store's file
        cfg.setdefault("llm", {"provider": "openai", "config": {"api_key": "unused-read-only"}})
        try:
            memory = Memory.from_config(cfg)
        except ReadOnlyStoreError as exc:
            client.close()
            raise Mem0ConfigError(f"{self.config_path}: Mem0 tried to write while opening the "
                                  f"store ({exc})") from None
        except Exception as exc:  # noqa: BLE001 - Mem0's config validation, embedder loading
            client.close()
            raise Mem0ConfigError(f"{self.config_path}: Memory.from_config failed: "
                                  f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                                  ) from None
        from mem0.memory.main import _entity_collection_name

        entities = _entity_collection_name("qdrant", collection)
        if entities not in [c.name for c in client.get_collections().collections]:
            memory._entity_store = _NoEntities()
        self._client = client
        self.memory = memory
        return memory

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        """Open the store read-only (nothing is written: the units are already in it)."""
        units = list(units)
        self._remember(units)
        self._open()
        if progress is not None:
            progress(len(units))

    def pool(self, group: str, query: str, size: int) -> Pool:
        """Mem0's native pool for ``query`` within ``user_id = group`` (its own query vector)."""
        from mempursuit_mem0.search import collect_pool

        size = checked_pool_size(self.memory is not None, size)
        query = query.strip()
        prepared = collect_pool(self.memory, query, {"user_id": group}, size,
                                threshold=self.threshold, metadata_keys=self.metadata_keys)
        if prepared is None:
            qv = np.asarray(self.memory.embedding_model.embed(query, "search"), dtype=np.float64)
            return Pool([], vectors=np.zeros((0, qv.shape[0]), dtype=np.float32),
                        query_vector=qv, native_scores=np.zeros(0))
        return self._pool_from(prepared, group, query, [self._uid_of(i) for i in prepared.items])

    @staticmethod
    def _uid_of(item: Any) -> str:
        """The unit of a Mem0 result (a pool's or the second read's): its memory id."""
        return str(item["id"])

    def close(self) -> None:
        memory, self.memory = self.memory, None
        client, self._client = self._client, None
        try:
            if memory is not None:
                memory.close()
        finally:
            if client is not None:
                client.close()

    def __repr__(self) -> str:
        return f"<ExistingMem0Backend config={self.config_path!r}>"


def load_questions_for_store(cfg_eval) -> Any:
    """The run's dataset for ``--mem0-config``: the custom file's questions with the store's
    memories as units (gold ids checked against them)."""
    from mempursuit_eval.datasets.custom import CustomDataError, attach_units, load_custom

    if cfg_eval.framework != "mem0":
        raise Mem0ConfigError(f"--mem0-config needs --framework mem0 (got {cfg_eval.framework!r})")
    if cfg_eval.dataset != "custom":
        raise Mem0ConfigError("--mem0-config needs --dataset custom --data QUESTIONS (their gold "
                              "ids are the store's memory ids; docs/eval-custom-data.md)")
    ds = load_custom(cfg_eval.data, units=cfg_eval.units, questions_only=True)
    units, notes = store_units(read_config(cfg_eval.mem0_config))
    if not units:
        raise CustomDataError(f"{cfg_eval.mem0_config}: the store holds no searchable memory")
    ds.notes.extend(notes)
    return attach_units(ds, units, what="Mem0 memory")
