"""Every adapter takes the same read options, with the same defaults (mempursuit_core.options)."""

import inspect

import pytest

from mempursuit_core import DEFAULT_POLICY
from mempursuit_core.options import DEFAULT_POOL, ReadOptions

SHARED = ("k", "pool", "policy", "policy_options", "strict")


def _constructors():
    from mempursuit_lightmem.adapter import MemPursuitLightMemory
    from mempursuit_memorybank.store import MemoryBankStore
    from mempursuit_simplemem.adapter import MemPursuitRetriever

    found = {"lightmem": MemPursuitLightMemory.__init__, "simplemem": MemPursuitRetriever.__init__,
             "memorybank": MemoryBankStore.__init__}
    try:  # the framework adapters whose modules import their framework
        from mempursuit_llamaindex.postprocessor import MemPursuitPostprocessor

        found["llamaindex"] = MemPursuitPostprocessor.__init__
    except ImportError:
        pass
    try:
        from mempursuit_langchain.compressor import MemPursuitCompressor, MemPursuitRetriever

        found["langchain"] = MemPursuitCompressor.__init__
        found["langchain retriever"] = MemPursuitRetriever.__init__
    except ImportError:
        pass
    try:
        from mempursuit_langgraph.store import MemPursuitStore
    except ImportError:  # LangGraph not installed
        pass
    else:
        found["langgraph"] = MemPursuitStore.__init__
    try:
        from mempursuit_graphiti.search import MemPursuitGraphiti
    except ImportError:  # Graphiti not installed
        pass
    else:
        found["graphiti"] = MemPursuitGraphiti.__init__
    return found


def test_the_same_option_names_everywhere():
    from mempursuit_mem0.settings import MemPursuitSettings

    import dataclasses

    mem0_fields = {f.name for f in dataclasses.fields(MemPursuitSettings)}
    assert set(SHARED) <= mem0_fields
    for name, init in _constructors().items():
        params = inspect.signature(init).parameters
        missing = [p for p in SHARED if p not in params]
        assert not missing, f"{name} lacks {missing}"
        assert all(params[p].kind is inspect.Parameter.KEYWORD_ONLY for p in SHARED), name


def test_the_same_defaults_everywhere():
    from mempursuit_mem0.settings import MemPursuitSettings

    mem0 = MemPursuitSettings()
    assert (mem0.k, mem0.pool, mem0.policy, mem0.strict) == (None, DEFAULT_POOL, DEFAULT_POLICY, False)
    built = ReadOptions.build("x")
    assert (built.k, built.pool, built.policy, built.strict) == (None, 200, DEFAULT_POLICY, False)
    for name, init in _constructors().items():
        params = inspect.signature(init).parameters
        # None means "the shared default": ReadOptions.build fills it in
        assert all(params[p].default is None for p in SHARED), name


def test_old_names_map_with_a_warning_and_conflicts_are_errors():
    with pytest.warns(DeprecationWarning, match="fallback= is now strict="), \
            pytest.warns(DeprecationWarning, match="pool_size= is now pool="):
        o = ReadOptions.build("Adapter", pool_size=50, fallback=False, lam=0.3)
    assert (o.pool, o.strict, o.policy_options) == (50, True, {"lam": 0.3})
    with pytest.raises(TypeError, match="not both"):
        ReadOptions.build("Adapter", strict=True, fallback=True)
    for bad in ({"pool": 0}, {"k": 2.5}, {"strict": "yes"}, {"policy": ""}, {"policy": 3}):
        with pytest.raises((TypeError, ValueError)):
            ReadOptions.build("Adapter", **bad)
    assert ReadOptions(k=5).budget(10) == 5 and ReadOptions().budget(10) == 10
    assert ReadOptions(pool=3).pool_size(10) == 10
