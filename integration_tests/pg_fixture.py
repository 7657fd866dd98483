"""A real PostgreSQL 16 with pgvector for the integration tests, from the ``pgserver`` wheel.

Not a conftest: imported by the modules that need it (``test_mem0.py``, ``test_langgraph.py``).
The server runs in a directory of the test's own, is started by the test and stopped after it;
nothing is installed system-wide and nothing is reached over the network.
"""

from __future__ import annotations

import os
import shutil
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest

HINT = "needs pgserver and psycopg (PostgreSQL + pgvector in a wheel): .ci/requirements-mem0.txt"


@contextmanager
def postgres_server(path: Path) -> Iterator[Any]:
    """A started pgserver (``.get_uri()``) in ``path``; stopped on exit.

    Skips the calling test when pgserver or psycopg is not installed (CI installs both).
    """
    pgserver = pytest.importorskip("pgserver", reason=HINT)
    pytest.importorskip("psycopg", reason=HINT)
    _root_can_add_pgserver_user()
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        server = pgserver.get_server(str(path), cleanup_mode="stop")
    try:
        yield server
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            server.cleanup()


def _root_can_add_pgserver_user() -> None:
    """As root, pgserver runs PostgreSQL as the system user ``pgserver``, created by ``useradd``.

    With no such user and no ``useradd`` on PATH (a PATH without /usr/sbin), say so in one line
    instead of a FileNotFoundError deep in pgserver.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("useradd"):
        return
    import pwd

    try:
        pwd.getpwnam("pgserver")
    except KeyError:
        pytest.fail("pgserver runs PostgreSQL as the system user 'pgserver' when the tests run "
                    "as root and creates it with useradd, which is not on PATH: add /usr/sbin "
                    "to PATH", pytrace=False)
