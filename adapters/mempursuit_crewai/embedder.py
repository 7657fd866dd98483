"""The packaged offline embedder as a CrewAI embedder (no download, no API key)::

    from crewai.memory.unified_memory import Memory
    from mempursuit_crewai import MemPursuitEmbedder

    memory = Memory(storage="./memory", embedder=MemPursuitEmbedder())

CrewAI's ``Memory(embedder=...)`` takes any callable from a list of texts to their vectors;
:class:`MemPursuitEmbedder` is one, over :func:`mempursuit_core.embed.get_embedder`: the default
is the packaged all-MiniLM-L6-v2 (int8 ONNX, 384-d, needs the ``[embed]`` extra, which the
``[crewai]`` extra brings); ``"st:<model>"`` a sentence-transformers model. The model loads at
the first call.
"""

from __future__ import annotations

from typing import Any, List

import numpy as np

from mempursuit_core.adapter import get_embedder

__all__ = ["MemPursuitEmbedder"]


class MemPursuitEmbedder:
    """A CrewAI embedding callable over :func:`mempursuit_core.embed.get_embedder`.

    Parameters
    ----------
    model : str, default ``"minilm"``
        The embedder's name.
    **options
        ``threads``, ``batch_size``, ``max_length``, ... passed to ``get_embedder``.

    Notes
    -----
    Vectors are L2-normalised float32 rows; queries and memories are embedded alike (no
    prefix), as CrewAI embeds both through the same callable.
    """

    def __init__(self, model: str = "minilm", **options: Any):
        if not isinstance(model, str) or not model:
            raise ValueError("MemPursuitEmbedder: model must be an embedder name such as "
                             f"'minilm', got {model!r}")
        self.model, self.options, self._encoder = model, dict(options), None

    def _model(self):
        if self._encoder is None:
            self._encoder = get_embedder(self.model, **self.options)
        return self._encoder

    @property
    def dim(self) -> int:
        """The vectors' length (loads the model)."""
        return int(self._model().dim)

    def __call__(self, input: List[str]) -> List[np.ndarray]:
        """One vector per text (CrewAI's ``embed_text`` / ``embed_texts`` call it this way)."""
        texts = list(input)
        if not texts:
            return []
        return list(np.asarray(self._model().encode(texts), dtype=np.float32))
