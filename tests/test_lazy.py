"""``lazy_exports``: an adapter package's names, imported on first use, with a clear error when
the framework a submodule needs is missing (every shipped adapter's ``__init__`` uses it)."""

import sys

import pytest

from mempursuit_core.adapter import AdapterNotInstalledError, lazy_exports


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package ``toyadapter`` with submodules ``plain`` and ``framed`` (which needs a
    framework that is not installed)."""
    root = tmp_path / "toyadapter"
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "plain.py").write_text("VALUE = 42\ndef helper():\n    return 'h'\n")
    (root / "framed.py").write_text("import ghost_framework_not_installed\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import toyadapter

    yield toyadapter
    for name in [m for m in sys.modules if m.startswith("toyadapter")]:
        del sys.modules[name]


def test_names_import_on_first_use_and_are_cached(package):
    getattr_, dir_ = lazy_exports(vars(package), {"VALUE": "plain", "other": "plain:helper"},
                                  framework="Toy", extra="toy")
    assert "toyadapter.plain" not in sys.modules
    assert getattr_("VALUE") == 42 and "toyadapter.plain" in sys.modules
    assert vars(package)["VALUE"] == 42  # cached in the package
    assert getattr_("other")() == "h"  # "submodule:attr"
    assert {"VALUE", "other"} <= set(dir_())


def test_a_missing_framework_names_the_extra(package):
    getattr_, _ = lazy_exports(vars(package), {"Thing": "framed", "VALUE": "plain"},
                               needs={"framed": "ghost_framework_not_installed"},
                               framework="Ghost", extra="ghost")
    with pytest.raises(AdapterNotInstalledError,
                       match=r'toyadapter.Thing needs Ghost, which is not installed: '
                             r'pip install -e "\.\[ghost\]"'):
        getattr_("Thing")
    assert getattr_("VALUE") == 42  # the other submodule needs nothing
    star, _ = lazy_exports(vars(package), {"VALUE": "plain"}, needs={"*": "ghost_x_not_there"},
                           framework="Ghost", extra="ghost", install="see the docs")
    with pytest.raises(AdapterNotInstalledError, match="see the docs"):
        star("VALUE")


def test_unknown_and_moved_names_are_attribute_errors(package):
    getattr_, _ = lazy_exports(vars(package), {"VALUE": "plain"}, framework="Toy", extra="toy",
                               moved={"old": "toyadapter.plain.VALUE"})
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        getattr_("nope")
    with pytest.raises(AttributeError, match=r"toyadapter.old moved to toyadapter.plain.VALUE"):
        getattr_("old")


def test_every_shipped_adapter_package_imports_no_framework():
    code = ("import sys\n"
            "import mempursuit_cognee, mempursuit_graphiti, mempursuit_langchain, "
            "mempursuit_langgraph, mempursuit_llamaindex, mempursuit_mem0\n"
            "heavy = ['cognee', 'graphiti_core', 'langchain_core', 'langgraph', "
            "'llama_index', 'mem0']\n"
            "print([m for m in heavy if m in sys.modules])\n")
    import subprocess

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


