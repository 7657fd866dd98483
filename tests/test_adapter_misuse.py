"""Adapters used without their framework, or on the wrong object: the install hint
(``AdapterNotInstalledError``) or a ``TypeError`` saying what to pass, never a bare
``ModuleNotFoundError`` / ``AttributeError`` or a wrapper that accepts anything.

A framework is made absent by a ``None`` entry in ``sys.modules`` (what Python does for a
package that is not importable), so these run whether or not the framework is installed.
"""

import sys

import pytest

from mempursuit_core.plugins import AdapterNotInstalledError


@pytest.fixture
def without(monkeypatch):
    def hide(*packages):
        for name in list(sys.modules):
            if name.split(".")[0] in packages:
                monkeypatch.delitem(sys.modules, name)
        for name in packages:
            monkeypatch.setitem(sys.modules, name, None)
    return hide


def test_mem0_register_without_mem0_gives_the_install_hint(without):
    import mempursuit_mem0

    without("mem0")
    with pytest.raises(AdapterNotInstalledError,
                       match=r'pip install -e "\.\[mem0\]" \(in a mempursuit checkout\)'):
        mempursuit_mem0.register()


def test_lightmem_from_config_without_lightmem_gives_the_install_hint(without):
    from mempursuit_lightmem import MemPursuitLightMemory

    without("lightmem")
    with pytest.raises(AdapterNotInstalledError, match=r"needs LightMem.*git\+https://github.com/"
                                                       r"zjunlp/LightMem"):
        MemPursuitLightMemory.from_config({"embedding_retriever": {}})


@pytest.mark.parametrize("bad", [None, object(), "memory"])
def test_lightmem_wrapper_refuses_what_is_not_a_lightmemory(bad):
    from mempursuit_lightmem import MemPursuitLightMemory

    with pytest.raises(TypeError, match="MemPursuitLightMemory takes a LightMemory"):
        MemPursuitLightMemory(bad)


@pytest.mark.parametrize("bad", [None, object()])
def test_mem0_wrap_refuses_what_is_not_a_memory(bad):
    pytest.importorskip("mem0", reason="mempursuit_mem0.wrap imports Mem0's internals")
    import mempursuit_mem0

    with pytest.raises(TypeError, match="take a mem0 Memory or AsyncMemory"):
        mempursuit_mem0.wrap(bad)
    with pytest.raises(TypeError, match="take a mem0 Memory or AsyncMemory"):
        mempursuit_mem0.bind(bad)


@pytest.mark.parametrize("bad", [None, object()])
def test_simplemem_enable_refuses_what_is_not_a_system(bad):
    from mempursuit_simplemem.adapter import enable

    with pytest.raises(TypeError, match="takes a SimpleMem system"):
        enable(bad)
