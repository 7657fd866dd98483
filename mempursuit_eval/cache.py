"""Content-hash caches: embeddings per text, keyed by the embedder's fingerprint.

Layout under the cache directory (``$MEMPURSUIT_CACHE`` or ``~/.cache/mempursuit``)::

    embeddings/<fingerprint>/<shard>.npz    keys: sha1(text) as uint8 (n, 20), vecs: float32 (n, dim)
    stores/<backend>-<hash>/               work directories of built stores

Shards are written atomically and never modified, so concurrent runs can share a cache.

Bad caches fail early and in one line (:class:`CacheError`, a ``ValueError``):

* :func:`check_cache_dir` (called by ``mempursuit eval`` before reading any data) and
  :class:`CachedEmbedder` (before embedding anything) check that the cache path is a folder, or
  can be made one, and that a file can be written there; a path that is a file, lies under a
  file, or is read-only is an error naming the path and the fix (``--cache-dir`` elsewhere or
  ``--no-cache``), raised before any long work starts.
* A shard that cannot be read (truncated, not a zip, wrong arrays or shapes) is an error that
  names the shard file and says to delete it (its texts are then embedded again on the next
  run). It is not skipped silently: shards are written atomically, so a broken one means
  something outside this code damaged the cache, which the user should know about.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import re
import tempfile
import uuid
import zipfile
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

__all__ = ["EmbeddingCache", "CachedEmbedder", "CacheError", "check_cache_dir", "text_key",
           "content_hash", "encode_with_progress"]

_FIX = "pass --cache-dir with a writable folder, or --no-cache"


class CacheError(ValueError):
    """The cache cannot be used (not a folder, not writable, a corrupt shard); the message is one
    line naming the path and the fix."""


def check_cache_dir(path: str | os.PathLike) -> Path:
    """Make ``path`` a usable cache folder or raise :class:`CacheError`.

    Creates the folder (and its parents) when missing, then writes and removes a probe file in
    it, so a read-only folder is found before any work rather than after the embedding.
    """
    root = Path(path).expanduser()
    if root.exists() and not root.is_dir():
        raise CacheError(f"cache directory {root} is a file, not a folder; {_FIX}")
    above = root
    while not above.exists() and above != above.parent:
        above = above.parent
    if above.exists() and not above.is_dir():
        raise CacheError(f"cache directory {root} lies under {above}, which is a file; {_FIX}")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CacheError(f"cannot create the cache directory {root} "
                         f"({exc.strerror or exc}); {_FIX}") from None
    try:
        fd, probe = tempfile.mkstemp(dir=root, prefix=".write-probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise CacheError(f"cache directory {root} is not writable ({exc.strerror or exc}); "
                         f"{_FIX}") from None
    return root


def text_key(text: str) -> bytes:
    """sha1 of the UTF-8 text (20 bytes)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()


def content_hash(*parts: object) -> str:
    """A short stable hex digest of the ``repr`` of ``parts`` (strings hashed as text)."""
    h = hashlib.sha256()
    for p in parts:
        h.update((p if isinstance(p, str) else repr(p)).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()[:20]


def _takes_progress(embedder) -> bool:
    try:
        return "progress" in inspect.signature(embedder.encode).parameters
    except (TypeError, ValueError):
        return False


def encode_with_progress(embedder, texts: Sequence[str], progress=None, **kw) -> np.ndarray:
    """``embedder.encode(texts)``, passing ``progress`` only to embedders that accept it."""
    if _takes_progress(embedder):
        return embedder.encode(texts, progress=progress, **kw)
    out = embedder.encode(texts, **kw)
    if progress is not None:
        progress(len(texts))
    return out


def safe_filename(name: str, limit: int = 120, fallback: str = "embedder") -> str:
    """``name`` as one path component: letters, digits and ``._-`` only, at most ``limit``."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:limit] or fallback


class EmbeddingCache:
    """Vectors of one embedder, stored in append-only shards.

    Parameters
    ----------
    root : path or None
        The cache directory (the shards go to ``root/embeddings/<fingerprint>``); ``None``
        keeps the vectors in memory only.
    fingerprint : str
        Identifies the embedder and everything that changes its vectors.
    """

    def __init__(self, root: str | os.PathLike | None, fingerprint: str):
        self.dir = (Path(root).expanduser() / "embeddings" / safe_filename(fingerprint)
                    if root is not None else None)
        self._index: dict[bytes, tuple[int, int]] = {}
        self._blocks: list[np.ndarray] = []
        self._loaded: set[str] = set()
        self.reload()

    def reload(self) -> None:
        """Read shards written since the last load (by this or another process)."""
        if self.dir is None or not self.dir.is_dir():
            return
        for f in sorted(self.dir.glob("*.npz")):
            if f.name in self._loaded:
                continue
            try:
                # our own handle: np.load leaks its own when the zip cannot be read
                with open(f, "rb") as fh, np.load(fh, allow_pickle=False) as z:
                    keys, vecs = z["keys"], np.ascontiguousarray(z["vecs"], dtype=np.float32)
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile,
                    zipfile.LargeZipFile) as exc:
                why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise CacheError(f"corrupt embedding cache shard {f} ({why}); delete that file "
                                 "(its texts are embedded again)") from None
            if (keys.ndim != 2 or keys.shape[1] != 20 or vecs.ndim != 2
                    or keys.shape[0] != vecs.shape[0]
                    or (self._blocks and vecs.shape[1] != self._blocks[0].shape[1])):
                raise CacheError(f"corrupt embedding cache shard {f} (bad keys / vectors "
                                 "shapes); delete that file (its texts are embedded again)")
            raw = np.ascontiguousarray(keys, dtype=np.uint8).tobytes()
            b = len(self._blocks)
            self._blocks.append(vecs)
            for r in range(keys.shape[0]):
                self._index.setdefault(raw[20 * r : 20 * r + 20], (b, r))
            self._loaded.add(f.name)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: bytes) -> bool:
        return key in self._index

    def get(self, key: bytes) -> np.ndarray:
        b, r = self._index[key]
        return self._blocks[b][r]

    def add(self, keys: Sequence[bytes], vecs: np.ndarray, *, persist: bool = True) -> None:
        vecs = np.ascontiguousarray(vecs, dtype=np.float32)
        if len(keys) != vecs.shape[0]:
            raise ValueError("keys and vectors differ in length")
        if not len(keys):
            return
        b = len(self._blocks)
        self._blocks.append(vecs)
        for r, k in enumerate(keys):
            self._index[k] = (b, r)
        if persist and self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)
            name = f"{uuid.uuid4().hex}.npz"
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".part-", suffix=".npz")
            try:
                with os.fdopen(fd, "wb") as f:
                    # raw bytes, not numpy "S20" (which drops trailing NUL bytes of a digest)
                    np.savez(f, keys=np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, 20),
                             vecs=vecs)
                os.replace(tmp, self.dir / name)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._loaded.add(name)


class CachedEmbedder:
    """Wraps an embedder: texts seen before (same content, same fingerprint) are not re-embedded.

    Duplicate texts within a call are embedded once. With ``cache_dir=None`` the cache lives
    in memory only.

    Parameters
    ----------
    inner : Embedder
    cache_dir : path or None
    chunk : int
        New vectors are persisted every ``chunk`` texts, and every finished batch when a run is
        interrupted, so a rerun embeds only what was not embedded.
    """

    def __init__(self, inner, cache_dir: str | os.PathLike | None = None, *, chunk: int = 2048):
        self.inner = inner
        self.name = inner.name
        self.fingerprint = getattr(inner, "fingerprint", None) or inner.name
        self.persist = cache_dir is not None
        self.cache = EmbeddingCache(cache_dir, self.fingerprint)
        if self.persist:  # fail now, not after the embedding, when nothing can be written
            check_cache_dir(self.cache.dir)
        self.chunk = int(chunk)
        self.hits = 0
        self.misses = 0
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.inner.dim)
        return self._dim

    def missing(self, texts: Sequence[str]) -> int:
        """How many distinct texts are not cached yet."""
        return len({k for k in map(text_key, texts) if k not in self.cache})

    def encode(self, texts: Sequence[str], *, batch_size: int = 64,
               progress: Callable[[int], None] | None = None) -> np.ndarray:
        """L2-normalised float32 embeddings, shape ``(n, dim)``, from the cache where possible.

        ``progress`` is called with counts of newly embedded texts (cached ones are reported at
        once).
        """
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of strings, not a single string")
        texts = list(texts)
        keys = [text_key(t) for t in texts]
        todo: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            if k not in self.cache and k not in todo:
                todo[k] = t
        self.misses += len(todo)
        self.hits += len(texts) - len(todo)
        if progress is not None and len(texts) - len(todo):
            progress(len(texts) - sum(1 for k in keys if k in todo))
        if todo:
            self._fill(todo, progress, batch_size)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        first = self.cache.get(keys[0])
        out = np.empty((len(texts), first.shape[0]), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = self.cache.get(k)
        self._dim = out.shape[1]
        return out

    def _fill(self, todo: dict[bytes, str], progress, batch_size: int) -> None:
        """Embed the texts not in the cache (``{key: text}``) and add them to it.

        The embedder is called one batch (``batch_size`` texts) at a time, shortest texts first
        (the packaged embedder pads a batch to its longest text); the vectors are persisted every
        ``chunk`` texts and, when the run stops early (Ctrl-C, an error), for every batch that
        was finished, so a rerun embeds only what was not (at most one batch is lost).
        """
        items = sorted(todo.items(), key=lambda kv: len(kv[1]))
        step = max(1, int(batch_size))
        keys: list[bytes] = []
        blocks: list[np.ndarray] = []

        def flush() -> None:
            if keys:
                self.cache.add(keys, np.concatenate(blocks), persist=self.persist)
                keys.clear()
                blocks.clear()

        try:
            for start in range(0, len(items), step):
                part = items[start : start + step]
                ptexts = [t for _, t in part]
                vecs = encode_with_progress(self.inner, ptexts, progress, batch_size=step)
                vecs = np.asarray(vecs, dtype=np.float32)
                if vecs.ndim != 2 or vecs.shape[0] != len(ptexts):
                    raise ValueError(f"embedder {self.name!r} returned shape {vecs.shape} for "
                                     f"{len(ptexts)} texts")
                keys.extend(k for k, _ in part)
                blocks.append(vecs)
                if len(keys) >= self.chunk:
                    flush()
        finally:  # also on KeyboardInterrupt: the finished batches are kept
            flush()

    def __repr__(self) -> str:
        return f"<CachedEmbedder {self.name!r} cached={len(self.cache)}>"
