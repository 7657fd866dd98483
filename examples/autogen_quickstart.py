"""MemPursuit in AutoGen: a ChromaDBVectorMemory whose query reorders a pool of 200, offline.

AutoGen's ``ChromaDBVectorMemory`` over a local Chroma folder with the packaged
all-MiniLM-L6-v2 (int8 ONNX, ``MemPursuitEmbeddingFunction``), no LLM. It compares AutoGen's own
top 2 with the 2 memories the default read policy picks from the top 200.

    pip install -e ".[autogen]"
    python examples/autogen_quickstart.py

The swap (an agent's ``memory=[...]`` and ``update_context`` work unchanged)::

    memory = MemPursuitChromaDBVectorMemory(config=config)   # was ChromaDBVectorMemory(config=config)
"""

import asyncio
import tempfile

from autogen_core.memory import MemoryContent, MemoryMimeType
from autogen_ext.memory.chromadb import (ChromaDBVectorMemory, CustomEmbeddingFunctionConfig,
                                         PersistentChromaDBVectorMemoryConfig)

from mempursuit_autogen import MemPursuitChromaDBVectorMemory, MemPursuitEmbeddingFunction
from _sample import FACTS, QUESTION  # the sample memories (examples/_sample.py)


async def main():
    config = PersistentChromaDBVectorMemoryConfig(
        collection_name="memories", persistence_path=tempfile.mkdtemp(), k=2,
        embedding_function_config=CustomEmbeddingFunctionConfig(
            function=MemPursuitEmbeddingFunction, params={}))
    memory = ChromaDBVectorMemory(config=config)
    for fact in FACTS:
        await memory.add(MemoryContent(content=fact, mime_type=MemoryMimeType.TEXT))
    print(QUESTION)
    for name, mem in [("AutoGen alone", memory),
                      ("MemPursuitChromaDBVectorMemory", MemPursuitChromaDBVectorMemory(config))]:
        found = await mem.query(QUESTION)
        print(f"\n{name}:")
        for item in found.results:
            print(" ", item.content)
        await mem.close()


if __name__ == "__main__":
    asyncio.run(main())
