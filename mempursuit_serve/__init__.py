"""``mempursuit serve``: the read as a Cohere-compatible rerank endpoint (``[serve]`` extra).

A stateless HTTP service (Starlette under uvicorn) that answers ``POST /v1/rerank`` and
``POST /v2/rerank`` in Cohere's shapes with the read policy's order, so that a framework's
Cohere reranker becomes the read by changing its base URL (``docs/serve.md``). It imports
only :mod:`mempursuit_core` (through :mod:`mempursuit_core.adapter`); the core never imports it.

Importing this package imports neither Starlette nor uvicorn: :func:`create_app` and the
command (:mod:`mempursuit_serve.cli`) do.
"""

from __future__ import annotations

from .config import ServeConfig

__all__ = ["ServeConfig", "create_app"]


def create_app(config: ServeConfig | None = None):
    """The ASGI application (see :func:`mempursuit_serve.app.create_app`)."""
    from .app import create_app as build

    return build(config)
