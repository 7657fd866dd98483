"""MemPursuit adapter for LightMem (zjunlp/LightMem).

``MemPursuitLightMemory(LightMemory.from_config(config))`` is a drop-in ``LightMemory`` whose
``retrieve(query, limit, filters)`` returns the ``limit`` memories MemPursuit selects from
LightMem's top-60 Qdrant pool, in LightMem's own ``"time_stamp weekday memory"`` format.
Importing this package does not import LightMem or qdrant-client.
"""

from mempursuit_core.adapter import AdapterSpec, adapter_package, install_line

SPEC = AdapterSpec(
    name="lightmem", framework="lightmem", extra="lightmem",
    module="mempursuit_lightmem.adapter",
    swap='memory = MemPursuitLightMemory.from_config(config)  (was LightMemory.from_config)',
    docs="docs/adapters/lightmem.md",
    summary="LightMem (zjunlp/LightMem): reorders LightMemory.retrieve's top-200 Qdrant pool",
    install_hint=(
        install_line("lightmem") + " sentence-transformers, then LightMem itself from its git "
        "repository without its pins: pip install --no-deps "
        "git+https://github.com/zjunlp/LightMem.git (the registry's lightmem 0.0.0 is a broken "
        "placeholder, and LightMem needs Python < 3.12; docs/adapters/lightmem.md)"
    ),
    exports=dict.fromkeys(("DEFAULT_POOL_SIZE", "LightMemPool", "LightMemSelection",
                           "MemPursuitLightMemory", "StoreDeletionError", "format_entry",
                           "protect_qdrant_store"), "adapter"),
    needs={},  # the wrapper takes a LightMemory built by the caller
)

__all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
