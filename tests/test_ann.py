"""The ANN beam parameters (mempursuit_core.ann): pgvector targets, Qdrant search params, the
short-pool warning."""

from __future__ import annotations

import logging

import pytest

from mempursuit_core import ann


def test_pgvector_targets_raise_never_lower_and_cap():
    assert ann.pgvector_targets(200, "40", "1") == (200, 2, None)
    assert ann.pgvector_targets(20, "100", "5")[:2] == (100, 5)
    assert ann.pgvector_targets(200, None, None)[:2] == (200, 2)  # extension not loaded yet
    ef, _, warning = ann.pgvector_targets(5000, "40", "1")
    assert ef == ann.PGVECTOR_EF_SEARCH_MAX and "1000" in warning
    assert ann.pgvector_targets(5000, "1000", "1")[2] is not None  # still cut at 1000


def test_qdrant_search_params_server_only():
    qdrant_client = pytest.importorskip("qdrant_client")
    local = qdrant_client.QdrantClient(":memory:")
    assert ann.qdrant_search_params(local, 200) is None  # exact search, would only warn
    assert ann.qdrant_search_params(local, 200, local_too=True).hnsw_ef == 200
    server = qdrant_client.QdrantClient(url="http://127.0.0.1:1", check_compatibility=False)
    assert ann.qdrant_search_params(server, 200).hnsw_ef == 200


def test_short_pool_warns_once(caplog):
    log = logging.getLogger("test_ann")
    with caplog.at_level(logging.WARNING):
        assert not ann.warn_short_pool(40, 200, 40, store="S", setting="ef", log=log)
        assert ann.warn_short_pool(40, 200, None, store="S", setting="ef", log=log)
        assert ann.warn_short_pool(41, 200, 5000, store="S", setting="ef", log=log)
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 1 and "raise it to at least 200" in msgs[0]
