"""The packaged offline embedder as a Semantic Kernel embedding generator (no download, no API
key)::

    from semantic_kernel.connectors.in_memory import InMemoryCollection
    from mempursuit_semantic_kernel import MemPursuitEmbeddingGenerator

    collection = InMemoryCollection(record_type=Memory, collection_name="memories",
                                    embedding_generator=MemPursuitEmbeddingGenerator())

Any :func:`mempursuit_core.embed.get_embedder` model: the default is the packaged
all-MiniLM-L6-v2 (int8 ONNX, 384-d, needs the ``[embed]`` extra, which
the ``[semantic-kernel]`` extra brings); ``"st:<model>"`` a sentence-transformers model. The
model loads at the first call.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np
from pydantic import PrivateAttr
from semantic_kernel.connectors.ai.embedding_generator_base import EmbeddingGeneratorBase

from mempursuit_core.adapter import get_embedder

__all__ = ["MemPursuitEmbeddingGenerator"]


class MemPursuitEmbeddingGenerator(EmbeddingGeneratorBase):
    """A Semantic Kernel ``EmbeddingGeneratorBase`` over
    :func:`mempursuit_core.embed.get_embedder`.

    Parameters
    ----------
    model : str, default ``"minilm"``
        The embedder's name (also the service's ``ai_model_id``).
    **options
        ``threads``, ``batch_size``, ``max_length``, ... passed to ``get_embedder``.

    Notes
    -----
    Vectors are L2-normalised float32; queries and records are embedded alike (no prefix).
    """

    _options: Dict[str, Any] = PrivateAttr(default_factory=dict)
    _encoder: Any = PrivateAttr(default=None)

    def __init__(self, model: str = "minilm", **options: Any):
        if not isinstance(model, str) or not model:
            raise ValueError("MemPursuitEmbeddingGenerator: model must be an embedder name such "
                             f"as 'minilm', got {model!r}")
        super().__init__(ai_model_id=model)
        self._options = dict(options)

    def _model(self):
        if self._encoder is None:
            self._encoder = get_embedder(self.ai_model_id, **self._options)
        return self._encoder

    async def generate_embeddings(self, texts, settings=None, **kwargs: Any) -> np.ndarray:
        """``(n, d)`` float32 vectors of ``texts``."""
        texts = list(texts)
        if not texts:
            return np.empty((0, 0), dtype=np.float32)
        return np.asarray(self._model().encode(texts), dtype=np.float32)
