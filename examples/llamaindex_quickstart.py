"""MemPursuit in LlamaIndex's vector memory: the one-line swap, offline.

A ``VectorMemoryBlock`` over a local Qdrant folder (the block writes one node per message), the
packaged all-MiniLM-L6-v2 (int8 ONNX) as the LlamaIndex embed model, no LLM. It compares what
the block returns at K=2 with and without the postprocessor.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[llamaindex]" llama-index-vector-stores-qdrant
    python examples/llamaindex_quickstart.py

The swap is one argument of the block (or of any query engine / chat engine)::

    VectorMemoryBlock(vector_store=store, embed_model=embed_model, similarity_top_k=200,
                      node_postprocessors=[MemPursuitPostprocessor(k=10, vector_store=store)])

(the postprocessor embeds the query with ``embed_model=``, default ``Settings.embed_model``).
"""

import asyncio
import tempfile

from llama_index.core.llms import ChatMessage
from llama_index.core.memory import VectorMemoryBlock
from llama_index.vector_stores.qdrant import QdrantVectorStore
from qdrant_client import AsyncQdrantClient

from mempursuit_llamaindex import MemPursuitEmbedding, MemPursuitPostprocessor
from _sample import FACTS, QUESTION  # the sample memories (examples/_sample.py)


async def main():
    embed_model = MemPursuitEmbedding()  # the packaged MiniLM as a LlamaIndex embed model
    client = AsyncQdrantClient(path=tempfile.mkdtemp())
    store = QdrantVectorStore(collection_name="memories", aclient=client)
    writer = VectorMemoryBlock(vector_store=store, embed_model=embed_model)
    for fact in FACTS:
        await writer.aput([ChatMessage(role="user", content=fact)], session_id="alice")

    question = [ChatMessage(role="user", content=QUESTION)]
    native = VectorMemoryBlock(vector_store=store, embed_model=embed_model, similarity_top_k=2)
    ours = VectorMemoryBlock(vector_store=store, embed_model=embed_model, similarity_top_k=200,
                             node_postprocessors=[MemPursuitPostprocessor(
                                 k=2, vector_store=store, embed_model=embed_model)])
    print(QUESTION)
    for name, block in (("LlamaIndex alone", native), ("with MemPursuit", ours)):
        print(f"\n{name}:\n{await block.aget(question, session_id='alice')}")
    await client.close()


if __name__ == "__main__":
    asyncio.run(main())
