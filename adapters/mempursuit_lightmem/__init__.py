"""MemPursuit adapter for LightMem (zjunlp/LightMem).

``MemPursuitLightMemory(LightMemory.from_config(config))`` is a drop-in ``LightMemory`` whose
``retrieve(query, limit, filters)`` returns the ``limit`` memories MemPursuit selects from
LightMem's top-60 Qdrant pool, in LightMem's own ``"time_stamp weekday memory"`` format.
Importing this package does not import LightMem or qdrant-client.
"""

from mempursuit_core.adapter import adapter_package

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals())
