"""Registers the Mem0 adapter with mempursuit's plugin host (imports nothing from Mem0)."""

from mempursuit_core.adapter import AdapterSpec, hookimpl


@hookimpl
def register_adapters(register):
    register(
        AdapterSpec(
            name="mem0",
            module="mempursuit_mem0",
            framework="mem0",
            extra="mem0",
            swap=('memory = mempursuit_mem0.wrap(memory, k=10), or config["reranker"] = '
                  '{"provider": "mempursuit", "config": {"k": 10}} after '
                  "import mempursuit_mem0.provider"),
            docs="docs/adapters/mem0.md",
            second_read=("the vector store's search with the search's filters (user / agent / "
                         "run ids, metadata) plus {title: t}, Mem0's threshold and expiry kept"),
            summary=(
                "Mem0 (mem0ai 2.x): reorders Mem0's own ranked pool with vectors read back "
                "from Qdrant, FAISS, Chroma or pgvector"
            ),
        )
    )
