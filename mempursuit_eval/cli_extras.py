"""``mempursuit eval`` flags for your own data, embedder and Mem0 store (docs/eval-custom-data.md).

Kept apart from :mod:`.cli` so that the core parser stays small: :func:`add_arguments` adds the
flags, :func:`config_fields` turns them into :class:`~mempursuit_eval.runner.EvalConfig` fields.
"""

from __future__ import annotations

import argparse

__all__ = ["EMBEDDER_HELP", "add_arguments", "config_fields"]

#: The ``--embedder`` help: every embedder the command line can build.
EMBEDDER_HELP = (
    "minilm (default: all-MiniLM-L6-v2, int8 ONNX, packaged, offline); "
    "st:NAME_OR_DIR (a sentence-transformers model name or directory; needs torch); "
    "openai:MODEL (any OpenAI-compatible /v1/embeddings endpoint, see --embedder-url)")


def _positive(kind):
    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a {kind.__name__}, got {text!r}") from None
        if v <= 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
        return v
    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("OpenAI-compatible embedder (--embedder openai:MODEL)")
    g.add_argument("--embedder-url", metavar="URL",
                   help="base URL: requests go to URL/v1/embeddings, or URL/embeddings when URL "
                        "ends in /v1 (or URL itself when it ends in /embeddings)")
    g.add_argument("--embedder-key-env", metavar="VAR",
                   help="environment variable holding the API key (sent as 'Authorization: "
                        "Bearer KEY'); unset or not given: no Authorization header")
    g.add_argument("--embedder-batch", type=_positive(int), metavar="N",
                   help="texts per request (default 64)")
    g.add_argument("--embedder-concurrency", type=_positive(int), metavar="N",
                   help="requests in flight at once (default 4)")
    g.add_argument("--embedder-dim", type=_positive(int), metavar="D",
                   help="expected vector dimension (checked; default: whatever the first "
                        "response has, then every vector must match it)")
    g.add_argument("--embedder-retries", type=int, metavar="N",
                   help="retries per request on 429 / 5xx / timeouts / dropped connections "
                        "(default 5; exponential backoff, Retry-After honoured)")
    g.add_argument("--embedder-timeout", type=_positive(float), metavar="S",
                   help="seconds per request (default 60)")

    g = p.add_argument_group("your own Mem0 store (read-only)")
    g.add_argument("--mem0-config", metavar="CONFIG.json",
                   help="with --framework mem0 --dataset custom: evaluate the Mem0 store this "
                        "Memory.from_config config opens (Qdrant), read-only; the questions' "
                        "gold ids are its memory ids and their group its user_id")


def config_fields(args) -> dict:
    """EvalConfig fields from the flags above."""
    opts = {}
    for flag, key in (("embedder_url", "url"), ("embedder_key_env", "key_env"),
                      ("embedder_batch", "batch_size"), ("embedder_concurrency", "concurrency"),
                      ("embedder_dim", "expected_dim"), ("embedder_retries", "retries"),
                      ("embedder_timeout", "timeout")):
        value = getattr(args, flag, None)
        if value is not None:
            opts[key] = value
    return {"embedder_options": opts, "mem0_config": getattr(args, "mem0_config", None)}
