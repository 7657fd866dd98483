"""What several benchmark scripts share (``from _common import ...``: Python puts a script's own
folder, benchmarks/, first on its path)."""

from __future__ import annotations

from pathlib import Path

from mempursuit_core.embed import get_embedder
from mempursuit_eval.cache import CachedEmbedder
from mempursuit_eval.datasets import default_cache_dir
from mempursuit_eval.store import PlainStore

#: the benchmark data beside the checkout (``../shared/data``), the scripts' default
SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def plain_store(units, order: str = "hybrid", threads: int | None = None):
    """The harness's plain store over ``units`` in native ``order`` (``"dense"`` or
    ``"hybrid"``), embedded with the packaged MiniLM (``threads``: its onnxruntime threads,
    default every core) through the embedding cache.

    Returns
    -------
    tuple of (PlainStore, CachedEmbedder)
        The built store, and the embedder (for the queries' vectors).
    """
    embedder = CachedEmbedder(get_embedder(threads=threads), default_cache_dir())
    store = PlainStore(order)
    store.build(units, embedder=embedder)
    return store, embedder
