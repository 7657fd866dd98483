"""Every adapter takes the same read options, with the same defaults (mempursuit_core.options).

The adapters are those the distribution's entry points register, one test per adapter: one
whose framework is missing is a skip that says so, never left out."""

import dataclasses
import importlib
import inspect

import pytest

from mempursuit_core import DEFAULT_POLICY, testing
from mempursuit_core.options import DEFAULT_POOL, ReadOptions

from shipped import OWN_PROCESS, shipped_adapters, top_package

#: Every adapter the distribution's entry points register (tests/shipped.py).
ADAPTERS = shipped_adapters()

SHARED = ("k", "pool", "policy", "policy_options", "strict")


def _surfaces(spec) -> dict[str, type]:
    """The classes of an adapter's module that take the read options (a ``policy_options``
    parameter or dataclass field), defined in the adapter's own package."""
    module = importlib.import_module(spec.module)
    own = top_package(spec)
    found = {}
    for name in sorted(set(vars(module)) | set(getattr(module, "__all__", ()))):  # lazy exports
        obj = getattr(module, name)
        if not inspect.isclass(obj) or obj.__module__.split(".")[0] != own:
            continue
        names = ({f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj)
                 else set(inspect.signature(obj.__init__).parameters))
        if "policy_options" in names:
            found[f"{spec.name} {name}"] = obj
    return found


def _adapter(name: str) -> dict[str, type]:
    spec = ADAPTERS[name]
    if name in OWN_PROCESS:
        pytest.skip(OWN_PROCESS[name])
    if not spec.framework_installed():
        pytest.skip(f"the {name} adapter's module needs {spec.framework!r}: {spec.hint}")
    found = _surfaces(spec)
    assert found, f"{spec.module} has no class taking the shared read options"
    return found


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_the_same_option_names_and_defaults_everywhere(name):
    """The check a plugin's own tests run (``mempursuit_core.testing``): keyword-only, default
    None (a settings dataclass: the shared defaults themselves)."""
    for where, cls in _adapter(name).items():
        try:
            testing.check_read_options(cls)
        except testing.ConformanceError as exc:
            pytest.fail(f"{where}: {exc}")


def test_the_shared_defaults():
    built = ReadOptions.build("x")
    assert (built.k, built.pool, built.policy, built.strict) == (None, 200, DEFAULT_POLICY, False)
    assert (DEFAULT_POOL, testing.SHARED_OPTIONS) == (200, SHARED)


def test_the_option_check_catches_each_departure():
    class Good:
        def __init__(self, store, *, k=None, pool=None, policy=None, policy_options=None,
                     strict=None):
            pass

    class Positional:
        def __init__(self, store, k=None, *, pool=None, policy=None, policy_options=None,
                     strict=None):
            pass

    class Missing:
        def __init__(self, store, *, k=None, pool=None, policy=None, strict=None):
            pass

    class OwnDefault:
        def __init__(self, store, *, k=None, pool=None, policy="native", policy_options=None,
                     strict=None):
            pass

    @dataclasses.dataclass
    class Settings:
        k: int | None = None
        pool: int = DEFAULT_POOL
        policy: str = DEFAULT_POLICY
        policy_options: dict = dataclasses.field(default_factory=dict)
        strict: bool = False

    @dataclasses.dataclass
    class OtherPool(Settings):
        pool: int = 50

    testing.check_read_options(Good)
    testing.check_read_options(Settings)
    for cls, says in ((Positional, "by position"),
                      (Missing, r"lacks the read options \['policy_options'\]"),
                      (OwnDefault, r"\['policy'\] must default to None"),
                      (OtherPool, "defaults")):
        with pytest.raises(testing.ConformanceError, match=says):
            testing.check_read_options(cls)


def test_read_options_build_and_bad_ones_name_the_adapter():
    o = ReadOptions.build("Adapter", pool=50, strict=True, policy="mmr", lam=0.3)
    assert (o.pool, o.strict, o.policy_options) == (50, True, {"lam": 0.3})
    with pytest.raises(ValueError, match=r"^Adapter: pool must be >= 1"):
        ReadOptions.build("Adapter", pool=0)
    for bad in ({"pool": 0}, {"k": 2.5}, {"strict": "yes"}, {"policy": ""}, {"policy": 3}):
        with pytest.raises((TypeError, ValueError)):
            ReadOptions.build("Adapter", **bad)
    assert ReadOptions(k=5).budget(10) == 5 and ReadOptions().budget(10) == 10
    assert ReadOptions(pool=3).pool_size(10) == 10


def test_the_shipped_adapters_import_the_core_from_its_adapter_module():
    """Adapters reach the core through ``mempursuit_core.adapter`` only (CONTRIBUTING.md)."""
    import ast
    from pathlib import Path

    import mempursuit_core.adapter as surface

    wrong = []
    for path in sorted((Path(__file__).resolve().parents[1] / "adapters").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mempursuit_core"):
                names = [a.name for a in node.names]
                ok = (node.module == "mempursuit_core.adapter"
                      and all(hasattr(surface, n) for n in names)) or (
                    node.module == "mempursuit_core" and names == ["adapter"])
                if not ok:
                    wrong.append(f"{path.name}:{node.lineno} from {node.module} import {names}")
            elif isinstance(node, ast.Import):
                wrong += [f"{path.name}:{node.lineno} import {a.name}" for a in node.names
                          if a.name.startswith("mempursuit_core")]
    assert not wrong, wrong
    assert sorted(surface.__all__) == sorted(set(surface.__all__))
    assert all(hasattr(surface, n) for n in surface.__all__)
