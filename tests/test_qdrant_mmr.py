"""``qdrant-mmr``: Qdrant's own MMR query as an evaluation baseline (issue 36).

Qdrant Edge (the server's Rust engine, in process; ``qdrant-edge-py``, in the ``[eval]`` extra)
and qdrant-client's local mode answer the MMR query over the pool; with diversity 0.5 both give
the ``mmr`` policy's order (lambda 0.5), also when one reused shard holds pools of changing size.
Without its engine's package the selector fails at construction with one line naming the install.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from mempursuit_core import get_selector

pytest.importorskip("qdrant_edge", reason='needs qdrant-edge-py (pip install -e ".[eval]")')


def _pools():
    rng = np.random.default_rng(3)
    for P in (120, 30, 80, 3):  # the shard shrinks and grows between pools
        M = rng.standard_normal((P, 32)).astype(np.float32)
        M[1] = M[0] + 0.01 * rng.standard_normal(32)  # a near-duplicate MMR must skip
        yield rng.standard_normal(32), M


def test_edge_agrees_with_mmr():
    edge, mmr = get_selector("qdrant-mmr"), get_selector("mmr")
    for q, M in _pools():
        np.testing.assert_array_equal(edge.select(q, M, 10).order, mmr.select(q, M, 10).order)


@pytest.mark.skipif(importlib.util.find_spec("qdrant_client") is None,
                    reason="engine=local needs qdrant-client (brought by [mem0] or [lightmem])")
def test_local_agrees_with_mmr():
    local, mmr = get_selector("qdrant-mmr", engine="local"), get_selector("mmr")
    for q, M in _pools():
        np.testing.assert_array_equal(local.select(q, M, 10).order, mmr.select(q, M, 10).order)


def test_diversity_changes_the_order_and_bad_options_fail():
    rng = np.random.default_rng(4)
    M = rng.standard_normal((60, 16)).astype(np.float32)
    q = rng.standard_normal(16)
    relevance_only = get_selector("qdrant-mmr", diversity=0.0).select(q, M, 10).order
    np.testing.assert_array_equal(relevance_only, np.argsort(-(M / np.linalg.norm(
        M, axis=1, keepdims=True)) @ q, kind="stable")[:10])
    with pytest.raises(ValueError, match="engine"):
        get_selector("qdrant-mmr", engine="server")
    with pytest.raises(ValueError, match="diversity"):
        get_selector("qdrant-mmr", diversity=1.5)


HIDE = """
import sys
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {hidden!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Hide())
"""


@pytest.mark.slow  # one interpreter
def test_a_missing_engine_is_one_line_naming_the_install():
    """qdrant-mmr is listed in every install; without its engine's package, asking for it says
    which package and how to install it (the [eval] extra for the default engine)."""
    code = HIDE.format(hidden={"qdrant_edge", "qdrant_client"}) + """
from mempursuit_core import get_selector, list_selectors
assert "qdrant-mmr" in list_selectors()
for opts in ({}, {"engine": "local"}):
    try:
        get_selector("qdrant-mmr", **opts)
    except ValueError as e:
        print(e)
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    edge, local = res.stdout.strip().splitlines()
    assert "qdrant_edge" in edge and 'pip install -e ".[eval]"' in edge
    assert "qdrant_client" in local and "pip install qdrant-client" in local


def test_the_eval_extra_declares_the_default_engine():
    """The README's fast subset installs only [eval,test]: the default engine must be in [eval]."""
    tomllib = pytest.importorskip("tomllib")
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert any(r.startswith("qdrant-edge-py")
               for r in meta["project"]["optional-dependencies"]["eval"])
