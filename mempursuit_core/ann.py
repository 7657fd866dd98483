"""Full pools from approximate (ANN) indexes, scoped to one read.

An ANN index returns at most as many rows as its search beam holds: pgvector's HNSW at most
``hnsw.ef_search`` (40 by default), IVFFlat only the rows of ``ivfflat.probes`` lists, Qdrant's
HNSW about ``hnsw_ef``. A pool of ``P`` read through such an index is silently short. The
adapters widen the beam for their own read only:

* pgvector: :func:`pgvector_read_settings` raises ``hnsw.ef_search`` (and ``ivfflat.probes``)
  with ``set_config(..., is_local => true)`` inside the read's transaction and puts the old
  values back before the transaction ends, so nothing on the caller's connection changes (not
  even inside a transaction of the caller's that the read joins);
* Qdrant, FAISS HNSW, Chroma, LanceDB: :func:`beam_width` is the value to pass as the search's
  own parameter (``hnsw_ef``, ``efSearch``, ``ef``, ``nprobes``);
* where the framework issues the query and hides its parameters, :func:`warn_short_pool` logs
  one warning naming the setting to raise.

Nothing here imports a database client: the functions take the cursor the adapter already has.
"""

from __future__ import annotations

import logging
import math
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Iterator

__all__ = [
    "PGVECTOR_EF_SEARCH_MAX",
    "apgvector_read_settings",
    "beam_width",
    "pgvector_read_settings",
    "pgvector_targets",
    "qdrant_search_params",
    "warn_short_pool",
]

logger = logging.getLogger(__name__)

#: pgvector refuses ``hnsw.ef_search`` above 1000 (0.5 to 0.8).
PGVECTOR_EF_SEARCH_MAX = 1000
_EF_DEFAULT, _PROBES_DEFAULT = 40, 1
_warned: set[str] = set()

_READ_SQL = ("SELECT current_setting('hnsw.ef_search', true) AS ef, "
             "current_setting('ivfflat.probes', true) AS probes")
_SET_SQL = ("SELECT set_config('hnsw.ef_search', %s, true) AS ef, "
            "set_config('ivfflat.probes', %s, true) AS probes")


def beam_width(pool: int, *, ceiling: int | None = None) -> int:
    """The search beam (``ef``) an HNSW index needs to return ``pool`` rows.

    Parameters
    ----------
    pool : int
        ``P``, the rows wanted.
    ceiling : int, optional
        The engine's maximum (pgvector: 1000); the result never exceeds it.

    Returns
    -------
    int
        ``max(P, 1)``, capped at ``ceiling``.
    """
    width = max(int(pool), 1)
    return width if ceiling is None else min(width, ceiling)


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def pgvector_targets(pool: int, ef: Any, probes: Any) -> tuple[int, int, str | None]:
    """The ``(ef_search, probes, warning)`` a read of ``pool`` rows sets.

    Never lowers a value the session has; ``ef_search`` is capped at
    :data:`PGVECTOR_EF_SEARCH_MAX` (with a warning naming the cap). ``probes`` is raised to
    ``ceil(P / 100)`` (at least the current value): with pgvector's advice of ~1000 rows per
    list, a few lists hold ``P`` rows even under a selective filter.
    """
    ef_now, probes_now = _int(ef, _EF_DEFAULT), _int(probes, _PROBES_DEFAULT)
    want = max(int(pool), 1)
    ef_new = max(ef_now, beam_width(want, ceiling=PGVECTOR_EF_SEARCH_MAX))
    warning = None
    if want > PGVECTOR_EF_SEARCH_MAX and ef_now < want:
        warning = (f"pool {want} is larger than pgvector's hnsw.ef_search limit "
                   f"({PGVECTOR_EF_SEARCH_MAX}); an HNSW index returns at most "
                   f"{PGVECTOR_EF_SEARCH_MAX} candidates (use exact search for larger pools)")
    return ef_new, max(probes_now, math.ceil(want / 100)), warning


def _warn_once(key: str, message: str, log: logging.Logger) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning("%s", message)


def _row(row: Any) -> tuple[Any, Any]:
    return (row["ef"], row["probes"]) if isinstance(row, dict) else (row[0], row[1])


@contextmanager
def pgvector_read_settings(cur: Any, pool: int, *, log: logging.Logger = logger) -> Iterator[None]:
    """Within the block, ``cur``'s transaction reads HNSW / IVFFlat indexes with a beam of ``P``.

    Parameters
    ----------
    cur : psycopg (3) or psycopg2 cursor
        A cursor inside the read's transaction (``SET LOCAL`` semantics: outside a transaction
        block the setting would not hold; the caller opens one).
    pool : int
        ``P``.

    Notes
    -----
    The previous values are put back (again transaction-local) when the block ends, so a read
    that joins a longer transaction of the caller's leaves it as it was. When the block raises,
    the transaction is rolled back by its owner, which discards the setting too.
    """
    cur.execute(_READ_SQL)
    ef, probes = _row(cur.fetchone())
    ef_new, probes_new, warning = pgvector_targets(pool, ef, probes)
    if warning:
        _warn_once(f"ef:{pool}", warning, log)
    changed = ef_new != _int(ef, _EF_DEFAULT) or probes_new != _int(probes, _PROBES_DEFAULT)
    if changed:
        cur.execute(_SET_SQL, (str(ef_new), str(probes_new)))
        cur.fetchone()
    yield
    if changed:
        cur.execute(_SET_SQL, (str(ef or _EF_DEFAULT), str(probes or _PROBES_DEFAULT)))
        cur.fetchone()


@asynccontextmanager
async def apgvector_read_settings(cur: Any, pool: int, *,
                                  log: logging.Logger = logger) -> AsyncIterator[None]:
    """:func:`pgvector_read_settings` for a psycopg ``AsyncCursor``."""
    await cur.execute(_READ_SQL)
    ef, probes = _row(await cur.fetchone())
    ef_new, probes_new, warning = pgvector_targets(pool, ef, probes)
    if warning:
        _warn_once(f"ef:{pool}", warning, log)
    changed = ef_new != _int(ef, _EF_DEFAULT) or probes_new != _int(probes, _PROBES_DEFAULT)
    if changed:
        await cur.execute(_SET_SQL, (str(ef_new), str(probes_new)))
        await cur.fetchone()
    yield
    if changed:
        await cur.execute(_SET_SQL, (str(ef or _EF_DEFAULT), str(probes or _PROBES_DEFAULT)))
        await cur.fetchone()


def warn_short_pool(got: int, wanted: int, in_scope: int | None, *, store: str, setting: str,
                    log: logging.Logger = logger) -> bool:
    """One warning (per store and setting) when an ANN read returned a short pool.

    Parameters
    ----------
    got : int
        Rows the store returned.
    wanted : int
        ``P``.
    in_scope : int or None
        Items the read could return (its namespace / filter), when known; None counts as
        unbounded.
    store, setting : str
        Named in the warning: the store and the parameter to raise.

    Returns
    -------
    bool
        True when the pool is short (whether or not this call logged).
    """
    bound = wanted if in_scope is None else min(wanted, in_scope)
    if got >= bound:
        return False
    _warn_once(f"short:{store}:{setting}",
               f"{store} returned {got} candidates for a pool of {bound}: its ANN index search "
               f"is cut by {setting}; raise it to at least {wanted} for a full pool", log)
    return True


def _qdrant_is_local(client: Any) -> bool:
    inner = getattr(client, "_client", client)
    return type(inner).__name__ in ("QdrantLocal", "AsyncQdrantLocal")


def qdrant_search_params(client: Any, pool: int, *, local_too: bool = False) -> Any:
    """``SearchParams(hnsw_ef=P)`` for a Qdrant server client, None for local mode.

    Local mode (``path=`` / ``":memory:"``) searches exactly and warns about any ``hnsw_ef``;
    ``local_too=True`` returns the parameters anyway.
    """
    if _qdrant_is_local(client) and not local_too:
        return None
    from qdrant_client import models

    return models.SearchParams(hnsw_ef=beam_width(pool))
