"""The packaged offline embedder as Haystack components (no download, no API key)::

    from mempursuit_haystack import MemPursuitDocumentEmbedder, MemPursuitTextEmbedder

    store.write_documents(MemPursuitDocumentEmbedder().run(documents)["documents"])
    pipeline.add_component("embedder", MemPursuitTextEmbedder())
    pipeline.connect("embedder.embedding", "retriever.query_embedding")

Any :func:`mempursuit_core.embed.get_embedder` model: the default is the packaged
all-MiniLM-L6-v2 (int8 ONNX, 384-d, needs the ``[embed]`` extra, which the ``[haystack]`` extra
brings); ``"st:<model>"`` a sentence-transformers model. The model is loaded by ``warm_up()``
(a pipeline calls it before its first run) or at the first run.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

from haystack import Document, component, default_from_dict, default_to_dict

from mempursuit_core.adapter import get_embedder

__all__ = ["MemPursuitDocumentEmbedder", "MemPursuitTextEmbedder"]


class _Embedder:
    """What both components share: the model, ``get_embedder(model, **options)`` loaded once
    (by ``warm_up``, which a pipeline calls before its first run, or at the first run), and
    Haystack's serialisation of ``model`` and the options."""

    def __init__(self, model: str = "minilm", **options: Any):
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be an embedder name such as 'minilm', got {model!r}")
        self.model, self._options, self._encoder = model, dict(options), None

    def warm_up(self) -> None:
        """Load the model (once)."""
        if self._encoder is None:
            self._encoder = get_embedder(self.model, **self._options)

    def _encode(self, texts: List[str]) -> List[List[float]]:
        self.warm_up()
        return self._encoder.encode(list(texts)).tolist() if texts else []

    def to_dict(self) -> Dict[str, Any]:
        return default_to_dict(self, model=self.model, **self._options)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> Any:
        return default_from_dict(cls, data)


@component
class MemPursuitTextEmbedder(_Embedder):
    """Embeds a query: ``run(text) -> {"embedding": list of float, length d}``.

    Parameters
    ----------
    model : str, default ``"minilm"``
        The embedder's name (:func:`mempursuit_core.embed.get_embedder`).
    **options
        ``threads``, ``batch_size``, ``max_length``, ... passed to ``get_embedder``.

    Notes
    -----
    Vectors are L2-normalised; queries and documents are embedded alike (no prefix).
    """

    @component.output_types(embedding=List[float])
    def run(self, text: str) -> Dict[str, Any]:
        if not isinstance(text, str):
            raise TypeError(f"MemPursuitTextEmbedder expects a string as input, got "
                            f"{type(text).__name__}: use MemPursuitDocumentEmbedder for documents")
        return {"embedding": self._encode([text])[0]}


@component
class MemPursuitDocumentEmbedder(_Embedder):
    """Embeds documents' ``content``: ``run(documents) -> {"documents": copies with
    .embedding set}`` (a list of float, length d; a document without content gets the empty
    text's vector).

    Parameters
    ----------
    model : str, default ``"minilm"``
    **options
        As for :class:`MemPursuitTextEmbedder`.
    """

    @component.output_types(documents=List[Document])
    def run(self, documents: List[Document]) -> Dict[str, Any]:
        documents = list(documents)
        if any(not isinstance(d, Document) for d in documents):
            raise TypeError("MemPursuitDocumentEmbedder expects a list of Documents: use "
                            "MemPursuitTextEmbedder for a string")
        vectors = self._encode([d.content or "" for d in documents])
        return {"documents": [dataclasses.replace(d, embedding=v)
                              for d, v in zip(documents, vectors)]}
