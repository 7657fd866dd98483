"""A misspelt option, at a swap's constructor or in ``policy_options``, is one ``TypeError`` line
naming it, the nearest valid name and the valid ones (the swap's own and the policy's): the
Haystack ranker, LlamaIndex's postprocessor and retriever, LangChain's compressor and
retriever, and Mem0's settings and reranker config. Nothing is read: each fails when built."""

import importlib.util

import pytest

POLICY = "(policy 'centered-fusion')"


def _needs(*modules):
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


def _says(excinfo, where, wrong, right, *, own=True):
    """The one line: where, the option, the did-you-mean, the swap's names and the policy's."""
    message = str(excinfo.value)
    assert "\n" not in message and "__init__()" not in message, message
    kind = "option" if own else "policy option"
    assert message.startswith(f"{where}: unknown {kind} {wrong!r} (did you mean {right!r}?); "
                              "valid: "), message
    assert message.endswith(POLICY) and "follow_from" in message, message
    assert (f"({where}) and " in message) is own, message
    return message


def test_haystack_ranker():
    _needs("haystack")
    from mempursuit_haystack import MemPursuitRanker

    with pytest.raises(TypeError) as excinfo:
        MemPursuitRanker(top_k=5, documnet_store=None)
    assert "document_store, " in _says(excinfo, "MemPursuitRanker", "documnet_store",
                                       "document_store")
    with pytest.raises(TypeError) as excinfo:
        MemPursuitRanker(top_k=5, policy_options={"brige": 8})
    _says(excinfo, "MemPursuitRanker", "brige", "bridge", own=False)
    assert MemPursuitRanker(top_k=5, bridge=4).policy_options == {"bridge": 4}


def test_llamaindex_postprocessor_and_retriever():
    _needs("llama_index.core")
    from llama_index.core.retrievers import BaseRetriever

    from mempursuit_llamaindex import MemPursuitPostprocessor, MemPursuitRetriever

    class Nothing(BaseRetriever):
        def _retrieve(self, query_bundle):
            return []

    with pytest.raises(TypeError) as excinfo:
        MemPursuitPostprocessor(k=3, vectorstore=None)
    _says(excinfo, "MemPursuitPostprocessor", "vectorstore", "vector_store")
    with pytest.raises(TypeError) as excinfo:
        MemPursuitPostprocessor(k=3, policy_options={"folow": 1})
    _says(excinfo, "MemPursuitPostprocessor", "folow", "follow", own=False)
    with pytest.raises(TypeError) as excinfo:  # the postprocessor's names are the retriever's
        MemPursuitRetriever(Nothing(), k=3, docstores=None)
    _says(excinfo, "MemPursuitRetriever", "docstores", "docstore")
    with pytest.raises(TypeError) as excinfo:
        MemPursuitRetriever(Nothing(), k=3, policy_options={"spred": 0.2})
    assert "unknown policy option 'spred' (did you mean 'spread'?)" in str(excinfo.value)


def test_langchain_compressor_and_retriever():
    _needs("langchain_core", "langchain_classic")
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.vectorstores import InMemoryVectorStore

    from mempursuit_langchain import MemPursuitCompressor, MemPursuitRetriever

    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=8))
    with pytest.raises(TypeError) as excinfo:
        MemPursuitCompressor(k=3, vectorstore=store)
    _says(excinfo, "MemPursuitCompressor", "vectorstore", "vector_store")
    with pytest.raises(TypeError) as excinfo:
        MemPursuitCompressor(k=3, policy_options={"titeld": 1.0})
    _says(excinfo, "MemPursuitCompressor", "titeld", "titled", own=False)
    with pytest.raises(TypeError) as excinfo:
        MemPursuitRetriever(vectorstore=store, k=3, search_kwarg={})
    _says(excinfo, "MemPursuitRetriever", "search_kwarg", "search_kwargs")
    with pytest.raises(TypeError) as excinfo:
        MemPursuitRetriever(vectorstore=store, k=3, policy_options={"wieght": 0.5})
    _says(excinfo, "MemPursuitRetriever", "wieght", "weight", own=False)


def test_mem0_settings_and_reranker_config():
    _needs("mem0")
    from mempursuit_mem0.reranker_config import MemPursuitRerankerConfig
    from mempursuit_mem0.settings import MemPursuitSettings

    with pytest.raises(ValueError, match=r"unknown mempursuit setting\(s\) \['polcy'\] "
                                         r"\(did you mean 'policy'\?\); known: "):
        MemPursuitSettings.from_mapping({"polcy": "mmr"})
    with pytest.raises(ValueError, match=r"\['polcy'\] \(did you mean 'policy'\?\); known: "):
        MemPursuitRerankerConfig(k=10, polcy="mmr")  # Mem0's config route
    for build in (lambda: MemPursuitSettings.from_mapping({"policy_options": {"brige": 8}}),
                  lambda: MemPursuitRerankerConfig(policy_options={"brige": 8})):
        with pytest.raises(TypeError) as excinfo:
            build()
        assert str(excinfo.value).startswith(
            "unknown policy option 'brige' (did you mean 'bridge'?); valid: "), excinfo.value
        assert str(excinfo.value).endswith(POLICY)
    # the title key (metadata_keys): a misspelt signal named with the one Mem0 reads
    with pytest.raises(ValueError, match=r"metadata_keys: unknown signal\(s\) \['title'\] "
                                         r"\(did you mean 'titles'\?\)"):
        MemPursuitRerankerConfig(metadata_keys={"title": "name"})
    with pytest.raises(TypeError, match=r"^metadata_keys\['titles'\] must be .* got 3$"):
        MemPursuitRerankerConfig(metadata_keys={"titles": 3})
    assert MemPursuitRerankerConfig(metadata_keys={"titles": "name"}).to_settings(
        ).title_key == "name"
    assert MemPursuitRerankerConfig().to_settings().title_key == "title"
    # a field Mem0 lifts out of metadata would give no memory a title: one line, not silence
    for key in ("user_id", "hash"):
        with pytest.raises(ValueError, match=rf"metadata_keys\['titles'\]='{key}' is a field "
                                             "Mem0 keeps out of a memory's metadata"):
            MemPursuitRerankerConfig(metadata_keys={"titles": key})
        with pytest.raises(ValueError, match=r"keeps out of a memory's metadata"):
            MemPursuitSettings(metadata_keys={"titles": key})
    # the second read's deadline, by the config route too
    assert MemPursuitRerankerConfig().to_settings().follow_timeout == 0.5
    assert MemPursuitRerankerConfig(follow_timeout=2).to_settings().follow_timeout == 2
    assert MemPursuitRerankerConfig(follow_timeout=None).to_settings().follow_timeout is None
    with pytest.raises(ValueError, match=r"follow_timeout must be a number of seconds > 0"):
        MemPursuitRerankerConfig(follow_timeout=0)


def test_langgraph_signal_fields():
    """A bad ``signal_fields`` (the title field among them) is one line naming the fix."""
    _needs("langgraph")
    from langgraph.store.memory import InMemoryStore

    from mempursuit_langgraph import MemPursuitStore

    store = InMemoryStore()
    assert MemPursuitStore(store, signal_fields={"titles": "name"}).signal_fields["titles"] == (
        "name",)
    assert MemPursuitStore(store).signal_fields["titles"][0] == "title"
    for bad, error, says in (
            ({"title": ("name",)}, ValueError,
             "signal_fields: unknown signal 'title' (did you mean 'titles'?); known: "),
            ({"titles": ()}, ValueError, "signal_fields['titles'] must be a value field (a "
                                         "non-empty str) or a sequence of them"),
            ({"titles": ""}, ValueError, "got ''"),
            ({"titles": 3}, TypeError, "first present wins (e.g. ('name',)); got 3"),
            (["titles"], TypeError, "signal_fields takes {signal: field or fields}")):
        with pytest.raises(error) as excinfo:
            MemPursuitStore(store, signal_fields=bad)
        assert "\n" not in str(excinfo.value) and says in str(excinfo.value), excinfo.value
