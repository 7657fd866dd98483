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

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
