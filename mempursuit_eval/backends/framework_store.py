"""What the framework evaluation stores share; each store's module keeps the translation to its
own framework (how a batch of units is written, how the adapter's read path builds a pool).

* :class:`FrameworkStore`: the options (``batch_size``, ``native``, ``dataset_signals``), the
  units and groups a build holds, the write of each group's units in batches (embedded by the
  harness's embedder, or by the framework itself) and ``pool``: the adapter's own candidate
  pool for the group, as the harness's :class:`~mempursuit_eval.base.Pool`.
* :class:`TableStore`: a store with one table (collection) per group in one folder of the work
  directory, written by ``build`` and reopened by ``load_existing``.
* :func:`harness_model`: an adapter's embedder over the harness's embedder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_eval.base import (Embedder, MemoryUnit, Pool, checked_pool_size, embedded_batches,
                                  group_entry, pool_from_candidates, read_manifest, unit_batches,
                                  units_by_group, write_manifest)

__all__ = ["FrameworkStore", "TableStore", "harness_model"]


def harness_model(embedder_class: type, embedder: Embedder, **options: Any) -> Any:
    """An adapter's embedder (``embedder_class(**options)``, whose ``_model()`` loads its
    model) computing with the harness's ``embedder`` instead."""

    class Harness(embedder_class):
        def _model(self):
            return embedder

    return Harness(**options)


class FrameworkStore:
    """A framework's own store as an evaluation store (a ``StoreBackend``).

    A subclass names its ``framework`` (also the ``native`` option it accepts beside
    ``"dense"``) and its ``native_order`` (what a bad ``native`` is told), and implements
    ``_write_batch`` (for :meth:`_write_units`), ``_read`` and ``_uid``; ``_reset`` sets the
    framework's objects of a store that holds nothing (a new or closed one) and ``_release``
    closes them. The store is built (or reopened) while ``_embedder`` is set.

    Parameters
    ----------
    batch_size : int
        Units embedded and written per batch.
    native : str, optional
        Only the framework's own order exists: ``"dense"`` or the framework's name.
    dataset_signals : bool
        Put the benchmark's own ``session_ids`` and ``speakers`` over the adapter's
        (``--dataset-signals``).
    """

    framework: str
    native_order: str

    def __init__(self, *, batch_size: int = 256, native: str | None = None,
                 dataset_signals: bool = False):
        if native not in (None, "dense", self.framework):
            raise ValueError(f"the {self.framework} backend's native order is "
                             f"{self.native_order}; got native={native!r}")
        self.batch_size = int(batch_size)
        self.dataset_signals = bool(dataset_signals)
        self.name = self.framework
        self._units: dict[str, MemoryUnit] = {}
        self._groups: dict[str, int] = {}  # units per group
        self._embedder: Embedder | None = None
        self._reset()

    def _hold(self, units: Sequence[MemoryUnit], groups: dict[str, int] | None = None
              ) -> dict[str, list[MemoryUnit]]:
        """``units`` by group; the store now holds them (``groups``: the units per group a
        reopened store's manifest names, else counted here)."""
        by_group = units_by_group(units)
        self._units = {u.uid: u for u in units}
        self._groups = {g: len(m) for g, m in by_group.items()} if groups is None else groups
        return by_group

    def _write_units(self, by_group: dict[str, list[MemoryUnit]], embedder: Embedder | None,
                     progress: Callable[[int], None] | None = None) -> None:
        """Each group's units to ``_write_batch(group, units, vectors)`` in batches of
        ``batch_size``, with their vectors, shape (n, d), from ``embedder`` (of
        ``_stored_text``); ``embedder=None``: the framework embeds them itself (vectors None)."""
        for group, members in by_group.items():
            if embedder is None:
                for chunk in unit_batches(members, self.batch_size, progress):
                    self._write_batch(group, chunk, None)
                continue
            for chunk, vectors in embedded_batches(members, embedder, self.batch_size, progress,
                                                   text=self._stored_text):
                self._write_batch(group, chunk, vectors)

    @staticmethod
    def _stored_text(unit: MemoryUnit) -> str:
        """The text the framework embeds for ``unit``."""
        return unit.text

    def _write_batch(self, group: str, units: list[MemoryUnit], vectors: np.ndarray | None
                     ) -> None:
        """Write ``units`` of ``group`` (with their ``vectors``) through the framework."""
        raise NotImplementedError

    def _read(self, group: str, query: str, size: int, query_vector: np.ndarray | None) -> Any:
        """The adapter's own ``CandidatePool`` of ``size`` for ``query`` within ``group``."""
        raise NotImplementedError

    def _uid(self, item: Any) -> str:
        """The harness unit of a pool item (or of an item the adapter's second read fetched)."""
        raise NotImplementedError

    def pool(self, group: str, query: str, size: int, *,
             query_vector: np.ndarray | None = None) -> Pool:
        """The framework's own top-``size`` for ``query`` within ``group``, as the adapter's
        read path pools it (``query_vector``, shape (d,): the harness's query embedding)."""
        size = checked_pool_size(self._embedder is not None, size)
        group_entry(self._groups, group)
        candidates = self._read(group, query, size, query_vector)
        return pool_from_candidates(candidates, [self._uid(item) for item in candidates.items],
                                    units=self._units, dataset_signals=self.dataset_signals,
                                    uid_of=self._uid)

    def close(self) -> None:
        """Let go of the framework's store (``pool`` then asks for a build)."""
        self._release()
        self._reset()
        self._embedder = None

    def _reset(self) -> None:
        """Set the framework's objects of a store that holds nothing."""

    def _release(self) -> None:
        """Close what the framework holds open."""


class TableStore(FrameworkStore):
    """A :class:`FrameworkStore` with one table per group (``group_<i>``) in the folder
    ``folder`` of the work directory; the manifest maps each group to its table under
    ``manifest_key``. A subclass implements ``_open`` and ``_count`` besides the writes and
    reads; ``close`` lets go of what ``_open`` opened."""

    folder: str
    manifest_key = "tables"

    def _open(self, path: Path, tables: dict[str, str]) -> None:
        """Open each group's table (``tables``: group -> name) in the folder ``path``, with
        ``_embedder`` the harness's embedder."""
        raise NotImplementedError

    def _count(self, group: str) -> int:
        """The rows in the group's table."""
        raise NotImplementedError

    def build(self, units: Sequence[MemoryUnit], *, embedder: Embedder, workdir: Path,
              progress: Callable[[int], None] | None = None) -> None:
        path = Path(workdir) / self.folder
        if path.exists():
            raise ValueError(f"{path} exists; use a fresh workdir")
        by_group = self._hold(units)
        tables = {group: f"group_{i}" for i, group in enumerate(by_group)}
        self._embedder = embedder
        self._open(path, tables)
        self._write_units(by_group, embedder, progress)
        write_manifest(workdir, self._groups, **{self.manifest_key: tables})

    def load_existing(self, units: Sequence[MemoryUnit], *, embedder: Embedder,
                      workdir: Path) -> bool:
        """Reopen a store that ``build`` wrote into ``workdir`` (True when reused; False, and
        nothing held open, when its files are missing, unreadable or hold other units)."""
        path, saved = Path(workdir) / self.folder, read_manifest(workdir, units,
                                                                 self.manifest_key)
        if saved is None or not path.is_dir():
            return False
        groups, tables = saved
        self._embedder = embedder
        try:
            self._open(path, tables)
            ok = all(self._count(g) == n for g, n in groups.items())
        except Exception:  # an unreadable store is rebuilt
            ok = False
        if not ok:
            self.close()
            return False
        self._hold(units, groups)
        return True
