"""MemPursuit in CrewAI: a unified Memory whose recall reorders a pool of 200, offline.

CrewAI's ``Memory`` over a local LanceDB folder with the packaged all-MiniLM-L6-v2 (int8 ONNX,
``MemPursuitEmbedder``), no LLM: ``remember`` is given every field (scope, categories,
importance) and consolidation is off (``consolidation_threshold=1.0``), so CrewAI saves without
its LLM analysis, and recall is ``depth="shallow"`` (deep recall distils and explores with an
LLM). It compares CrewAI's own top 2 with the 2 memories the
default read policy picks from the top 200.

    pip install -e ".[crewai]"
    python examples/crewai_quickstart.py

The swap (``remember``, scopes, slices and ``Crew(memory=...)`` work unchanged)::

    memory = MemPursuitMemory(storage=path, embedder=embedder)   # was Memory(storage=path, ...)
"""

import os
import tempfile

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")  # before importing crewai
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")  # else each save waits out a 5 s timeout

from crewai.memory.unified_memory import Memory  # noqa: E402

from mempursuit_crewai import MemPursuitEmbedder, MemPursuitMemory  # noqa: E402
from _sample import FACTS, QUESTION  # noqa: E402  # the sample memories (examples/_sample.py)


def main():
    path, embedder = tempfile.mkdtemp(), MemPursuitEmbedder()
    # consolidation off: the paraphrases are similar enough for CrewAI to ask its LLM to merge
    memory = Memory(storage=path, embedder=embedder, consolidation_threshold=1.0)
    for fact in FACTS:  # every field given: CrewAI stores it without asking an LLM
        memory.remember(fact, scope="/", categories=[], importance=0.5,
                        metadata={"speaker": "alice"})
    print(QUESTION)
    for name, mem in [("CrewAI alone", memory),
                      ("MemPursuitMemory", MemPursuitMemory(storage=path, embedder=embedder))]:
        print(f"\n{name}:")
        for match in mem.recall(QUESTION, limit=2, depth="shallow"):
            print(" ", match.record.content)
        mem.close()


if __name__ == "__main__":
    main()
