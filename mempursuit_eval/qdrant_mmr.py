"""Qdrant's own MMR (``query: {nearest, mmr: {diversity, candidates_limit}}``) as a baseline.

Qdrant >= 1.15 (and Elasticsearch, OpenSearch, Weaviate) diversify inside the database; a
deployment at scale might pick that instead of a read policy. The ``qdrant-mmr`` policy of
``mempursuit eval`` runs Qdrant's MMR on the framework's pool: the pool's stored vectors go into
a cosine collection and the order is Qdrant's answer to an MMR query with
``candidates_limit = P``, ``limit = K``. On a dense pool that is what the database returns for
the whole store with ``candidates_limit=P``. Two engines:

* ``engine="edge"`` (default): Qdrant Edge (``qdrant-edge-py``, in the ``[eval]`` extra),
  Qdrant's own Rust engine in process (segments, the same query planner and MMR as the server),
  one shard in a temporary directory: ``Mmr(vector, lambda_=1 - diversity, candidates_limit=P)``;
* ``engine="local"``: qdrant-client's local mode (pure Python, the client's re-implementation
  of the server's query; ``pip install qdrant-client``, which ``[mem0]`` and ``[lightmem]``
  bring): ``NearestQuery(nearest=q, mmr=Mmr(diversity, candidates_limit=P))``.

PyPI ships no Qdrant server binary; Qdrant Edge is the server's engine as a library.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref

import numpy as np

from mempursuit_core import Selection
from mempursuit_core.install import install_line
from mempursuit_core.selectors import PoolSelector
from mempursuit_core.validation import unit_rows

__all__ = ["QdrantMMRSelector"]

ENGINES = ("edge", "local")


class QdrantMMRSelector(PoolSelector):
    """Qdrant's MMR query over the pool (Qdrant Edge, or qdrant-client's local mode).

    Parameters
    ----------
    diversity : float, default 0.5
        Qdrant's ``mmr.diversity`` (``1 - lambda``; 0.5 is the ``mmr`` policy's lambda 0.5).
    engine : {"edge", "local"}, default "edge"
        Qdrant Edge (``qdrant-edge-py``) or qdrant-client's local mode.
    """

    name = "qdrant-mmr"
    description = "Qdrant's own MMR query (diversity 0.5, candidates = the pool; Qdrant Edge)"
    nested = True  # greedy: the first K of a larger K's order

    def __init__(self, *, diversity: float = 0.5, engine: str = "edge"):
        if not 0.0 <= diversity <= 1.0:
            raise ValueError(f"diversity must be in [0, 1], got {diversity}")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        # each engine's package is checked here, so a missing one is one line before any pool
        module, install = (("qdrant_edge", install_line("eval") + ", qdrant-edge-py")
                           if engine == "edge" else ("qdrant_client", "pip install qdrant-client"))
        try:
            __import__(module)
        except ImportError:
            raise ValueError(f"qdrant-mmr with engine={engine} needs {module}, which is not "
                             f"installed: {install}") from None
        self.diversity = float(diversity)
        self.engine = engine
        self._client = None
        self._shard = None
        self._size = 0

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        q = np.asarray(q, dtype=np.float32).tolist()
        # cosine is scale-free: unit rows (scaled norms) keep tiny or huge rows finite in float32
        M = np.asarray(unit_rows(M), dtype=np.float32)
        ids = self._edge(q, M, k) if self.engine == "edge" else self._local(q, M, k)
        return Selection(order=np.asarray(ids, dtype=np.intp))

    def _edge(self, q, M, k) -> list[int]:
        import qdrant_edge as qe

        P, d = M.shape
        if self._shard is None or self._shard[1] != d:
            path = tempfile.mkdtemp(prefix="qdrant-mmr-")
            shard = qe.EdgeShard.create(path, qe.EdgeConfig(
                vectors=qe.EdgeVectorParams(size=d, distance=qe.Distance.Cosine)))
            weakref.finalize(self, _close, shard, path)
            self._shard, self._size = (shard, d), 0
        shard = self._shard[0]
        # one shard reused: this pool's points overwrite ids 0..P-1, the rest of the last go
        shard.update(qe.UpdateOperation.upsert_points(
            [qe.Point(i, row) for i, row in enumerate(M.tolist())]))
        if self._size > P:
            shard.update(qe.UpdateOperation.delete_points(list(range(P, self._size))))
        self._size = P
        got = shard.query(qe.QueryRequest(limit=min(k, P), query=qe.Mmr(q, 1.0 - self.diversity, P),
                                          with_vector=False))
        return [int(p.id) for p in got]

    def _local(self, q, M, k) -> list[int]:
        from qdrant_client import QdrantClient, models

        if self._client is None:
            self._client = QdrantClient(":memory:")
        client = self._client
        P, d = M.shape
        if client.collection_exists("pool"):
            client.delete_collection("pool")
        client.create_collection("pool", vectors_config=models.VectorParams(
            size=d, distance=models.Distance.COSINE))
        client.upsert("pool", points=models.Batch(ids=list(range(P)), vectors=M.tolist()))
        got = client.query_points(
            "pool", query=models.NearestQuery(
                nearest=q, mmr=models.Mmr(diversity=self.diversity, candidates_limit=P)),
            limit=min(k, P))
        return [int(p.id) for p in got.points]


def _close(shard, path: str) -> None:
    shard.close()
    shutil.rmtree(path, ignore_errors=True)
