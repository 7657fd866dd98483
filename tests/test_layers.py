"""The layers point one way (core <- adapters <- harness; core <- service), with no cycles and
no import-time side effects; the plugin host keeps the built-ins and says when a plugin collides with them."""

import ast
import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import mempursuit_core
from mempursuit_core import plugins
from mempursuit_core.hookspecs import hookimpl
from mempursuit_core.selectors import NativeSelector, PursuitSelector

from shipped import package_folder, shipped_adapters, top_package

ROOT = Path(__file__).resolve().parents[1]
#: The adapters come from the distribution's entry points (tests/shipped.py), not a list here.
ADAPTER_SPECS = shipped_adapters()
ADAPTERS = tuple(sorted({top_package(spec) for spec in ADAPTER_SPECS.values()}))
PACKAGES = {  # import name -> folder
    "mempursuit_core": ROOT / "mempursuit_core",
    "mempursuit_eval": ROOT / "mempursuit_eval",
    "mempursuit_serve": ROOT / "mempursuit_serve",
    **{pkg: package_folder(pkg) for pkg in ADAPTERS},
}
#: What an adapter's own modules may import: its framework, and the stores adapters read directly.
FRAMEWORKS = tuple(sorted({spec.framework.split(".")[0] for spec in ADAPTER_SPECS.values()}
                          | {"faiss", "lancedb", "qdrant_client"}))


def test_every_adapter_folder_has_an_entry_point():
    """A folder under adapters/ that no entry point registers would be missed by every test
    that walks the adapters."""
    folders = {p.resolve() for p in (ROOT / "adapters").iterdir() if (p / "__init__.py").exists()}
    registered = {PACKAGES[pkg].resolve() for pkg in ADAPTERS}
    assert folders == registered, sorted(map(str, folders ^ registered))
    assert len(ADAPTERS) >= 7


def _modules() -> dict[str, Path]:
    out = {}
    for pkg, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("").parts
            name = ".".join((pkg,) + rel)
            out[name.removesuffix(".__init__")] = path
    return out


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Project modules ``name`` imports anywhere in its text (lazy imports included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def _layer(module: str) -> str:
    top = module.split(".")[0]
    return {"mempursuit_core": "core", "mempursuit_eval": "eval",
            "mempursuit_serve": "serve"}.get(top, "adapter")


def test_dependencies_point_one_way():
    mods = _modules()
    known = set(mods)
    wrong = []
    for name, path in mods.items():
        for dep in _imports(name, path, known):
            a, b = _layer(name), _layer(dep)
            if (a == "core" and b != "core") or (a == "adapter" and b == "eval") or (
                    a == "adapter" and b == "adapter" and dep.split(".")[0] != name.split(".")[0]) or (
                    # the service (mempursuit serve) imports the core only, and nothing imports it
                    (a == "serve") != (b == "serve") and b != "core"):
                wrong.append(f"{name} -> {dep}")
    assert not wrong, wrong


def test_the_service_reads_through_the_core_s_public_surface():
    """mempursuit_serve imports the core's supported names only (the adapter surface, the
    package's top level, the plugin hook marker), as a third-party service would."""
    mods = _modules()
    public = {"mempursuit_core", "mempursuit_core.adapter", "mempursuit_core.hookspecs"}
    used = {dep for name, path in mods.items() if _layer(name) == "serve"
            for dep in _imports(name, path, set(mods)) if _layer(dep) == "core"}
    assert used and used <= public, sorted(used - public)


def test_no_import_cycles():
    mods = _modules()
    known = set(mods)
    graph = {}
    for name, path in mods.items():
        # a package's own submodules importing their package is Python's doing, not a cycle
        graph[name] = {d for d in _imports(name, path, known) if not name.startswith(d + ".")}
    state, cycles = {}, []

    def visit(n, stack):
        state[n] = "open"
        for m in sorted(graph[n]):
            if state.get(m) == "open":
                cycles.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m, stack + [m])
        state[n] = "done"

    for n in sorted(graph):
        if n not in state:
            visit(n, [n])
    assert not cycles, cycles


@pytest.mark.slow  # one interpreter per module
@pytest.mark.parametrize("module", sorted(m for m in _modules()
                                          if _layer(m) != "eval" and not m.endswith("__main__")))
def test_each_module_alone_pulls_in_only_its_layers(module):
    code = (
        "import sys, json, importlib\n"
        f"importlib.import_module({module!r})\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{sorted(set(PACKAGES) | set(FRAMEWORKS))!r})))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"MEMPURSUIT_PLUGINS": "", "PATH": "", "MEM0_TELEMETRY": "False"})
    if res.returncode and "ModuleNotFoundError" in res.stderr and module.startswith(
            ADAPTERS + ("mempursuit_serve",)):  # the service's modules need the [serve] extra
        pytest.skip(f"{module} needs its framework: {res.stderr.strip().splitlines()[-1]}")
    assert res.returncode == 0, res.stderr
    loaded = {m.split(".")[0] for m in json.loads(res.stdout)}
    own = module.split(".")[0]
    allowed = {"mempursuit_core"} | ({own} if own != "mempursuit_core" else set())
    if own in ADAPTERS:
        allowed |= set(FRAMEWORKS)  # an adapter's own modules may import its framework
    assert loaded <= allowed, sorted(loaded - allowed)


def test_core_use_has_no_side_effects():
    """Importing the core and building every built-in selector imports no plugin and leaves
    sys.meta_path alone (the Mem0 provider is registered only by importing mempursuit_mem0)."""
    code = (
        "import sys, json\n"
        "before = list(sys.meta_path)\n"
        "import numpy as np, mempursuit_core as m\n"
        "from mempursuit_core.builtins import FACTORIES\n"
        "q = np.ones(4); M = np.eye(4) + 0.1\n"
        "m.select(q, M, 2)\n"
        "for name in FACTORIES:\n"
        "    m.get_selector(name)\n"
        "m.get_selector(m.DEFAULT_POLICY).select(q, M, 2, signals={'texts': list('abcd'), 'query_text': 'a'})\n"
        "print(json.dumps({'meta_path_same': sys.meta_path == before,\n"
        "    'loaded': sorted(n for n in sys.modules if n.startswith(('mempursuit_', 'mem0')) and\n"
        "                     not n.startswith('mempursuit_core'))}))\n"
    )
    res = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code],
                         capture_output=True, text=True, env={"PATH": ""})
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out == {"meta_path_same": True, "loaded": []}


def test_experimental_policies_are_the_harness_s_not_built_in():
    """The experiments behind the default are registered by the harness's plugin: the core's
    built-ins do not hold them, and asking for one by name loads that plugin."""
    from mempursuit_eval.experimental import SELECTORS

    from mempursuit_core.builtins import EXPERIMENTAL_PREFIX, FACTORIES

    assert SELECTORS and all(n.startswith(EXPERIMENTAL_PREFIX) for n in SELECTORS)

    assert not set(SELECTORS) & set(FACTORIES)
    found = plugins.collect("register_selectors")
    assert {found[n][0] for n in SELECTORS} == {"eval"}
    assert isinstance(mempursuit_core.get_selector("experimental/native-dedup"),
                      SELECTORS["experimental/native-dedup"])


def test_the_built_in_adapters_are_registered():
    # fails when the distribution is not installed (a bare checkout registers no adapter)
    assert set(plugins.list_adapters()) >= {"mem0", "lightmem", "simplemem", "memorybank"}


def test_default_policy_is_registered_and_not_the_papers_rule():
    assert mempursuit_core.DEFAULT_POLICY in mempursuit_core.list_selectors()
    assert mempursuit_core.DEFAULT_POLICY != "mempursuit"
    assert isinstance(mempursuit_core.get_selector("mempursuit"), PursuitSelector)


def test_names_from_before_the_first_release_are_gone():
    """0.1.0 was never released: the names the policies had before it are unknown (the error
    lists the registered ones)."""
    with pytest.raises(plugins.UnknownNameError, match="unknown selector 'pursuit-center'.*"
                                                       "centered-fusion"):
        mempursuit_core.get_selector("pursuit-center")
    with pytest.raises(plugins.UnknownNameError, match="'mempursuit-adaptive'"):
        mempursuit_core.get_selector("mempursuit-adaptive")


class _Colliding:
    @hookimpl
    def register_selectors(self, register):
        register("mempursuit", NativeSelector, "a plugin that wants the paper's name")
        register("colliding-own", NativeSelector, "its own name")


def test_a_plugin_cannot_replace_a_built_in(monkeypatch):
    monkeypatch.setattr(plugins, "_warned", set())
    plugin = _Colliding()
    plugins.pm.register(plugin, name="colliding-plugin")
    try:
        with pytest.warns(RuntimeWarning, match="'colliding-plugin' registers 'mempursuit'.*"
                                                "'builtin' is kept"):
            names = mempursuit_core.list_selectors()
        assert "colliding-own" in names
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once, not on every lookup
            assert isinstance(mempursuit_core.get_selector("mempursuit"), PursuitSelector)
    finally:
        plugins.pm.unregister(plugin)


class _Shared:
    instance = NativeSelector()

    @hookimpl
    def register_selectors(self, register):
        register("shared-instance", lambda: self.instance, "returns one object")


def test_get_selector_does_not_rename_what_it_returns():
    plugin = _Shared()
    plugins.pm.register(plugin, name="shared-plugin")
    try:
        sel = mempursuit_core.get_selector("shared-instance")
        assert sel is _Shared.instance and sel.name == "native"
    finally:
        plugins.pm.unregister(plugin)


def test_nested_is_an_attribute_of_the_selector():
    get = mempursuit_core.get_selector
    assert get("native").nested and get("mempursuit").nested and get("mmr").nested
    assert get("centered-fusion").nested and not get("centered-fusion", gamma=0.5).nested
    assert not get("experimental/pursuit-rank").nested
    q, M = np.ones(5), np.eye(5) + 0.01 * np.arange(25).reshape(5, 5)
    sel = get("centered-fusion")
    assert sel.select(q, M, 2).order.tolist() == sel.select(q, M, 5).order[:2].tolist()


def test_the_core_declares_only_the_read_s_hooks_and_carries_no_harness():
    """The harness's hook (``register_eval_backends``) and its benchmark are the harness's."""
    import mempursuit_core.hookspecs as specs

    assert not hasattr(specs, "register_eval_backends")
    assert not hasattr(plugins, "list_eval_backends")
    assert not (Path(mempursuit_core.__file__).parent / "bench.py").exists()
    source = (Path(mempursuit_core.__file__).parent / "plugins.py").read_text()
    assert "_getframe" not in source  # registrations are attributed by calling each plugin
