"""The packaged offline embedder as LangChain ``Embeddings`` (no download, no API key)::

    from mempursuit_langchain import MemPursuitEmbeddings

    store = InMemoryVectorStore(MemPursuitEmbeddings())

Any :func:`mempursuit_core.embed.get_embedder` model: ``MemPursuitEmbeddings()`` is the packaged
all-MiniLM-L6-v2 (int8 ONNX, 384-d, needs the ``[embed]`` extra, which the ``[langchain]`` extra
brings); ``MemPursuitEmbeddings("st:<model>")`` a sentence-transformers model.
"""

from __future__ import annotations

from typing import Any, List

from langchain_core.embeddings import Embeddings

from mempursuit_core.adapter import get_embedder

__all__ = ["MemPursuitEmbeddings"]


class MemPursuitEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over ``get_embedder(model, **options)``.

    Parameters
    ----------
    model : str, default ``"minilm"``
        The embedder's name (:func:`mempursuit_core.embed.get_embedder`).
    **options
        ``threads``, ``batch_size``, ``max_length``, ... passed to ``get_embedder``.

    Notes
    -----
    Vectors are L2-normalised lists of floats, length d; queries and documents are embedded
    alike. The async methods are LangChain's defaults (the sync call in a thread).
    """

    def __init__(self, model: str = "minilm", **options: Any):
        self.encoder = get_embedder(model, **options)

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return self.encoder.encode(list(texts)).tolist() if texts else []

    def embed_query(self, text: str) -> List[float]:
        return self.encoder.encode([text])[0].tolist()
