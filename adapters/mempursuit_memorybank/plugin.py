"""Registers the MemoryBank adapter with mempursuit (imports nothing heavy)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl


@hookimpl
def register_adapters(register):
    register(
        AdapterSpec(
            name="memorybank",
            module="mempursuit_memorybank",
            framework="faiss",
            extra="memorybank",
            swap='store = MemoryBankStore.open("memory.json", user="Emily"); store.read(question, k=2)',
            docs="docs/adapters/memorybank.md",
            summary="MemoryBank (SiliconFriend): faithful FAISS read path, seeds chosen by the read policy",
        )
    )
