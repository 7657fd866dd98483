"""The contracts between the evaluation harness, its stores and its embedders."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import (Any, Callable, Iterator, Mapping, Protocol, Sequence, TypeVar,
                    runtime_checkable)

import numpy as np

from mempursuit_core.readpath import CandidatePool

__all__ = ["MemoryUnit", "Pool", "Embedder", "StoreBackend", "ReusableStore", "checked_pool_size",
           "embedded_batches", "group_entry", "pool_from_candidates", "query_vector_for",
           "read_manifest", "unit_batches", "write_manifest",
           "DATASET_SIGNALS"]

T = TypeVar("T")


def checked_pool_size(built: bool, size: Any) -> int:
    """``int(size)`` for a store's ``pool()``; the errors every store gives for a bad request."""
    if not built:
        raise RuntimeError("build() the store before asking for pools")
    if int(size) < 1:
        raise ValueError(f"pool size must be >= 1, got {size}")
    return int(size)


def units_by_group(units: Sequence["MemoryUnit"], known: dict | None = None
                   ) -> dict[str, list["MemoryUnit"]]:
    """Units by group, each group in the given order; every unit is also added to ``known``
    (uid -> unit) when given. A uid seen twice is a ``ValueError``."""
    seen = {} if known is None else known
    by_group: dict[str, list[MemoryUnit]] = {}
    for unit in units:
        if unit.uid in seen:
            raise ValueError(f"duplicate unit uid {unit.uid!r}")
        seen[unit.uid] = unit
        by_group.setdefault(unit.group, []).append(unit)
    return by_group


def unit_batches(members: Sequence["MemoryUnit"], batch_size: int,
                 progress: Callable[[int], None] | None = None) -> Iterator[list["MemoryUnit"]]:
    """``members`` in batches of ``batch_size``; ``progress(n)`` once the caller has written a
    batch (when it asks for the next)."""
    for start in range(0, len(members), batch_size):
        chunk = list(members[start:start + batch_size])
        yield chunk
        if progress is not None:
            progress(len(chunk))


def embedded_batches(members: Sequence["MemoryUnit"], embedder: "Embedder", batch_size: int,
                     progress: Callable[[int], None] | None = None, *,
                     text: Callable[["MemoryUnit"], str] = lambda unit: unit.text
                     ) -> Iterator[tuple[list["MemoryUnit"], np.ndarray]]:
    """``members`` in batches of ``batch_size``, each with the vectors of its units' ``text``
    (default the unit's own), shape (n, d) float32; ``progress(n)`` once the caller has written
    a batch (when it asks for the next)."""
    for chunk in unit_batches(members, batch_size, progress):
        yield chunk, np.asarray(embedder.encode([text(u) for u in chunk]), dtype=np.float32)


def query_vector_for(embedder: "Embedder", query: str, given: Any = None) -> np.ndarray:
    """The query vector the harness handed over (``given``), else ``query`` embedded; (d,)
    float32."""
    return np.asarray(embedder.encode([query])[0] if given is None else given, dtype=np.float32)


#: The file a reusable store writes beside its own: what it holds, checked before reuse
MANIFEST = "units.json"


def write_manifest(workdir: Path, groups: Mapping[str, int], **maps: Mapping[str, Any]) -> None:
    """Write what a store built in ``workdir`` holds: units per group, and ``maps`` (e.g. the
    store's table per group) for :func:`read_manifest`."""
    (Path(workdir) / MANIFEST).write_text(json.dumps({"groups": dict(groups), **maps}),
                                          encoding="utf-8")


def read_manifest(workdir: Path, units: Sequence["MemoryUnit"], *maps: str
                  ) -> tuple[dict[str, int], ...] | None:
    """``(groups, *maps)`` as :func:`write_manifest` wrote them in ``workdir`` (maps as
    ``{str: str}``), when its groups hold exactly as many of ``units`` each; None when the file
    is missing, unreadable or describes other units (the store is built again)."""
    try:
        saved = json.loads((Path(workdir) / MANIFEST).read_text(encoding="utf-8"))
        groups = {str(g): int(n) for g, n in saved["groups"].items()}
        found = [{str(a): str(b) for a, b in saved[key].items()} for key in maps]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if groups != {g: len(m) for g, m in units_by_group(units).items()}:
        return None
    return (groups, *found)


def group_entry(groups: Mapping[str, T], group: str) -> T:
    """A store's per-group state; KeyError naming the group when it holds no units of it."""
    try:
        return groups[group]
    except KeyError:
        raise KeyError(f"no units in group {group!r}") from None


@dataclass(frozen=True)
class MemoryUnit:
    """One memory written to a store (a dialogue turn, an observation, a session summary or a
    document's paragraph / sentence).

    Attributes
    ----------
    uid : str
        Unique within the dataset (stable across runs: used as cache key and store id).
    text : str
        What gets embedded and stored.
    group : str
        The scope a question searches (a LoCoMo conversation, a LongMemEval question's haystack,
        a BEAM chat): stores map it to their user / tenant scoping.
    session_id : str
        The session the unit comes from (gold evidence at the session level).
    source_ids : tuple of str
        Turn / message ids the unit covers (gold evidence at the turn level).
    timestamp : str or None
        ISO-8601 time of the source session, if known.
    speaker : str or None
        Who said it (dialogue turns), if known.
    title : str or None
        The document's title (a Wikipedia paragraph's article in HotpotQA, 2WikiMultihopQA and
        MuSiQue), if the unit comes from a titled document; dialogue units have none. The plain
        store hands it to policies as the ``titles`` signal.
    """

    uid: str
    text: str
    group: str
    session_id: str
    source_ids: tuple[str, ...] = ()
    timestamp: str | None = None
    speaker: str | None = None
    title: str | None = None


#: The pool a store backend returns: the core's :class:`~mempursuit_core.readpath.CandidatePool`
#: (the one pool type), its items the benchmark's unit ids.
Pool = CandidatePool

#: What ``--dataset-signals`` adds to a framework store's pools: the benchmark's own labels.
DATASET_SIGNALS = ("session_ids", "speakers")


def pool_from_candidates(pool: Any, uids: Sequence[str], *,
                         units: Mapping[str, "MemoryUnit"] | None = None,
                         dataset_signals: bool = False,
                         producers: Mapping[str, Callable[[], Any]] | None = None,
                         uid_of: Callable[[Any], str] | None = None) -> CandidatePool[str]:
    """An adapter's :class:`~mempursuit_core.readpath.CandidatePool` with the harness's unit ids
    for items: the one pool type, read through the same stages
    (:func:`~mempursuit_core.readpath.select_pools`).

    Parameters
    ----------
    pool : CandidatePool, length P
        What the adapter's read path built (signals as the framework stores them).
    uids : list of str, length P
        The harness unit of each pool item.
    units : mapping, optional
        Units by uid (needed with ``dataset_signals``).
    dataset_signals : bool
        Put the benchmark's own ``session_ids`` and ``speakers`` over the adapter's
        (``--dataset-signals``; the run's config and reports say so).
    producers : mapping, optional
        Further lazy signals the harness adds (key -> zero-argument callable).
    uid_of : callable, optional
        ``uid_of(item)``: the harness unit of an item the adapter's second read fetched (its
        ``"title_lookup"`` signal); without it a fetched item cannot be scored and the second
        read is off.
    """
    uids = list(uids)
    extra: dict[str, Any] = {}
    if "title_lookup" in pool.signals:
        extra["title_lookup"] = _harness_lookup(pool.signals["title_lookup"], uid_of)
    if dataset_signals:
        if units is None:
            raise ValueError("dataset_signals needs the units")
        extra = {"session_ids": [units[u].session_id for u in uids],
                 "speakers": [units[u].speaker for u in uids]}
    if extra or producers:
        pool = pool.with_signals(extra, producers=producers)
    return dataclasses.replace(pool, items=uids)


def _harness_lookup(lookup: Any, uid_of: Callable[[Any], str] | None) -> Any:
    """An adapter's title lookup whose fetched items are harness unit ids, with no deadline
    (a run's numbers do not depend on the machine's load)."""
    def unit(item: Any) -> str:
        if uid_of is None:
            raise RuntimeError("this backend does not map fetched items to units")
        return uid_of(item)
    return lookup.mapped(unit, timeout=None)


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        """L2-normalised float32 embeddings, shape (n, dim)."""


@runtime_checkable
class StoreBackend(Protocol):
    """A memory store the harness writes units into and reads pools from."""

    name: str

    def build(
        self,
        units: Sequence[MemoryUnit],
        *,
        embedder: Embedder,
        workdir: Path,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Write every unit (all groups) into the store."""

    def pool(self, group: str, query: str, size: int) -> CandidatePool[str]:
        """The native candidate pool of ``size`` for ``query`` within ``group``."""

    def close(self) -> None: ...


@runtime_checkable
class ReusableStore(Protocol):
    """Optional extra of a :class:`StoreBackend` whose build can be reopened from disk.

    When a store has ``load_existing``, ``mempursuit eval`` gives it a work directory in the
    cache keyed by the content hash of (store, options, embedder, units) and, when an earlier
    build there completed, calls ``load_existing`` instead of ``build``; ``False`` means
    "rebuild" (the directory is then emptied first). Stores without it get a fresh temporary
    directory on every run. ``pool`` may also accept ``query_vector=`` (shape ``(d,)``) so the
    harness can hand over the query embedding it already computed.
    """

    def load_existing(self, units: Sequence[MemoryUnit], *, embedder: Embedder,
                      workdir: Path) -> bool: ...
