"""MemPursuit in Semantic Kernel: a vector store collection wrapper, offline.

Semantic Kernel's ``InMemoryCollection`` with the packaged all-MiniLM-L6-v2 (int8 ONNX,
``MemPursuitEmbeddingGenerator``) as its embedding generator, no LLM. It compares the
collection's own top 2 with the 2 memories the default read policy picks from the top 200 the
collection returns with their vectors.

    pip install -e ".[semantic-kernel]"
    python examples/semantic_kernel_quickstart.py

The swap::

    collection = MemPursuitCollection(collection, k=10)
"""

import asyncio
from dataclasses import dataclass
from typing import Annotated

from semantic_kernel.connectors.in_memory import InMemoryCollection
from semantic_kernel.data.vector import VectorStoreField, vectorstoremodel

from mempursuit_semantic_kernel import MemPursuitCollection, MemPursuitEmbeddingGenerator
from _sample import FACTS, QUESTION  # the sample memories (examples/_sample.py)


@vectorstoremodel
@dataclass
class Memory:
    id: Annotated[str, VectorStoreField("key")]
    content: Annotated[str, VectorStoreField("data", is_full_text_indexed=True)]
    vector: Annotated[list[float] | str | None, VectorStoreField("vector", dimensions=384)] = None

    def __post_init__(self):
        if self.vector is None:
            self.vector = self.content  # the collection's generator embeds it at upsert


async def main():
    collection = InMemoryCollection(record_type=Memory, collection_name="memories",
                                    embedding_generator=MemPursuitEmbeddingGenerator())
    await collection.upsert([Memory(id=f"m{i}", content=f) for i, f in enumerate(FACTS)])
    print(QUESTION)
    for name, coll in [("Semantic Kernel alone", collection),
                       ("MemPursuitCollection", MemPursuitCollection(collection))]:
        found = await coll.search(QUESTION, top=2)
        print(f"\n{name}:")
        async for result in found.results:
            print(" ", result.record.content)


if __name__ == "__main__":
    asyncio.run(main())
