"""MemPursuit as MemoryBank's seed choice, on MemoryBank's own memory file.

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[memorybank]"
    python examples/memorybank_quickstart.py [memory.json] [user] [question]

MemoryBank (SiliconFriend) is not on any registry; ``mempursuit_memorybank`` reads its memory
JSON, builds its documents and FAISS ``IndexFlatL2`` index (with the packaged offline MiniLM),
and returns what MemoryBank would put in its prompt. With the default read policy only the
choice of the K seeds changes (from the top-200 by L2; ``policy="native"`` is MemoryBank's own
choice); neighbour expansion, merging, date order and the resident summaries stay MemoryBank's.

The index is written beside the memory file by default (``<file>.mempursuit/<user>/``); this
example writes it to a temporary folder because the sample data is read-only. The memory file is
never written unless you call ``store.save_memory()``.
"""

import sys
import tempfile
from pathlib import Path

from mempursuit_memorybank import MemoryBankStore

ROOT = Path(__file__).resolve().parents[1]
memory_file = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests/fixtures/memorybank/memory_bank_en.json"
user = sys.argv[2] if len(sys.argv) > 2 else "Emily"
question = sys.argv[3] if len(sys.argv) > 3 else "I recommended a science fiction movie before, what was it?"
K = 2  # MemoryBank's default number of seeds (memory_search_top_k)

with tempfile.TemporaryDirectory() as tmp:
    store = MemoryBankStore.open(memory_file, user, index_dir=Path(tmp) / "index")
    print(store)
    print(f"question: {question}\n")
    for policy in ("native", None):  # None: the store's policy, mempursuit_core.DEFAULT_POLICY
        res = store.read(question, k=K, policy=policy)
        print(f"--- {res.policy}: seeds {list(res.seeds)} (pool {len(res.pool) or '-'}), dates {res.memo_dates}")
        for date, text in zip(res.dates, res.related_memos):
            print(f"[{date}] {text[:300]}{'...' if len(text) > 300 else ''}")
        print()

    fields = res.prompt_fields()  # the values MemoryBank formats its prompt templates with
    print("prompt fields:", {k: (v[:60] + "...") if len(v) > 60 else v for k, v in fields.items()})
    print("MemoryBank's app would use its memory prompt:", res.uses_memory_prompt,
          "(it needs overall_history and overall_personality, which the sample users lack)")

    # appends are incremental: only the new document is embedded, the memory file is untouched
    before = store.embedded_count
    store.add_turn("I watched Interstellar yesterday.", "Did you like it?", date="2023-05-07")
    print(f"\nappended one turn: {store.embedded_count - before} document embedded, {len(store)} in the index")
