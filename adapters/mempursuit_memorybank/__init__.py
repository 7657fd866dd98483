"""MemoryBank adapter: a faithful reader of MemoryBank memories, with pursuit-chosen seeds.

MemoryBank (zhongwanjun/MemoryBank-SiliconFriend) is not on any package registry; this package
re-implements its memory read path (clean room) on its own on-disk format and replaces only the
choice of retrieval seeds. Importing it needs neither FAISS nor an embedder; building a store
does (``pip install -e ".[memorybank]"``).

>>> from mempursuit_memorybank import MemoryBankStore
>>> store = MemoryBankStore.open("memory_bank_en.json", user="Emily")     # doctest: +SKIP
>>> store.read("What movie did I watch?", k=2)                       # doctest: +SKIP
>>> store.read("What movie did I watch?", k=2, policy="native")      # doctest: +SKIP

``read`` uses ``mempursuit_core.DEFAULT_POLICY`` unless the store or the read names another
policy; ``policy="native"`` is MemoryBank's own top-``k`` by L2.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(
    name="memorybank", framework="faiss", extra="memorybank",
    module="mempursuit_memorybank",
    swap='store = MemoryBankStore.open("memory.json", user="Emily"); store.read(question, k=2)',
    docs="docs/adapters/memorybank.md",
    summary=("MemoryBank (SiliconFriend): faithful FAISS read path, seeds chosen by the read "
             "policy"),
    exports={**dict.fromkeys(("TEMPLATES", "Document", "DocumentSet", "Templates",
                              "build_documents", "detect_language"), "documents"),
             **dict.fromkeys(("MemoryBankFormatError", "Turn", "UnknownUserError", "UserMemory",
                              "list_users", "load_memory_file", "read_user",
                              "save_memory_file"), "memory"),
             **dict.fromkeys(("CHUNK_SIZE", "DEFAULT_TOP_K", "MemoryPiece", "ReadResult",
                              "ResidentMemory", "read_from_seeds"), "readpath"),
             **dict.fromkeys(("DEFAULT_POOL_SIZE", "MemoryBankStore", "default_index_dir"),
                             "store")},
    needs={},  # reading a memory file needs nothing; building a store imports FAISS itself
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
