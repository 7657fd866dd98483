"""An OpenAI-compatible embeddings endpoint as a harness embedder (``--embedder openai:MODEL``).

Standard library only (``urllib``). Requests: ``POST {url}/v1/embeddings`` (or
``{url}/embeddings`` when ``url`` ends in ``/v1``; ``url`` itself when it ends in
``/embeddings``) with ``{"model": MODEL, "input": [texts], "encoding_format": "float"}`` and,
when the environment variable named by ``key_env`` is set, ``Authorization: Bearer <key>``.
The answer's ``data[i].embedding`` are put back in input order by ``data[i].index``.

* Batching: ``batch_size`` texts per request; ``concurrency`` requests in flight (threads).
* Retries: 429, 5xx, timeouts and dropped connections are retried ``retries`` times with
  exponential backoff (``backoff * 2**attempt``, capped at ``max_backoff``); a ``Retry-After``
  header (seconds or an HTTP date) sets the wait instead (capped at ``max_backoff``). Other
  4xx answers fail at once (401 / 403 name the key's environment variable).
* Dimension: every vector must have the same length (``expected_dim`` when given, else the
  first response's); vectors whose L2 norm is off 1 by more than ``1e-5`` are normalised, the
  others are kept bit for bit.
* Caching: :class:`RemoteCachedEmbedder` (what :func:`cached_embedder` builds for this
  embedder) writes every answered batch to the harness's content-hash cache as it arrives, so a
  run that fails half way keeps what it got and a rerun asks only for the missing texts; a
  second run of the same texts makes no request at all.

Every failure is an :class:`EmbeddingRequestError` (a ``ValueError``) with one line naming the
URL.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence

import numpy as np

from .cache import CachedEmbedder

__all__ = ["OpenAIEmbedder", "EmbeddingRequestError", "RemoteCachedEmbedder", "make_embedder",
           "cached_embedder", "embeddings_url", "PREFIX"]

PREFIX = "openai:"
RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
NORM_TOLERANCE = 1e-5


class EmbeddingRequestError(ValueError):
    """The embeddings endpoint failed (after retries where retrying makes sense)."""


def embeddings_url(url: str) -> str:
    """The endpoint for base ``url`` (see the module docstring)."""
    if not isinstance(url, str) or not url.strip():
        raise EmbeddingRequestError("--embedder openai:MODEL needs --embedder-url URL "
                                    "(e.g. http://localhost:8000/v1)")
    u = url.strip().rstrip("/")
    if not u.startswith(("http://", "https://")):
        raise EmbeddingRequestError(f"--embedder-url must start with http:// or https://, got {url!r}")
    if u.endswith("/embeddings"):
        return u
    if u.endswith("/v1"):
        return u + "/embeddings"
    return u + "/v1/embeddings"


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + "..."


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible HTTP endpoint (see the module docstring).

    Parameters
    ----------
    model : str
    url : str
        Base URL (``http://host:port``, ``.../v1``) or the full ``.../embeddings`` endpoint.
    key_env : str, optional
        Environment variable holding the API key; unset (or None): no Authorization header.
    batch_size, concurrency, retries : int
    timeout : float
        Seconds per request.
    expected_dim : int, optional
    backoff, max_backoff : float
        Seconds: first retry wait and the cap of any wait.
    """

    def __init__(self, model: str, url: str, *, key_env: str | None = None, batch_size: int = 64,
                 concurrency: int = 4, retries: int = 5, timeout: float = 60.0,
                 expected_dim: int | None = None, backoff: float = 0.5, max_backoff: float = 60.0):
        if not isinstance(model, str) or not model.strip():
            raise EmbeddingRequestError("give a model after 'openai:', e.g. "
                                        "openai:text-embedding-3-small")
        self.model = model.strip()
        self.url = embeddings_url(url)
        self.key_env = key_env or None
        for name, v, low in (("batch_size", batch_size, 1), ("concurrency", concurrency, 1),
                             ("retries", retries, 0)):
            if int(v) < low:
                raise EmbeddingRequestError(f"embedder {name} must be >= {low}, got {v}")
        if float(timeout) <= 0:
            raise EmbeddingRequestError(f"embedder timeout must be > 0, got {timeout}")
        if expected_dim is not None and int(expected_dim) < 1:
            raise EmbeddingRequestError(f"--embedder-dim must be >= 1, got {expected_dim}")
        self.batch_size = int(batch_size)
        self.concurrency = int(concurrency)
        self.retries = int(retries)
        self.timeout = float(timeout)
        self.expected_dim = int(expected_dim) if expected_dim is not None else None
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.name = f"{PREFIX}{self.model}"
        self._dim: int | None = self.expected_dim
        self._lock = threading.Lock()
        self.requests = 0  # HTTP requests sent (retries included)
        self.retried = 0   # of which retries

    # -- identity -------------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        """Model and endpoint: the content-hash cache is per (model, URL)."""
        h = hashlib.sha256(f"{self.model}|{self.url}".encode()).hexdigest()[:16]
        return f"openai-{self.model}-{h}"

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"])[0].shape[0])
        return self._dim

    # -- HTTP -------------------------------------------------------------------------------
    def _headers(self) -> dict:
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "mempursuit-eval"}
        if self.key_env:
            key = os.environ.get(self.key_env)
            if key:
                headers["Authorization"] = f"Bearer {key}"
        return headers

    def _auth_hint(self) -> str:
        if not self.key_env:
            return "no API key was sent (give --embedder-key-env VAR)"
        if not os.environ.get(self.key_env):
            return f"no API key was sent: ${self.key_env} is not set"
        return f"check the API key in ${self.key_env}"

    def _post(self, texts: list[str]) -> tuple[bytes | None, int | None, str, float | None]:
        """One request: (body, None, "", None) or (None, status or None, reason, retry_after)."""
        body = json.dumps({"model": self.model, "input": texts,
                           "encoding_format": "float"}).encode("utf-8")
        req = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        with self._lock:
            self.requests += 1
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return resp.read(), None, "", None
        except urllib.error.HTTPError as exc:
            try:
                detail = exc.read().decode("utf-8", "replace")
            except Exception:  # noqa: BLE001 - a broken error body still names the status
                detail = ""
            ra = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            return None, exc.code, _one_line(f"{exc.reason} {detail}".strip()), ra
        except (TimeoutError, socket.timeout):
            return None, None, f"timed out after {self.timeout:g} s", None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                return None, None, f"timed out after {self.timeout:g} s", None
            return None, None, f"cannot connect ({_one_line(reason)})", None
        except (ConnectionError, OSError) as exc:  # reset / dropped mid-answer
            return None, None, f"connection failed ({_one_line(exc)})", None

    def _request(self, texts: list[str]) -> np.ndarray:
        attempt = 0
        while True:
            raw, status, reason, retry_after = self._post(texts)
            if raw is not None:
                return self._parse(raw, len(texts))
            if status in (401, 403):
                raise EmbeddingRequestError(
                    f"embedder {self.url}: HTTP {status} ({reason}); {self._auth_hint()}")
            retryable = status is None or status in RETRY_STATUS or status >= 500
            if not retryable or attempt >= self.retries:
                what = f"HTTP {status} ({reason})" if status is not None else reason
                tries = f" after {attempt + 1} attempt(s)" if retryable else ""
                raise EmbeddingRequestError(f"embedder {self.url}: {what}{tries}")
            wait_s = retry_after if retry_after is not None else self.backoff * (2 ** attempt)
            time.sleep(min(wait_s, self.max_backoff))
            attempt += 1
            with self._lock:
                self.retried += 1

    def _parse(self, raw: bytes, n: int) -> np.ndarray:
        try:
            doc = json.loads(raw)
            data = doc["data"]
            if not isinstance(data, list):
                raise TypeError("'data' is not a list")
            if all("index" in d for d in data):
                data = sorted(data, key=lambda d: int(d["index"]))
                indices = [int(d["index"]) for d in data]
            else:  # no indices: the answer's order
                indices = list(range(len(data)))
            vecs = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbeddingRequestError(f"embedder {self.url}: unexpected answer ({exc!r}); "
                                        "expected {'data': [{'index', 'embedding'}]}") from None
        if len(vecs) != n or indices != list(range(n)):
            raise EmbeddingRequestError(f"embedder {self.url}: {len(vecs)} embeddings (indices "
                                        f"{_one_line(indices, 60)}) for {n} texts")
        lengths = {len(v) if isinstance(v, list) else -1 for v in vecs}
        if -1 in lengths:
            raise EmbeddingRequestError(f"embedder {self.url}: an embedding is not a list of "
                                        "floats (base64 answers are not supported)")
        if len(lengths) > 1:
            raise EmbeddingRequestError(f"embedder {self.url}: vectors of different dimensions "
                                        f"{sorted(lengths)} in one answer")
        d = lengths.pop()
        with self._lock:
            if self._dim is None:
                self._dim = d
            want = self._dim
        if d != want:
            src = "--embedder-dim" if self.expected_dim is not None else "the first answer"
            raise EmbeddingRequestError(f"embedder {self.url}: got {d}-dimensional vectors, "
                                        f"expected {want} ({src})")
        try:
            with np.errstate(over="ignore", invalid="ignore"):  # said below, in one line
                arr = np.asarray(vecs, dtype=np.float32)
        except (TypeError, ValueError, OverflowError):
            raise EmbeddingRequestError(f"embedder {self.url}: an embedding holds a "
                                        "non-number") from None
        if not np.isfinite(arr).all():
            raise EmbeddingRequestError(f"embedder {self.url}: an embedding holds NaN, inf or a "
                                        "value too large for float32 (above 3.4e38)")
        norms = np.linalg.norm(arr.astype(np.float64), axis=1)
        if (norms == 0).any():
            raise EmbeddingRequestError(f"embedder {self.url}: a zero vector came back")
        off = np.abs(norms - 1.0) > NORM_TOLERANCE
        if off.any():
            arr[off] = (arr[off].astype(np.float64) / norms[off, None]).astype(np.float32)
        return arr

    # -- the Embedder contract -------------------------------------------------------------
    def encode_batches(self, texts: Sequence[str],
                       sink: Callable[[int, np.ndarray], None] | None = None,
                       *, batch_size: int | None = None) -> np.ndarray:
        """Embed ``texts``; ``sink(start, vecs)`` gets each answered batch as it arrives (in the
        calling thread). On a failure the batches already answered have been given to ``sink``
        before the error is raised."""
        texts = list(texts)
        bs = int(batch_size or self.batch_size)
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        starts = list(range(0, len(texts), bs))
        results: dict[int, np.ndarray] = {}
        error: BaseException | None = None
        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(starts)),
                                  thread_name_prefix="mempursuit-embed")
        # not ``with``: its exit would wait for every queued request after a Ctrl-C
        futures = {pool.submit(self._request, texts[s : s + bs]): s for s in starts}
        pending = set(futures)
        try:
            while pending:
                # a bounded wait: a Ctrl-C's handler runs in this thread, and only between waits
                # where the signal reached another thread
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for f in done:
                    exc = f.exception()
                    if exc is not None:
                        error = error or exc
                        continue
                    results[futures[f]] = f.result()
                    if sink is not None:
                        sink(futures[f], results[futures[f]])
                if error is not None:
                    for f in pending:
                        f.cancel()
                    # let the requests already running finish and keep their answers
                    done, _ = wait(pending)
                    for f in done:
                        if not f.cancelled() and f.exception() is None:
                            results[futures[f]] = f.result()
                            if sink is not None:
                                sink(futures[f], results[futures[f]])
                    pending = set()
        except BaseException:  # Ctrl-C: start no queued request; answered ones are kept
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        if error is not None:
            raise error
        return np.concatenate([results[s] for s in starts], axis=0)

    def encode(self, texts: Sequence[str], *, batch_size: int | None = None,
               progress: Callable[[int], None] | None = None) -> np.ndarray:
        """L2-normalised float32 embeddings, shape ``(n, dim)``."""
        if isinstance(texts, str):
            raise TypeError("encode() takes a sequence of strings, not a single string")
        sink = (lambda start, vecs: progress(len(vecs))) if progress is not None else None
        return self.encode_batches(texts, sink, batch_size=batch_size)

    def __repr__(self) -> str:
        return f"<OpenAIEmbedder {self.model!r} at {self.url}>"


class RemoteCachedEmbedder(CachedEmbedder):
    """:class:`~mempursuit_eval.cache.CachedEmbedder` for :class:`OpenAIEmbedder`: each answered
    batch is stored at once (not per chunk), so a failed run keeps every batch it got."""

    def __init__(self, inner: OpenAIEmbedder, cache_dir=None):
        super().__init__(inner, cache_dir)

    @property
    def dim(self) -> int:
        if self._dim is None:
            if self.inner._dim is not None:
                self._dim = int(self.inner._dim)
            elif len(self.cache):  # known from the cache: no probe request
                self._dim = int(self.cache._blocks[0].shape[1])
            else:
                self._dim = int(self.inner.dim)
        return self._dim

    def _fill(self, todo: dict[bytes, str], progress, batch_size: int) -> None:
        tkeys = list(todo)

        def sink(start: int, vecs: np.ndarray) -> None:  # each answered batch is kept at once
            self.cache.add(tkeys[start : start + len(vecs)], vecs, persist=self.persist)
            if progress is not None:
                progress(len(vecs))

        # the endpoint's batch, not the harness's default
        self.inner.encode_batches(list(todo.values()), sink, batch_size=self.inner.batch_size)


_FLAGS = {"url": "--embedder-url", "key_env": "--embedder-key-env",
          "batch_size": "--embedder-batch", "concurrency": "--embedder-concurrency",
          "expected_dim": "--embedder-dim", "retries": "--embedder-retries",
          "timeout": "--embedder-timeout"}


def make_embedder(name: Any, *, threads: int | None = None, **options: Any):
    """The harness's embedder for ``--embedder NAME``: ``openai:MODEL`` here (``options``: the
    :class:`OpenAIEmbedder` parameters), anything else from
    :func:`mempursuit_core.embed.get_embedder` (``threads`` goes there)."""
    if isinstance(name, str) and name.strip().lower().startswith(PREFIX):
        return OpenAIEmbedder(name.strip()[len(PREFIX):], options.pop("url", None), **options)
    if options:
        flags = ", ".join(_FLAGS.get(k, k) for k in sorted(options))
        raise ValueError(f"{flags} only apply to --embedder openai:MODEL (got --embedder {name})")
    from mempursuit_core.embed import get_embedder

    opts = {} if threads is None else {"threads": threads}
    try:
        return get_embedder(name, **opts)
    except ValueError as exc:
        if "unknown embedder" in str(exc):
            raise ValueError(f"{exc}; or openai:MODEL (an OpenAI-compatible endpoint)") from None
        raise


def cached_embedder(inner, cache_root) -> CachedEmbedder:
    """The content-hash cache the harness puts around ``inner``."""
    if isinstance(inner, OpenAIEmbedder):
        return RemoteCachedEmbedder(inner, cache_root)
    return CachedEmbedder(inner, cache_root)
