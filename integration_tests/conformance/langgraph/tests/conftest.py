"""LangGraph's own store tests, run against ``MemPursuitStore`` (ours, not vendored).

The ``test_*.py`` files beside this one are LangGraph's, unchanged (``../README.md`` names their
release, path and checksum). This file is the only thing swapped in: it replaces the PostgreSQL
package's ``tests/conftest.py`` (a Docker server on ``localhost:5441``) and wraps every store
the tests build.

* **The store.** An autouse fixture, parametrized over the read policy (``native``, and the
  project's default for every test with embeddings: :func:`pytest_generate_tests`), replaces the store classes the test module imported (``InMemoryStore``,
  ``SqliteStore``, ``AsyncSqliteStore``, ``PostgresStore``, ``AsyncPostgresStore``) by a
  subclass whose constructor (and so ``from_conn_string``) builds the real store and hands the
  test ``MemPursuitStore(store, policy="native")`` or ``MemPursuitStore(store, strict=True)``.
* **PostgreSQL.** PostgreSQL 16 + pgvector from the ``pgserver`` wheel (``pg_fixture.py``),
  started once per session by the first PostgreSQL test, on a Unix socket in a fresh folder.
  The tests read the server's address from the module constant :data:`DEFAULT_URI` (their
  ``from tests.conftest import DEFAULT_URI``), so the folder is chosen when this file is imported
  and the socket's path is written into the URI's host, percent-encoded.
* **halfvec.** pgvector's ``halfvec`` type came in 0.7; the ``pgserver`` wheel (0.1.4) ships
  pgvector 0.6.2, so there :data:`VECTOR_TYPES` is ``["vector"]`` and the cases the tests
  parametrize with ``halfvec`` themselves are skipped, saying why (they fail on that server
  with or without the wrapper).
* **SQLite.** sqlite-vec needs ``sqlite3.Connection.enable_load_extension``, which some Python
  builds lack: there the stores' and aiosqlite's ``sqlite3`` is ``pysqlite3`` (the
  ``pysqlite3-binary`` wheel, .ci/requirements-langgraph.txt), as ``mempursuit eval`` does.
* **Default policy.** Under the default policy, query searches come back in the policy's order,
  not by similarity: the tests in :data:`ORDER_TESTS` assert that order and are marked
  ``xfail(strict=True)`` with why, so one that starts passing fails the run and is noticed.
"""

from __future__ import annotations

import atexit
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from langgraph.store.base import SearchOp

from mempursuit_langgraph import MemPursuitStore

from tests.embed_test_utils import CharacterEmbeddings

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # integration_tests/
from pg_fixture import postgres_server  # noqa: E402

__all__ = ["CharacterEmbeddings", "DEFAULT_URI", "VECTOR_TYPES"]

#: What the PostgreSQL tests import from their conftest (the values of checkpoint-postgres 3.2.0's
#: ``tests/conftest.py``, but for the server's address).
VECTOR_TYPES = ["vector", "halfvec"]


def _pgvector_version() -> tuple[int, ...]:
    """The pgvector version the pgserver wheel ships (0 when it is not installed)."""
    spec = importlib.util.find_spec("pgserver")  # not imported: it warns on import
    if spec is None or not spec.submodule_search_locations:
        return (0,)
    for control in Path(spec.submodule_search_locations[0]).glob("pginstall/**/extension/vector.control"):
        for line in control.read_text().splitlines():
            if line.startswith("default_version"):
                return tuple(int(p) for p in line.split("'")[1].split("."))
    return (0,)


_NO_HALFVEC = _pgvector_version() < (0, 7)  # pgserver 0.1.4 ships pgvector 0.6.2
if _NO_HALFVEC:
    VECTOR_TYPES = ["vector"]
_PGDATA = Path(tempfile.mkdtemp(prefix="mp-lgconf-"))  # short: the Unix socket lies in it
atexit.register(shutil.rmtree, _PGDATA, ignore_errors=True)
DEFAULT_URI = f"postgresql://postgres@{quote(str(_PGDATA), safe='')}/postgres"

#: The read policies every test runs under: ``native`` (every search passed through) and the
#: default (``MemPursuitStore(store)``; here with ``strict=True``, so that a search the policy
#: could not read raises instead of quietly answering with the store's own result).
POLICIES = ["native", "default"]

_WHY_SIMILARITY = ("asserts that a query search returns items by descending similarity; the "
                   "default policy returns them in its own order (same items in the pool, "
                   "different order and so, with a limit, a different page)")

#: Tests (node-id prefixes, without the policy id) that assert the order of a query search and
#: so fail under the default policy; each with why. Checked with ``xfail(strict=True)``.
ORDER_TESTS: dict[str, str] = {}


@pytest.fixture
def fake_embeddings() -> CharacterEmbeddings:
    """As checkpoint-postgres's conftest (the SQLite and core tests define their own)."""
    return CharacterEmbeddings(dims=500)


@pytest.fixture(scope="session")
def _postgres() -> Any:
    _PGDATA.mkdir(exist_ok=True)
    with postgres_server(_PGDATA) as server:
        uri = server.get_uri()
        if f"host={_PGDATA}" not in uri:
            pytest.fail(f"pgserver put its socket elsewhere than {_PGDATA}: {uri}")
        yield server
    shutil.rmtree(_PGDATA, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _sqlite_with_extensions() -> Any:
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        yield
        return
    dbapi2 = pytest.importorskip("pysqlite3.dbapi2", reason="this Python's sqlite3 cannot load "
                                 "extensions (sqlite-vec): pip install pysqlite3-binary")
    import aiosqlite.core
    import langgraph.store.sqlite.base

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(langgraph.store.sqlite.base, "sqlite3", dbapi2)
        patch.setattr(aiosqlite.core, "sqlite3", dbapi2)
        yield


def _wrapping(cls: type, policy: str) -> type:
    """A subclass of ``cls`` whose instances come wrapped: ``MemPursuitStore(store, policy)``.

    A subclass, so that what the tests do to the class (``from_conn_string``, which builds
    ``cls(conn, ...)``; ``mocker.spy(InMemoryStore, "batch")``; ``MIGRATIONS``) reaches the
    store inside the wrapper.
    """

    def __new__(klass: type, *args: Any, **kwargs: Any) -> MemPursuitStore:
        store = object.__new__(klass)
        store.__init__(*args, **kwargs)  # __new__ returns another type: Python will not
        if policy == "native":
            return _Watched(store, policy="native")
        return MemPursuitStore(store, strict=True)

    return type(cls.__name__, (cls,), {"__new__": __new__, "__module__": __name__})


STORE_CLASSES = ("InMemoryStore", "SqliteStore", "AsyncSqliteStore", "PostgresStore",
                 "AsyncPostgresStore")


#: Query searches, in the native runs, that the default policy would have reordered.
_QUERY_SEARCHES: list[int] = [0]


class _Watched(MemPursuitStore):
    """``MemPursuitStore(store, policy="native")`` that counts the searches it passes through
    which the default policy would have read (a query, a limit, a store with embeddings)."""

    __slots__ = ()

    def _count(self, ops: list) -> list:
        if getattr(self.store, "embeddings", None) is not None:
            _QUERY_SEARCHES[0] += sum(1 for op in ops if isinstance(op, SearchOp)
                                      and bool(op.query) and op.limit > 0)
        return ops

    def batch(self, ops: Any) -> Any:
        return super().batch(self._count(list(ops)))

    async def abatch(self, ops: Any) -> Any:
        return await super().abatch(self._count(list(ops)))

    def search(self, prefix: Any, /, *, query: Any = None, limit: int = 10, **kw: Any) -> Any:
        self._count([SearchOp(tuple(prefix), None, limit, 0, query)])
        return super().search(prefix, query=query, limit=limit, **kw)

    async def asearch(self, prefix: Any, /, *, query: Any = None, limit: int = 10,
                      **kw: Any) -> Any:
        self._count([SearchOp(tuple(prefix), None, limit, 0, query)])
        return await super().asearch(prefix, query=query, limit=limit, **kw)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Both policies for the tests with embeddings, ``native`` for the others.

    A store searches by similarity only with an ``index`` (embeddings), and every embedding in
    these tests comes from the ``fake_embeddings`` fixture; without one, the default policy
    passes every operation through as ``native`` does, so running those tests twice would
    check nothing new. :func:`mempursuit_policy` checks that assumption on every native run.
    """
    if "mempursuit_policy" in metafunc.fixturenames:
        both = "fake_embeddings" in metafunc.fixturenames
        metafunc.parametrize("mempursuit_policy", POLICIES if both else ["native"],
                             indirect=True)


@pytest.fixture(autouse=True)
def mempursuit_policy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every store the test builds is a ``MemPursuitStore`` with this read policy."""
    policy = request.param
    module = request.module
    if "postgres" in module.__name__:
        request.getfixturevalue("_postgres")
    for name in STORE_CLASSES:
        cls = getattr(module, name, None)
        if isinstance(cls, type):
            monkeypatch.setattr(module, name, _wrapping(cls, policy))
    _QUERY_SEARCHES[0] = 0
    yield policy
    if "fake_embeddings" not in request.fixturenames and _QUERY_SEARCHES[0]:
        pytest.fail(f"{_QUERY_SEARCHES[0]} query searches on a store with embeddings, in a test "
                    "run under the native policy only: conftest.pytest_generate_tests must run "
                    "it under the default policy too")


def _test_key(item: pytest.Item) -> str:
    """``module.py::[Class::]test`` without the parameter ids."""
    name = item.nodeid.split("/")[-1]
    return name.split("[", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if _NO_HALFVEC and callspec is not None and "halfvec" in callspec.id:
            item.add_marker(pytest.mark.skip(reason="pgvector's halfvec needs pgvector 0.7+; the "
                                             "pgserver wheel ships 0.6.2"))
        if callspec is None or callspec.params.get("mempursuit_policy") == "native":
            continue
        reason = ORDER_TESTS.get(_test_key(item))
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
