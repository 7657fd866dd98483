"""Registers the Semantic Kernel adapter (imports cleanly without Semantic Kernel)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl

SPEC = AdapterSpec(
    name="semantic-kernel",
    module="mempursuit_semantic_kernel.collection",
    framework="semantic_kernel",
    extra="semantic-kernel",
    swap="collection = MemPursuitCollection(collection, k=10): its search(...) reads 200 with "
         "include_vectors=True and returns the policy's top",
    docs="docs/adapters/semantic-kernel.md",
    second_read=("a search per title whose filter is the caller's lambda ANDed with "
                 "x.title == t (InMemoryCollection, Chroma, ...), with the stored vectors"),
    summary="Semantic Kernel: a vector store collection whose search reorders a pool of 200",
)


@hookimpl
def register_adapters(register):
    register(SPEC)
