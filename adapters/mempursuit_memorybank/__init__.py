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

from .documents import TEMPLATES, Document, DocumentSet, Templates, build_documents, detect_language
from .memory import (
    MemoryBankFormatError,
    Turn,
    UnknownUserError,
    UserMemory,
    list_users,
    load_memory_file,
    read_user,
    save_memory_file,
)
from .readpath import CHUNK_SIZE, DEFAULT_TOP_K, MemoryPiece, ReadResult, ResidentMemory, read_from_seeds
from .store import DEFAULT_POOL_SIZE, MemoryBankStore, default_index_dir

__all__ = [
    "CHUNK_SIZE",
    "DEFAULT_POOL_SIZE",
    "DEFAULT_TOP_K",
    "Document",
    "DocumentSet",
    "MemoryBankFormatError",
    "MemoryBankStore",
    "MemoryPiece",
    "ReadResult",
    "ResidentMemory",
    "TEMPLATES",
    "Templates",
    "Turn",
    "UnknownUserError",
    "UserMemory",
    "build_documents",
    "default_index_dir",
    "detect_language",
    "list_users",
    "load_memory_file",
    "read_from_seeds",
    "read_user",
    "save_memory_file",
]
