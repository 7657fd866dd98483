"""Registers the LightMem adapter (imports cleanly without LightMem or qdrant-client)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl, install_line

SPEC = AdapterSpec(
    name="lightmem",
    module="mempursuit_lightmem.adapter",
    framework="lightmem",
    extra="lightmem",
    swap='memory = MemPursuitLightMemory.from_config(config)  (was LightMemory.from_config)',
    docs="docs/adapters/lightmem.md",
    summary="LightMem (zjunlp/LightMem): reorders LightMemory.retrieve's top-200 Qdrant pool",
    install_hint=(
        install_line("lightmem") + " sentence-transformers, then LightMem itself from its git "
        "repository without its pins: pip install --no-deps "
        "git+https://github.com/zjunlp/LightMem.git (the registry's lightmem 0.0.0 is a broken "
        "placeholder, and LightMem needs Python < 3.12; docs/adapters/lightmem.md)"
    ),
)


@hookimpl
def register_adapters(register):
    register(SPEC)
