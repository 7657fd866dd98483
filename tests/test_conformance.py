"""``mempursuit_core.testing``: the adapter conformance checks a plugin's own tests call.

A toy adapter that keeps every promise passes them, each broken promise is caught with a
message saying which, and a plugin package built outside this repository (its own
``pyproject.toml``, an entry point of the group ``mempursuit``, an adapter written from
CONTRIBUTING.md) is installed into a temporary folder, found by the plugin host and passes
them in its own interpreter."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mempursuit_core import testing
from mempursuit_core.adapter import CandidatePool, ReadOptions, pool_signals, read_or_native

ROOT = Path(__file__).resolve().parents[1]

# -- a toy framework and an adapter over it (the shape CONTRIBUTING.md shows) -------------------

RNG = np.random.default_rng(0)
VECTORS = RNG.normal(size=(12, 8))
VECTORS /= np.linalg.norm(VECTORS, axis=1, keepdims=True)
TEXTS = [f"memory number {i}" for i in range(12)]
QUERY = VECTORS[3] + 0.4 * VECTORS[5]


def framework_search(query, limit):
    """The toy framework's own read: the ``limit`` most similar texts."""
    return [TEXTS[i] for i in np.argsort(-(VECTORS @ query), kind="stable")[:limit]]


class Reader:
    def __init__(self, *, k=None, pool=None, policy=None, policy_options=None, strict=None,
                 **extra):
        self.options = ReadOptions.build("Reader", k=k, pool=pool, policy=policy,
                                         policy_options=policy_options, strict=strict, **extra)
        self.selector = self.options.selector()

    def search(self, query, limit=4):
        K = self.options.budget(limit)
        if self.options.is_native:
            return framework_search(query, K)

        def ours():
            order = np.argsort(-(VECTORS @ query), kind="stable")[:self.options.pool_size(K)]
            texts = [TEXTS[i] for i in order]
            pool = CandidatePool(texts, np.asarray(query, dtype=np.float64), VECTORS[order],
                                 native_scores=(VECTORS @ query)[order],
                                 signals=pool_signals(texts, "memory"))
            return pool.select(self.selector, K).items

        return read_or_native(ours, lambda: framework_search(query, K),
                              strict=self.options.strict, framework="toy")


def check(cls=Reader, read=lambda r: r.search(QUERY, 4)):
    testing.check_adapter(cls, build=lambda **o: cls(**o), read=read,
                          native=lambda: framework_search(QUERY, 4))


def test_an_adapter_that_keeps_every_promise_passes():
    check()
    assert Reader().search(QUERY, 4) != framework_search(QUERY, 4)  # the policy reorders


class Positional(Reader):
    def __init__(self, k=None, *, pool=None, policy=None, policy_options=None, strict=None):
        super().__init__(k=k, pool=pool, policy=policy, policy_options=policy_options,
                         strict=strict)


class OwnDefault(Reader):
    def __init__(self, *, k=None, pool=200, policy=None, policy_options=None, strict=None):
        super().__init__(k=k, pool=pool, policy=policy, policy_options=policy_options,
                         strict=strict)


class LazySelector(Reader):
    """Builds its selector at the first read: a bad policy name passes set-up."""

    def __init__(self, *, k=None, pool=None, policy=None, policy_options=None, strict=None):
        try:
            super().__init__(k=k, pool=pool, policy=policy, policy_options=policy_options,
                             strict=strict)
        except KeyError:
            self.options = ReadOptions.build("LazySelector", policy=None)


class NativeTruncatesWrong(Reader):
    def search(self, query, limit=4):
        got = super().search(query, limit)
        return got[::-1] if self.options.is_native else got


class Silent(Reader):
    """Falls back without saying so."""

    def search(self, query, limit=4):
        try:
            return Reader.search(Reader(policy=self.options.policy, strict=True), query, limit)
        except RuntimeError:
            if self.options.strict:
                raise
            return framework_search(query, limit)


class NeverStrict(Reader):
    def search(self, query, limit=4):
        return Reader.search(Reader(policy=self.options.policy), query, limit)


@pytest.mark.parametrize("cls, says", [
    (Positional, r"takes \['k'\] by position"),
    (OwnDefault, r"\['pool'\] must default to None"),
    (LazySelector, r"accepted \[\{'policy': 'no-such-policy'\}"),
    (NativeTruncatesWrong, r'policy="native" is not the framework'),
    (Silent, r"one WARNING naming the failure .* got 0"),
    (NeverStrict, r"strict=True a read whose policy fails must raise"),
])
def test_each_broken_promise_is_caught_and_named(cls, says):
    with pytest.raises(testing.ConformanceError, match=says):
        check(cls)


def test_a_read_that_never_reaches_the_policy_is_reported():
    with pytest.raises(testing.ConformanceError, match="never called the policy"):
        check(read=lambda r: r.search(QUERY, 4) if r.options.is_native else
              framework_search(QUERY, 4))


def test_the_core_imports_no_test_framework():
    code = ("import sys, mempursuit_core, mempursuit_core.adapter, mempursuit_core.testing; "
            "print(sorted(m for m in ('pytest', '_pytest', 'hypothesis') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


# -- a third-party plugin package, outside this repository ---------------------------------------

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "mempursuit-toyrank"
version = "0.0.1"
dependencies = ["mempursuit"]

[project.entry-points.mempursuit]
toyrank = "mempursuit_toyrank"

[tool.setuptools]
packages = ["toyrank", "mempursuit_toyrank"]
"""

FRAMEWORK = '''\
"""A toy reranking framework: documents are (text, vector) pairs, ranked by cosine."""
import numpy as np


class Ranker:
    def rank(self, query_vector, documents, top_k):
        q = np.asarray(query_vector, dtype=float)
        scores = [float(np.dot(v, q)) for _, v in documents]
        order = sorted(range(len(documents)), key=lambda i: -scores[i])
        return [documents[i] for i in order[:top_k]]
'''

PACKAGE = '''\
"""The package is the plugin: its spec, its lazy names and its hook (imports no toyrank)."""
from mempursuit_core.adapter import AdapterSpec, adapter_package

SPEC = AdapterSpec(name="toyrank", module="mempursuit_toyrank.adapter", framework="toyrank",
                   summary="reorders toyrank's ranked documents",
                   install_hint="pip install mempursuit-toyrank",
                   exports={"MemPursuitRanker": "adapter"})

SPEC, __all__, __getattr__, __dir__, register_adapters = adapter_package(globals(), SPEC)
'''

ADAPTER = '''\
import numpy as np

from mempursuit_core.adapter import CandidatePool, ReadOptions, pool_signals, read_or_native


class MemPursuitRanker:
    """toyrank's Ranker, with the pool reordered by a mempursuit policy before top_k."""

    def __init__(self, ranker, *, k=None, pool=None, policy=None, policy_options=None,
                 strict=None, **extra):
        self.ranker = ranker
        self.options = ReadOptions.build("MemPursuitRanker", k=k, pool=pool, policy=policy,
                                         policy_options=policy_options, strict=strict, **extra)
        self.selector = self.options.selector()

    def rank(self, query_vector, documents, top_k, query_text=None):
        K = self.options.budget(top_k)
        if self.options.is_native:
            return self.ranker.rank(query_vector, documents, K)

        def ours():
            ranked = self.ranker.rank(query_vector, documents, self.options.pool_size(K))
            texts = [t for t, _ in ranked]
            q = np.asarray(query_vector, dtype=np.float64)
            vectors = np.stack([np.asarray(v, dtype=np.float64) for _, v in ranked])
            pool = CandidatePool(ranked, q, vectors, native_scores=vectors @ q,
                                 signals=pool_signals(texts, query_text or ""))
            return pool.select(self.selector, K).items

        return read_or_native(ours, lambda: self.ranker.rank(query_vector, documents, K),
                              strict=self.options.strict, framework="toyrank")
'''

THEIR_TEST = '''\
"""What the plugin's own test suite runs (here as a script)."""
import sys

import numpy as np

from mempursuit_core import testing
from mempursuit_core.plugins import adapter_plugins, load_adapter

assert "toyrank" in adapter_plugins() and "toyrank" not in sys.modules  # registered, not imported
from toyrank import Ranker
import mempursuit_toyrank

rng = np.random.default_rng(1)
vectors = rng.normal(size=(30, 16))
vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
documents = [(f"note {i}", v) for i, v in enumerate(vectors)]
query = vectors[0] + vectors[1]

adapter = load_adapter("toyrank")
cls = adapter.MemPursuitRanker
assert mempursuit_toyrank.MemPursuitRanker is cls  # the package's lazy name
assert mempursuit_toyrank.__all__ == ["MemPursuitRanker"]
testing.check_adapter(cls, build=lambda **options: cls(Ranker(), **options),
                      read=lambda r: [t for t, _ in r.rank(query, documents, 5)],
                      native=lambda: [t for t, _ in Ranker().rank(query, documents, 5)])
print("listed from:", adapter_plugins()["toyrank"][2])
print("conforms")
'''


def _write_package(where: Path) -> Path:
    pkg = where / "mempursuit-toyrank"
    for path, text in {"pyproject.toml": PYPROJECT, "toyrank/__init__.py": FRAMEWORK,
                       "mempursuit_toyrank/__init__.py": PACKAGE,
                       "mempursuit_toyrank/adapter.py": ADAPTER}.items():
        (pkg / path).parent.mkdir(parents=True, exist_ok=True)
        (pkg / path).write_text(text)
    return pkg


def _can_build_wheels() -> bool:
    """Whether pip can build a wheel offline here: setuptools >= 70.1, or an older one with
    the ``wheel`` package."""
    try:
        import setuptools
    except ImportError:
        return False
    version = tuple(int(p) for p in setuptools.__version__.split(".")[:2] if p.isdigit())
    return version >= (70, 1) or importlib.util.find_spec("wheel") is not None


def _install(pkg: Path, site: Path) -> str:
    """The package installed into ``site`` (not this venv, so nothing to uninstall): built by
    pip from its pyproject, offline, where setuptools can build a wheel; else laid out as pip
    lays out an install (its packages and a dist-info whose entry points and name are read
    from the same pyproject)."""
    if _can_build_wheels():
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                        "--no-build-isolation", "--quiet", "--target", str(site), str(pkg)],
                       check=True, capture_output=True, text=True)
        return "pip"
    tomllib = pytest.importorskip("tomllib", reason="reading a pyproject needs Python 3.11")
    project = tomllib.loads((pkg / "pyproject.toml").read_text())["project"]
    for sub in ("toyrank", "mempursuit_toyrank"):
        (site / sub).mkdir(parents=True)
        for f in (pkg / sub).iterdir():
            (site / sub / f.name).write_text(f.read_text())
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\n"
                                   f"Version: {project['version']}\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
        for group, eps in project["entry-points"].items()))
    return "dist-info"


@pytest.mark.slow  # pip builds a wheel and a fresh interpreter loads the plugin host (~10 s)
def test_a_plugin_package_outside_the_repository_passes_the_checks(tmp_path):
    pkg = _write_package(tmp_path / "src")
    site = tmp_path / "site"
    _install(pkg, site)
    assert (site / "mempursuit_toyrank" / "adapter.py").exists()
    (tmp_path / "their_test.py").write_text(THEIR_TEST)
    path = [str(site)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {**{k: v for k, v in os.environ.items() if k != "MEMPURSUIT_PLUGINS"},  # no allow-list
           "PYTHONPATH": os.pathsep.join(path)}
    run = subprocess.run([sys.executable, str(tmp_path / "their_test.py")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "listed from: mempursuit-toyrank" in run.stdout and "conforms" in run.stdout

    # the same package with a broken promise (its options default to the policy's name) fails
    (site / "mempursuit_toyrank" / "adapter.py").write_text(
        ADAPTER.replace("policy=None, policy_options", "policy='centered-fusion', policy_options"))
    run = subprocess.run([sys.executable, str(tmp_path / "their_test.py")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0
    assert "ConformanceError" in run.stderr and "['policy'] must default to None" in run.stderr
