"""cognee with the packaged offline embedder (all-MiniLM-L6-v2, no server, no key).

cognee builds its embedding engine from its settings (``EMBEDDING_PROVIDER``: an API through
LiteLLM, Ollama, an OpenAI-compatible server, or fastembed, which downloads its model). For runs
with no network, such as this package's tests and example, :func:`use_offline_embedder` makes
cognee's engine factory return :class:`MiniLMEmbeddingEngine`, in this process only::

    from mempursuit_cognee import use_offline_embedder

    use_offline_embedder()      # before cognee.add / cognee.search

Not needed with cognee's own engines: the read policy uses whatever vectors cognee stored.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from cognee.infrastructure.databases.vector.embeddings.EmbeddingEngine import EmbeddingResult

from mempursuit_core.adapter import get_embedder

__all__ = ["MiniLMEmbeddingEngine", "use_offline_embedder"]

_FACTORY = "cognee.infrastructure.databases.vector.embeddings.get_embedding_engine"


class MiniLMEmbeddingEngine:
    """cognee's ``EmbeddingEngine`` protocol over a ``mempursuit_core`` embedder.

    Parameters
    ----------
    embedder : Embedder, optional
        Has ``dim`` and ``encode(texts) -> (n, dim)``; default ``get_embedder("minilm")``.
    batch_size : int, default 64
    """

    #: cognee's chunker counts tokens with the engine's tokenizer when it has one; None makes
    #: it count words, which is what a sentence embedder with no tokenizer object offers.
    tokenizer = None

    def __init__(self, embedder: Any = None, batch_size: int = 64):
        self.embedder = embedder if embedder is not None else get_embedder("minilm")
        self.batch_size = batch_size

    async def embed_text(self, text: Sequence[str]) -> EmbeddingResult:
        """One 384-d (the embedder's ``dim``) vector per text, as lists of float."""
        texts = [str(t) for t in text]
        vectors = self.embedder.encode(texts) if texts else []
        return EmbeddingResult([list(map(float, v)) for v in vectors],
                               tokens=sum(len(t.split()) for t in texts))

    def get_vector_size(self) -> int:
        return int(self.embedder.dim)

    def get_batch_size(self) -> int:
        return self.batch_size


def use_offline_embedder(engine: MiniLMEmbeddingEngine | None = None) -> MiniLMEmbeddingEngine:
    """Make cognee's embedding engine ``engine`` (default a new :class:`MiniLMEmbeddingEngine`).

    Call it before cognee builds its vector engine (before the first ``add`` / ``search`` of the
    process); set ``EMBEDDING_DIMENSIONS`` to the engine's size so cognee's collections match.
    """
    engine = engine if engine is not None else MiniLMEmbeddingEngine()
    factory = importlib.import_module(_FACTORY)
    if hasattr(factory.create_embedding_engine, "cache_clear"):  # cognee's lru_cache
        factory.create_embedding_engine.cache_clear()
    factory.create_embedding_engine = lambda *args, **kwargs: engine
    return engine
