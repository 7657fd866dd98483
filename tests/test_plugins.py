import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from mempursuit_core import get_selector, list_selectors
from mempursuit_core.hookspecs import hookimpl
from mempursuit_core.plugins import (
    AdapterNotInstalledError,
    AdapterSpec,
    UnknownNameError,
    get_adapter_spec,
    get_plugin_manager,
    list_adapters,
    load_adapter,
)
from mempursuit_core.selectors import Selection, Selector

ROOT = Path(__file__).resolve().parents[1]


class Reverse(Selector):
    name = "reverse"

    def select(self, query, candidates, k, *, native_scores=None, signals=None):
        n = len(candidates)
        return Selection(order=np.arange(n - 1, -1, -1)[:k])


class InlinePlugin:
    @hookimpl
    def register_selectors(self, register):
        register("reverse", Reverse, "the pool backwards (a test plugin)")

    @hookimpl
    def register_adapters(self, register):
        register(AdapterSpec(name="ghostfw", module="ghost_adapter_module",
                             framework="ghost_framework_not_installed", extra="ghost"))


@pytest.fixture
def inline_plugin():
    pm = get_plugin_manager()
    plugin = InlinePlugin()
    pm.register(plugin, name="inline-test-plugin")
    yield plugin
    pm.unregister(plugin)


def test_inline_plugin_registers_a_selector(inline_plugin):
    assert "reverse" in list_selectors()
    sel = get_selector("reverse")
    assert sel.select(np.ones(2), np.eye(2)[[0, 1, 0]] + 0.5, 2).order.tolist() == [2, 1]


class Wrapping:
    """A hookwrapper and a ``tryfirst`` implementation: they work because the host calls the
    real pluggy hook."""

    def __init__(self):
        self.seen = []

    @hookimpl(wrapper=True)
    def register_selectors(self, register):
        self.seen.append("before")
        result = yield
        self.seen.append("after")
        return result


class Eager:
    @hookimpl(tryfirst=True)
    def register_selectors(self, register):
        register("reverse", Selector, "called first by pluggy, registered after the inline one")


def test_the_real_hook_is_called(inline_plugin):
    pm = get_plugin_manager()
    wrapper, eager = Wrapping(), Eager()
    pm.register(wrapper, name="wrapper-test-plugin")
    pm.register(eager, name="eager-test-plugin")
    calls = []
    undo = pm.add_hookcall_monitoring(lambda name, impls, kw: calls.append(name),
                                      lambda *a: None)
    try:
        with pytest.warns(RuntimeWarning, match="'eager-test-plugin' registers 'reverse'.*"
                                                "'inline-test-plugin' is kept"):
            names = list_selectors()
        assert wrapper.seen == ["before", "after"] and "register_selectors" in calls
        # tryfirst orders the calls; a clash is still won by the plugin that joined first
        assert get_selector("reverse").__class__ is Reverse and "reverse" in names
    finally:
        undo()
        pm.unregister(wrapper)
        pm.unregister(eager)


def test_selector_gone_after_unregister():
    assert "reverse" not in list_selectors()
    with pytest.raises(UnknownNameError, match="reverse"):
        get_selector("reverse")


def test_missing_framework_names_the_extra(inline_plugin):
    spec = get_adapter_spec("ghostfw")
    assert not spec.framework_installed()
    with pytest.raises(AdapterNotInstalledError, match=r'pip install -e "\.\[ghost\]"'):
        load_adapter("ghostfw")


def test_unknown_adapter_lists_registered_ones(inline_plugin):
    with pytest.raises(UnknownNameError) as info:
        get_adapter_spec("nosuch")
    assert "ghostfw" in str(info.value)


def test_an_adapter_package_is_its_own_plugin_and_its_lazy_names_stay_unimported():
    """``adapter_package``: the package's ``__all__``, lazy names and ``register_adapters`` from
    its one spec; the host registers the package without looking up a lazy name (each would
    import the framework, here one that is not installed)."""
    import types

    from mempursuit_core.adapter import adapter_package

    package = types.ModuleType("ghost_lazy_package")
    spec = AdapterSpec(name="ghostlazy", module="ghost_lazy_package.reader",
                       framework="ghost_framework_not_installed", extra="ghost", label="Ghost",
                       exports={"GhostReader": "reader", "helper": "reader:_helper"})
    (_, package.__all__, package.__getattr__, package.__dir__,
     package.register_adapters) = adapter_package(vars(package), spec)
    assert package.__all__ == ["GhostReader", "helper"]
    assert {"GhostReader", "helper"} <= set(dir(package))
    pm = get_plugin_manager()
    pm.register(package, name="ghost-lazy-test")
    try:
        assert list_adapters()["ghostlazy"] is spec
    finally:
        pm.unregister(package)
    assert "GhostReader" not in vars(package)  # never looked up
    with pytest.raises(AdapterNotInstalledError,
                       match=r'ghost_lazy_package.GhostReader needs Ghost.*\[ghost\]'):
        package.GhostReader


def test_builtin_adapters_registered_and_extras_exist():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    for name in ("mem0", "lightmem", "simplemem", "memorybank", "langgraph", "graphiti", "eval",
                 "all"):
        assert name in extras
    adapters = list_adapters()
    for name, spec in adapters.items():
        assert spec.extra is None or spec.extra in extras, f"{name}: extra {spec.extra!r} missing"
    entry_points = pyproject["project"]["entry-points"]["mempursuit"]
    for name, module in entry_points.items():
        if name in adapters:
            assert adapters[name].name == name


def test_adapter_modules_import_without_their_frameworks():
    """Every built-in adapter's package (its plugin) imports in a process where the frameworks
    are blocked, and the host lists them as not installed with the extra to install."""
    code = (
        "import sys\n"
        "for m in ('mem0', 'lightmem', 'simplemem', 'faiss', 'qdrant_client', 'lancedb',\n"
        "          'langgraph', 'graphiti_core'):\n"
        "    sys.modules[m] = None\n"
        "from mempursuit_core.plugins import list_adapters, load_adapter, AdapterNotInstalledError\n"
        "ads = list_adapters()\n"
        "print(sorted(ads))\n"
        "for n, s in ads.items():\n"
        "    assert s.hint.startswith('pip install') or 'install' in s.hint, s\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"MEMPURSUIT_PLUGINS": "", "PATH": "", "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_allow_list_skips_unlisted_third_party_plugins(tmp_path):
    dist = tmp_path / "fakeplugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: fakeplugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[mempursuit]\nfake = fake_mp_plugin\n")
    (tmp_path / "fake_mp_plugin.py").write_text(
        "from mempursuit_core.hookspecs import hookimpl\n"
        "from mempursuit_core.selectors import NativeSelector\n"
        "@hookimpl\n"
        "def register_selectors(register):\n"
        "    register('fake-native', NativeSelector, 'from a third-party plugin')\n"
    )
    code = "from mempursuit_core import list_selectors; print('fake-native' in list_selectors())"
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": ""}
    run = lambda extra: subprocess.run([sys.executable, "-c", code], capture_output=True,
                                       text=True, env={**env, **extra}, cwd=tmp_path)
    assert run({}).stdout.strip() == "True"
    assert run({"MEMPURSUIT_PLUGINS": "fake"}).stdout.strip() == "True"
    assert run({"MEMPURSUIT_PLUGINS": "other"}).stdout.strip() == "False"
    assert run({"MEMPURSUIT_PLUGINS": ""}).stdout.strip() == "False"


ADAPTER_CONSTRUCTIONS = {
    "mempursuit_haystack": ("haystack", "mempursuit_haystack.MemPursuitRanker(top_k=5)"),
    "mempursuit_langchain": ("langchain_core", "mempursuit_langchain.MemPursuitCompressor(k=5)"),
    "mempursuit_llamaindex": ("llama_index.core",
                              "mempursuit_llamaindex.MemPursuitPostprocessor(k=5)"),
}


@pytest.mark.slow
@pytest.mark.parametrize("adapter", sorted(ADAPTER_CONSTRUCTIONS))
def test_building_an_adapter_loads_no_other_adapter_and_no_harness(adapter):
    """An app that uses one adapter with a built-in policy imports that adapter only: no other
    adapter's plugin, nothing of the evaluation harness (the host loads entry points only for
    a name it does not know)."""
    framework, build = ADAPTER_CONSTRUCTIONS[adapter]
    pytest.importorskip(framework)
    code = (f"import sys, {adapter}\n{build}\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('mempursuit'))))")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = out.stdout.split()
    assert not [m for m in loaded if m.startswith("mempursuit_eval")], loaded
    assert not [m for m in loaded if m.startswith("mempursuit_") and not m.startswith(
        (adapter, "mempursuit_core"))], loaded
