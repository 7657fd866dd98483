"""The service's settings: one frozen dataclass, passed to each uvicorn worker through the
environment (``MEMPURSUIT_SERVE_<FIELD>``), so that every worker process builds the same app."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

from mempursuit_core.adapter import DEFAULT_POLICY

__all__ = ["ENV_PREFIX", "ServeConfig"]

ENV_PREFIX = "MEMPURSUIT_SERVE_"


@dataclass(frozen=True)
class ServeConfig:
    """Settings of one service process.

    Attributes
    ----------
    max_documents : int
        Documents per request above which it is refused (413).
    max_body_bytes : int
        Request body size above which it is refused (413).
    deadline_s : float
        Seconds per request after which the input order is returned, flagged
        ``deadline_exceeded`` (never a hang).
    policy : str
        The read policy when a request names none.
    embedder : str
        ``mempursuit_core.adapter.get_embedder`` name for requests without vectors.
    cache_size : int
        Texts whose embedding is kept (least recently used out); 0 keeps none.
    selector_cache : int
        (policy, options) pairs whose built selector is kept.
    threads : int
        Threads that embed and select (requests beyond them queue, under their deadline).
    embed_threads : int or None
        onnxruntime threads of one embedding call; None: every core (with several workers,
        cores / workers keeps them from fighting over the cores).
    token_env : str or None
        The environment variable holding the bearer token; None: no token asked.
    warm_up : bool
        Load the embedder and compile the policy before ``/ready`` says yes.
    """

    max_documents: int = 1000
    max_body_bytes: int = 16 * 1024 * 1024
    deadline_s: float = 10.0
    policy: str = DEFAULT_POLICY
    embedder: str = "minilm"
    cache_size: int = 20_000
    selector_cache: int = 32
    threads: int = 2
    embed_threads: int | None = None
    token_env: str | None = None
    warm_up: bool = True

    def __post_init__(self) -> None:
        for name in ("max_documents", "max_body_bytes", "selector_cache", "threads"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if not isinstance(self.cache_size, int) or self.cache_size < 0:
            raise ValueError(f"cache_size must be an integer >= 0, got {self.cache_size!r}")
        if self.embed_threads is not None and (not isinstance(self.embed_threads, int)
                                               or self.embed_threads < 1):
            raise ValueError(f"embed_threads must be an integer >= 1, got {self.embed_threads!r}")
        if not self.deadline_s > 0:
            raise ValueError(f"deadline_s must be > 0, got {self.deadline_s!r}")

    def token(self) -> str | None:
        """The bearer token from :attr:`token_env`, or None when no token is asked.

        Raises
        ------
        ValueError
            When ``token_env`` names a variable that is unset or empty (a service started to
            ask for a token must not silently ask for none).
        """
        if not self.token_env:
            return None
        value = os.environ.get(self.token_env, "")
        if not value:
            raise ValueError(f"--token-env {self.token_env}: that environment variable is unset "
                             "or empty")
        return value

    def to_env(self) -> dict[str, str]:
        """These settings as environment variables (:meth:`from_env` reads them back)."""
        return {ENV_PREFIX + f.name.upper(): json.dumps(getattr(self, f.name))
                for f in dataclasses.fields(self)}

    @classmethod
    def from_env(cls, environ=None) -> "ServeConfig":
        """Settings from ``MEMPURSUIT_SERVE_*`` variables; the defaults for those unset."""
        environ = os.environ if environ is None else environ
        values = {}
        for f in dataclasses.fields(cls):
            raw = environ.get(ENV_PREFIX + f.name.upper())
            if raw is not None:
                values[f.name] = json.loads(raw)
        return cls(**values)
