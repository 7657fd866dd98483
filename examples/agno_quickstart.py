"""MemPursuit in Agno: a ``Knowledge`` reranker over a local LanceDB, offline.

Agno's ``Knowledge`` over a ``LanceDb`` folder, embedded with the packaged all-MiniLM-L6-v2
(int8 ONNX, ``MemPursuitEmbedder``), no LLM. It compares Knowledge's own top 2 with the 2
memories the default read policy picks from the top 200 the vector db returns for it.

    pip install -e ".[agno]"
    python examples/agno_quickstart.py

The swap::

    knowledge = Knowledge(vector_db=db, reranker=MemPursuitReranker(k=10))
"""

import logging
import tempfile

from agno.knowledge.knowledge import Knowledge
from agno.vectordb.lancedb import LanceDb

from mempursuit_agno import MemPursuitEmbedder, MemPursuitReranker
from _sample import FACTS, QUESTION  # the sample memories (examples/_sample.py)


def main():
    logging.getLogger("agno").setLevel(logging.WARNING)  # Agno logs every insert and search
    db = LanceDb(table_name="memories", uri=tempfile.mkdtemp(), embedder=MemPursuitEmbedder())
    knowledge = Knowledge(vector_db=db)
    for i, fact in enumerate(FACTS):
        knowledge.insert(text_content=fact, name=f"memory {i}", metadata={"speaker": "alice"})
    print(QUESTION)
    for name, reranker in [("Agno alone", None), ("MemPursuitReranker", MemPursuitReranker())]:
        found = Knowledge(vector_db=db, reranker=reranker).search(QUESTION, max_results=2)
        print(f"\n{name}:")
        for doc in found:
            print(" ", doc.content)


if __name__ == "__main__":
    main()
