"""Registers the MemoryBank adapter with mempursuit (imports nothing heavy)."""

from mempursuit_core.hookspecs import hookimpl
from mempursuit_core.plugins import AdapterSpec


@hookimpl
def register_adapters(register):
    register(
        AdapterSpec(
            name="memorybank",
            module="mempursuit_memorybank",
            framework="faiss",
            extra="memorybank",
            summary="MemoryBank (SiliconFriend): faithful FAISS read path, seeds chosen by the read policy",
        )
    )
