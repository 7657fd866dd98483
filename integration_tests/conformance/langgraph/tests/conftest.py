"""LangGraph's own store tests, run against ``MemPursuitStore`` (ours, not vendored).

The ``test_*.py`` files beside this one are LangGraph's, unchanged (``../README.md`` names their
release, path and checksum). This file is the only thing swapped in: it replaces the PostgreSQL
package's ``tests/conftest.py`` (a Docker server on ``localhost:5441``) and wraps every store
the tests build.

* **The store.** An autouse fixture, parametrized over the read policy (``native`` and the
  project's default), replaces the store classes the test module imported (``InMemoryStore``,
  ``SqliteStore``, ``AsyncSqliteStore``, ``PostgresStore``, ``AsyncPostgresStore``) by a
  subclass whose constructor (and so ``from_conn_string``) builds the real store and hands the
  test ``MemPursuitStore(store, policy=...)``.
* **PostgreSQL.** PostgreSQL 16 + pgvector from the ``pgserver`` wheel (``pg_fixture.py``),
  started once per session by the first PostgreSQL test, on a Unix socket in a fresh folder.
  The tests read the server's address from the module constant :data:`DEFAULT_URI` (their
  ``from tests.conftest import DEFAULT_URI``), so the folder is chosen when this file is imported
  and the socket's path is written into the URI's host, percent-encoded.
* **SQLite.** sqlite-vec needs ``sqlite3.Connection.enable_load_extension``, which some Python
  builds lack: there the stores' and aiosqlite's ``sqlite3`` is ``pysqlite3`` (the
  ``pysqlite3-binary`` wheel, .ci/requirements-langgraph.txt), as ``mempursuit eval`` does.
* **Default policy.** Under the default policy, query searches come back in the policy's order,
  not by similarity: the tests in :data:`ORDER_TESTS` assert that order and are marked
  ``xfail(strict=True)`` with why, so one that starts passing fails the run and is noticed.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from mempursuit_core import DEFAULT_POLICY
from mempursuit_langgraph import MemPursuitStore

from tests.embed_test_utils import CharacterEmbeddings

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # integration_tests/
from pg_fixture import postgres_server  # noqa: E402

__all__ = ["CharacterEmbeddings", "DEFAULT_URI", "VECTOR_TYPES"]

#: What the PostgreSQL tests import from their conftest (the values of checkpoint-postgres 3.2.0's
#: ``tests/conftest.py``, but for the server's address).
VECTOR_TYPES = ["vector", "halfvec"]
_PGDATA = Path(tempfile.mkdtemp(prefix="mp-lgconf-"))  # short: the Unix socket lies in it
DEFAULT_URI = f"postgresql://postgres@{quote(str(_PGDATA), safe='')}/postgres"

#: The read policies every test runs under.
POLICIES = ["native", DEFAULT_POLICY]

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
        return MemPursuitStore(store, policy=policy)

    return type(cls.__name__, (cls,), {"__new__": __new__, "__module__": __name__})


STORE_CLASSES = ("InMemoryStore", "SqliteStore", "AsyncSqliteStore", "PostgresStore",
                 "AsyncPostgresStore")


@pytest.fixture(autouse=True, params=POLICIES)
def mempursuit_policy(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every store the test builds is a ``MemPursuitStore`` with this read policy."""
    policy = request.param
    module = request.module
    if "postgres" in module.__name__:
        request.getfixturevalue("_postgres")
    for name in STORE_CLASSES:
        cls = getattr(module, name, None)
        if isinstance(cls, type):
            monkeypatch.setattr(module, name, _wrapping(cls, policy))
    return policy


def _test_key(item: pytest.Item) -> str:
    """``module.py::[Class::]test`` without the parameter ids."""
    name = item.nodeid.split("/")[-1]
    return name.split("[", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or callspec.params.get("mempursuit_policy") == "native":
            continue
        reason = ORDER_TESTS.get(_test_key(item))
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
