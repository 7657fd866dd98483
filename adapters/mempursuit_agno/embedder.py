"""The packaged offline embedder as an Agno embedder (no download, no API key)::

    from agno.vectordb.lancedb import LanceDb
    from mempursuit_agno import MemPursuitEmbedder

    db = LanceDb(table_name="memories", uri="lancedb", embedder=MemPursuitEmbedder())

Any :func:`mempursuit_core.embed.get_embedder` model: the default is the packaged
all-MiniLM-L6-v2 (int8 ONNX, 384-d, needs the ``[embed]`` extra, which the ``[agno]`` extra
brings); ``"st:<model>"`` a sentence-transformers model. The model loads at the first call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from agno.knowledge.embedder.base import Embedder

from mempursuit_core.adapter import get_embedder

__all__ = ["MemPursuitEmbedder"]


@dataclass
class MemPursuitEmbedder(Embedder):
    """An Agno ``Embedder`` over :func:`mempursuit_core.embed.get_embedder`.

    Parameters
    ----------
    model : str, default ``"minilm"``
        The embedder's name.
    options : dict, optional
        ``threads``, ``batch_size``, ``max_length``, ... passed to ``get_embedder``.
    dimensions : int, default 384
        The vectors' length (a vector db sizes its column by it); checked against the model's.

    Notes
    -----
    Vectors are L2-normalised; queries and documents are embedded alike (no prefix). Usage is
    None (nothing is billed).
    """

    model: str = "minilm"
    options: Dict[str, Any] = field(default_factory=dict)
    dimensions: Optional[int] = 384
    enable_batch: bool = True
    batch_size: int = 64

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"MemPursuitEmbedder: model must be an embedder name such as "
                             f"'minilm', got {self.model!r}")
        self._encoder = None

    def _model(self):
        if self._encoder is None:
            self._encoder = get_embedder(self.model, **self.options)
            dim = int(self._encoder.dim)
            if self.dimensions not in (None, dim):
                raise ValueError(f"MemPursuitEmbedder: {self.model!r} gives {dim}-d vectors, "
                                 f"not dimensions={self.dimensions}: pass dimensions={dim}")
            self.dimensions = dim
        return self._encoder

    def embed(self, texts: List[str]) -> List[List[float]]:
        """The texts' vectors, one list of floats each."""
        return self._model().encode(list(texts)).tolist() if texts else []

    def get_embedding(self, text: str) -> List[float]:
        return self.embed([text])[0]

    def get_embedding_and_usage(self, text: str) -> Tuple[List[float], Optional[Dict]]:
        return self.get_embedding(text), None

    def get_embeddings_batch_and_usage(self, texts: List[str]
                                       ) -> Tuple[List[List[float]], List[Optional[Dict]]]:
        return self.embed(texts), [None] * len(texts)

    async def async_get_embedding(self, text: str) -> List[float]:
        return self.get_embedding(text)

    async def async_get_embedding_and_usage(self, text: str
                                            ) -> Tuple[List[float], Optional[Dict]]:
        return self.get_embedding(text), None

    async def async_get_embeddings_batch_and_usage(self, texts: List[str]
                                                   ) -> Tuple[List[List[float]],
                                                              List[Optional[Dict]]]:
        return self.get_embeddings_batch_and_usage(texts)
