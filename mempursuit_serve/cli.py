"""``mempursuit serve``: argument parsing, logging set-up and uvicorn; the app is
:mod:`mempursuit_serve.app`."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .config import ServeConfig

__all__ = ["add_serve_parser", "run_serve"]

EPILOG = """examples:
  mempursuit serve --port 8080
  MEMPURSUIT_TOKEN=secret mempursuit serve --host 0.0.0.0 --workers 2 --token-env MEMPURSUIT_TOKEN
  curl -s localhost:8080/v1/rerank -d '{"query": "q", "documents": ["a", "b"], "top_n": 1}'
(docs/serve.md: the request and response fields, the limits, the deployment)
"""


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0:
            raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
        return value
    parse.__name__ = kind.__name__
    return parse


def add_serve_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``serve`` command to an ``argparse`` subparsers object."""
    d = ServeConfig()
    p = subparsers.add_parser(
        "serve", help="the read as a Cohere-compatible rerank endpoint (/v1/rerank, /v2/rerank)",
        description="A stateless HTTP service answering Cohere's rerank shapes with the read "
                    "policy's order (docs/serve.md).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="default 127.0.0.1")
    p.add_argument("--port", type=int, default=8080, help="default 8080")
    p.add_argument("--workers", type=_positive(int), default=1,
                   help="uvicorn worker processes (default 1)")
    p.add_argument("--threads", type=_positive(int), default=d.threads,
                   help=f"read threads per worker (default {d.threads})")
    p.add_argument("--embed-threads", type=_positive(int),
                   help="onnxruntime threads per embedding call (default: every core; with "
                        "several workers, cores / workers)")
    p.add_argument("--policy", default=d.policy, help=f"default read policy (default {d.policy})")
    p.add_argument("--embedder", default=d.embedder,
                   help=f"embedder for requests without vectors (default {d.embedder})")
    p.add_argument("--max-documents", type=_positive(int), default=d.max_documents,
                   help=f"documents per request (default {d.max_documents})")
    p.add_argument("--max-body-bytes", type=_positive(int), default=d.max_body_bytes,
                   help=f"request body size (default {d.max_body_bytes})")
    p.add_argument("--deadline", type=_positive(float), default=d.deadline_s, metavar="SECONDS",
                   help=f"per request; then the input order, flagged (default {d.deadline_s})")
    p.add_argument("--cache-size", type=int, default=d.cache_size,
                   help=f"texts whose embedding is kept (default {d.cache_size}; 0: none)")
    p.add_argument("--token-env", metavar="VAR",
                   help="ask for 'Authorization: Bearer <token>', the token read from VAR")
    p.add_argument("--no-warm-up", action="store_true",
                   help="say ready at once (the embedder loads at the first request)")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.set_defaults(func=run_serve)
    return p


def run_serve(args) -> int:
    try:
        config = ServeConfig(max_documents=args.max_documents, max_body_bytes=args.max_body_bytes,
                             deadline_s=args.deadline, policy=args.policy, embedder=args.embedder,
                             cache_size=args.cache_size, threads=args.threads,
                             embed_threads=args.embed_threads,
                             token_env=args.token_env, warm_up=not args.no_warm_up)
        config.token()
    except ValueError as exc:
        print(f"mempursuit serve: {exc}", file=sys.stderr)
        return 2
    try:
        import uvicorn
    except ImportError:
        from mempursuit_core.adapter import install_line

        print(f"mempursuit serve needs uvicorn and starlette: {install_line('serve')}",
              file=sys.stderr)
        return 2
    from .app import configure_logging

    # each worker process builds its app (and its JSON logging) from these
    os.environ.update(config.to_env(), MEMPURSUIT_SERVE_LOG_LEVEL=args.log_level)
    configure_logging(args.log_level)  # the supervisor's own lines (workers started, restarted)
    log_config = {"version": 1, "disable_existing_loggers": False}  # keep ours
    uvicorn.run("mempursuit_serve.app:create_app_from_env", factory=True, host=args.host,
                port=args.port, workers=args.workers, access_log=False, log_config=log_config,
                log_level=args.log_level)
    return 0
