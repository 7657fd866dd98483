"""Doc QA with LlamaIndex and MemPursuit: a two-file question over a small handbook, offline.

``examples/data/handbook/`` is a fictional company's handbook, 13 short Markdown files, one
LlamaIndex ``Document`` per paragraph (``file_name`` / ``file_path`` metadata, as
``SimpleDirectoryReader`` sets them). The packaged all-MiniLM-L6-v2 (int8 ONNX) is the index's
embed model through ``MemPursuitEmbedding``; no download; it runs in seconds. No LLM either: the
query engine answers with ``response_mode="no_text"`` (its source nodes are the result), and
LlamaIndex still resolves ``Settings.llm`` when it builds one, so ``Settings.llm = MockLLM()``
keeps it from looking for OpenAI.

The question needs two files: three of them say that the Travel Desk books trips over 500
euros, and only ``travel-desk.md`` (which they name) gives the phone extension. LlamaIndex's own
top 3 are that rule (``expense-claims.md``), hotel costs and benefits: no extension. The default
read policy, choosing 3 of LlamaIndex's top 200, keeps the rule and ``travel-desk.md``: the
documents' file names are their titles, and once the rule's chunk is picked, the file it
names (the Travel Desk) is raised (the default's ``bridge``). It
prints, for LlamaIndex alone and for each swap (the retriever, the query engine), the file
and text of its 3 chunks and whether the answer's extension (4410) is among them::

    LlamaIndex alone (similarity_top_k=3): extension 4410 found: False
    with MemPursuit, retriever (top 200 -> 3): extension 4410 found: True
    with MemPursuit, query engine (top 200 -> 3): extension 4410 found: True

Run it::

    # in the root of a checkout of mempursuit (until the first release: README, Install)
    pip install -e ".[llamaindex]"
    python examples/docs_qa_llamaindex.py

The swap for an app that calls a retriever (retrievers do not run ``node_postprocessors``)::

    MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=3)
    # was index.as_retriever(similarity_top_k=3)

and for a query engine or chat engine (``index=``: the postprocessor reads the index's embed
model, its stored vectors and its docstore, as the retriever does; it cannot see the engine's
filters, so ``whole_store=True`` says the index holds one corpus, or pass the engine's
``filters=``)::

    index.as_query_engine(similarity_top_k=200, node_postprocessors=[
        MemPursuitPostprocessor(k=3, index=index, whole_store=True)])
"""

from llama_index.core import Document, Settings, VectorStoreIndex
from llama_index.core.llms import MockLLM

from mempursuit_llamaindex import MemPursuitEmbedding, MemPursuitPostprocessor, MemPursuitRetriever
from _sample import HANDBOOK_QUESTION as QUESTION, handbook_paragraphs  # examples/_sample.py

K = 3


def load_handbook() -> list[Document]:
    """One Document per paragraph of the handbook, with its file's name and path."""
    return [Document(text=para, metadata={"file_name": path.name, "file_path": str(path)},
                     excluded_embed_metadata_keys=["file_name", "file_path"])
            for path, para in handbook_paragraphs()]


def show(name: str, nodes) -> None:
    found = any("4410" in n.node.get_content() for n in nodes)
    print(f"\n{name}: extension 4410 found: {found}")
    for n in nodes:
        print(f"  [{n.node.metadata['file_name']}] {n.node.get_content()}")


def main() -> None:
    index = VectorStoreIndex.from_documents(load_handbook(), embed_model=MemPursuitEmbedding())
    print(QUESTION)
    show(f"LlamaIndex alone (similarity_top_k={K})",
         index.as_retriever(similarity_top_k=K).retrieve(QUESTION))
    ours = MemPursuitRetriever(index.as_retriever(similarity_top_k=200), k=K)
    show(f"with MemPursuit, retriever (top 200 -> {K})", ours.retrieve(QUESTION))
    Settings.llm = MockLLM()  # never asked: the engine returns its source nodes, no text
    engine = index.as_query_engine(
        similarity_top_k=200, response_mode="no_text",
        node_postprocessors=[MemPursuitPostprocessor(k=K, index=index,
                                                     whole_store=True)])
    show(f"with MemPursuit, query engine (top 200 -> {K})", engine.query(QUESTION).source_nodes)


if __name__ == "__main__":
    main()
