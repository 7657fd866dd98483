"""Evaluation stores are registered through the plugin host's ``register_eval_backends`` hook,
like selectors and adapters: the built-in ones by the harness's plugin (``mempursuit_eval.plugin``),
a third party's by its own plugin. A clash keeps the built-in store, with one warning.

Runs use the Python API or the command line in process, with a small deterministic embedder (no
model) on a tiny LoCoMo file.
"""

import importlib.util
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from mempursuit_core import plugins
from mempursuit_core.cli import main as cli_main
from mempursuit_core.hookspecs import hookimpl
from mempursuit_core.plugins import UnknownNameError, get_plugin_manager
from mempursuit_eval.backends import list_eval_backends
from mempursuit_eval.backends import backend_factory, list_backends
from mempursuit_eval.runner import build_backend, check_framework, run_eval
from mempursuit_eval.store import PlainStore
from eval_samples import HashEmbedder, locomo_file

ROOT = Path(__file__).resolve().parents[1]
BUILT_IN = {"mem0", "lightmem", "simplemem", "memorybank", "llamaindex", "langgraph", "graphiti"}
FRAMEWORKS = ("mem0", "lightmem", "simplemem", "faiss", "lancedb", "qdrant_client", "langgraph",
              "llama_index", "langchain_core", "graphiti_core")


class ToyStore(PlainStore):
    """The plain store under another name, recording every build (a third party's store)."""

    built: list[str] = []

    def __init__(self, native: str = "dense", *, tag: str = "toy"):
        super().__init__(native)
        self.name = f"toy-{tag}"
        ToyStore.built.append(tag)


class ToyVariant(ToyStore):
    """``toy`` given the ``path`` option: a ``NAME+OPTION`` store takes over ``NAME``."""

    option_constraints = {"tag": ("toy", "mine")}

    def __init__(self, path: str, *, tag: str = "toy"):
        super().__init__(tag=tag)
        self.path = path


class ToyPlugin:
    @hookimpl
    def register_eval_backends(self, register):
        register("toy", ToyStore, "the plain store under another name (a test plugin)")
        register("toy+path", ToyVariant, "the toy store given a path")


@pytest.fixture
def toy_plugin():
    pm = get_plugin_manager()
    plugin = ToyPlugin()
    pm.register(plugin, name="toy-store-plugin")
    ToyStore.built.clear()
    yield plugin
    pm.unregister(plugin)


def _run(tmp_path, **kw):
    return run_eval(dataset="locomo", data=str(locomo_file(tmp_path)), embedder=HashEmbedder(),
                    k=(1, 2), pool=4, no_cache=True, bootstrap=10, latency_sample=0,
                    progress=False, plots=False, **kw)


# -------------------------------------------------------------------------------- built-ins

def test_built_in_stores_are_registered_by_the_harness_plugin():
    stores = list_eval_backends()
    assert set(stores) >= BUILT_IN
    impls = get_plugin_manager().hook.register_eval_backends.get_hookimpls()
    assert [i.plugin_name for i in impls] == ["eval"]
    for name in BUILT_IN:
        factory, description = stores[name]
        module, _, attr = factory.partition(":")  # a lazy "module:attr": listing imports nothing
        assert module == f"mempursuit_eval.backends.{name}" and attr and description
        assert importlib.util.find_spec(module) is not None
    assert list_backends() == {name: factory for name, (factory, _) in stores.items()}


def test_listing_the_stores_imports_no_framework():
    code = (
        "import sys, json\n"
        "from mempursuit_eval.backends import list_backends\n"
        "from mempursuit_eval.runner import check_framework\n"
        "names = sorted(list_backends())\n"
        "check_framework('memorybank')\n"
        "print(json.dumps({'names': names, 'loaded': sorted(m for m in sys.modules if\n"
        f"    m.split('.')[0] in {FRAMEWORKS!r} or m.startswith('mempursuit_eval.backends.'))}}))\n"
    )
    res = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                         text=True, cwd=ROOT, env={"MEMPURSUIT_PLUGINS": "", "PATH": "",
                                                   "MEM0_TELEMETRY": "False"})
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out["names"]) >= BUILT_IN and out["loaded"] == []


def test_a_built_in_store_runs_through_run_eval(tmp_path):
    pytest.importorskip("faiss", reason='the memorybank store needs pip install -e ".[memorybank]"')
    from mempursuit_eval.backends.memorybank import MemoryBankBackend

    assert backend_factory("memorybank") is MemoryBankBackend
    assert isinstance(build_backend("memorybank"), MemoryBankBackend)
    summary = _run(tmp_path, framework="memorybank")
    assert summary["framework"] == "memorybank" and summary["n_scored"] == 4
    assert summary["results"]["native"]["2"]["overall"]["n"] == 4


# -------------------------------------------------------------------------------- third party

def test_a_plugin_store_runs_with_no_harness_change(toy_plugin, tmp_path):
    assert list_eval_backends()["toy"] == (ToyStore, "the plain store under another name "
                                                     "(a test plugin)")
    assert check_framework("toy") is None  # a store with no adapter of its name
    summary = _run(tmp_path, framework="toy", backend_options={"tag": "api"})
    assert ToyStore.built == ["api"]
    assert summary["framework"] == "toy" and summary["n_scored"] == 4
    plain = _run(tmp_path, framework="plain")
    assert summary["results"] == plain["results"]  # the same store under another name


def test_a_plugin_store_from_the_command_line(toy_plugin, tmp_path, capsys):
    pytest.importorskip("onnxruntime", reason='needs pip install -e ".[embed]"')
    out = tmp_path / "run"
    rc = cli_main(["eval", "--dataset", "locomo", "--data", str(locomo_file(tmp_path)),
                   "--framework", "toy", "--backend-opt", "tag=cli", "--k", "1", "2",
                   "--pool", "4", "--bootstrap", "10", "--latency-sample", "0", "--no-plots",
                   "--no-cache", "--embed-threads", "1", "--quiet", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert ToyStore.built == ["cli"]
    assert json.loads((out / "summary.json").read_text())["framework"] == "toy"
    rc = cli_main(["eval", "--dataset", "locomo", "--data", str(locomo_file(tmp_path)),
                   "--framework", "toy", "--backend-opt", "bogus=1", "--no-cache", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == ("mempursuit eval: --backend-opt bogus: the toy store has no option "
                               "'bogus'; it accepts native, tag (fix the name or drop the option)")


def test_unknown_framework_lists_plain_and_every_store(toy_plugin, tmp_path, capsys):
    with pytest.raises(UnknownNameError) as info:
        check_framework("nope")
    # every store registered through the hook, but not the internal NAME+OPTION variants
    # (mem0+config is --framework mem0 --mem0-config, not a framework to pick: issue 47)
    assert info.value.known == sorted(n for n in list_backends() if "+" not in n)
    assert "toy" in info.value.known and "plain" in info.value.known
    assert "mem0+config" in list_backends() and "mem0+config" not in info.value.known
    rc = cli_main(["eval", "--dataset", "locomo", "--data", str(locomo_file(tmp_path)),
                   "--framework", "nope", "--no-cache", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert err.startswith("mempursuit eval: unknown framework 'nope'; registered: ")
    for name in ("plain", "toy", *BUILT_IN):
        assert name in err.split("registered: ")[1].split(", "), (name, err)


def test_a_store_variant_and_its_declared_constraints(toy_plugin):
    assert type(build_backend("toy")) is ToyStore
    variant = build_backend("toy", options={"path": "here"})  # as mem0 + --mem0-config
    assert type(variant) is ToyVariant and variant.path == "here"
    with pytest.raises(ValueError, match=r"--backend-opt tag: the toy\+path store takes tag = "
                                         r"toy \| mine, got 'other'"):
        build_backend("toy", options={"path": "here", "tag": "other"})
    with pytest.raises(ValueError, match=r"--backend-opt native: the plain store takes native "
                                         r"= dense \| hybrid, got 'sparse'"):
        build_backend("plain", options={"native": "sparse"})


def test_a_store_gone_after_unregister():
    assert "toy" not in list_backends()
    with pytest.raises(UnknownNameError, match="unknown framework 'toy'"):
        check_framework("toy")


class _Clashing:
    @hookimpl
    def register_eval_backends(self, register):
        register("memorybank", "clashing_module:Store", "a plugin that wants a built-in name")
        register("clashing-own", PlainStore, "its own name")


def test_a_plugin_cannot_replace_a_built_in_store(monkeypatch):
    monkeypatch.setattr(plugins, "_warned", set())
    plugin = _Clashing()
    plugins.pm.register(plugin, name="clashing-store-plugin")
    try:
        with pytest.warns(RuntimeWarning, match="'clashing-store-plugin' registers 'memorybank'.*"
                                                "'eval' is kept"):
            stores = list_backends()
        assert stores["memorybank"] == "mempursuit_eval.backends.memorybank:MemoryBankBackend"
        assert stores["clashing-own"] is PlainStore
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once, not on every lookup
            assert check_framework("memorybank").name == "memorybank"
    finally:
        plugins.pm.unregister(plugin)


def _dist(tmp_path, name: str, entry_points: str) -> Path:
    """A third-party distribution on ``tmp_path``: metadata and entry points, no install."""
    dist = tmp_path / f"{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)
    return tmp_path


def test_an_installed_plugin_cannot_replace_a_built_in_store(tmp_path):
    """An entry-point plugin found before the distribution's own still loses a clash: the
    shipped plugins are registered first."""
    _dist(tmp_path, "aaclash", "[mempursuit]\naaclash = aaclash_plugin\n")
    (tmp_path / "aaclash_plugin.py").write_text(
        "from mempursuit_core.hookspecs import hookimpl\n"
        "@hookimpl\n"
        "def register_eval_backends(register):\n"
        "    register('mem0', 'aaclash_plugin:Store')\n")
    code = ("import warnings\nwarnings.simplefilter('always')\n"
            "from mempursuit_eval.backends import list_backends\nprint(list_backends()['mem0'])\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=tmp_path, env={"PYTHONPATH": f"{tmp_path}:{ROOT}", "PATH": ""})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "mempursuit_eval.backends.mem0:Mem0Backend"
    assert "plugin 'aaclash' registers 'mem0', which plugin 'eval' already registered" in res.stderr
