"""The packaged offline embedder as a LlamaIndex embed model (no download, no API key)::

    from mempursuit_llamaindex import MemPursuitEmbedding

    index = VectorStoreIndex.from_documents(docs, embed_model=MemPursuitEmbedding())

Any :func:`mempursuit_core.embed.get_embedder` model: ``MemPursuitEmbedding()`` is the packaged
all-MiniLM-L6-v2 (int8 ONNX, 384-d, needs the ``[embed]`` extra, which the ``[llamaindex]`` extra
brings); ``MemPursuitEmbedding("st:<model>")`` a sentence-transformers model.
"""

from __future__ import annotations

from typing import Any, List

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr

from mempursuit_core.adapter import get_embedder

__all__ = ["MemPursuitEmbedding"]


class MemPursuitEmbedding(BaseEmbedding):
    """A LlamaIndex ``BaseEmbedding`` over ``get_embedder(model, **options)``.

    Parameters
    ----------
    model : str, default ``"minilm"``
        The embedder's name (:func:`mempursuit_core.embed.get_embedder`).
    embed_batch_size : int, default 64
        LlamaIndex's batch size.
    **options
        ``threads``, ``batch_size``, ``max_length``, ... passed to ``get_embedder``.

    Notes
    -----
    Vectors are L2-normalised, shape (d,) per text; queries and texts are embedded alike.
    """

    _encoder: Any = PrivateAttr()

    def __init__(self, model: str = "minilm", *, embed_batch_size: int = 64, **options: Any):
        encoder = get_embedder(model, **options)
        super().__init__(model_name=getattr(encoder, "name", model),
                         embed_batch_size=embed_batch_size)
        self._encoder = encoder

    @classmethod
    def class_name(cls) -> str:
        return "MemPursuitEmbedding"

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return self._encoder.encode(list(texts)).tolist()

    def _get_text_embedding(self, text: str) -> List[float]:
        return self._get_text_embeddings([text])[0]

    def _get_query_embedding(self, query: str) -> List[float]:
        return self._get_text_embedding(query)

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> List[float]:
        return self._get_text_embedding(text)
