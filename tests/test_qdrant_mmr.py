"""``qdrant-mmr``: Qdrant's own MMR query as an evaluation baseline (issue 36).

Qdrant Edge (the server's Rust engine, in process) and qdrant-client's local mode answer the MMR
query over the pool; with diversity 0.5 both give the ``mmr`` policy's order (lambda 0.5), also
when one reused shard holds pools of changing size.
"""

from __future__ import annotations

import numpy as np
import pytest

from mempursuit_core import get_selector

pytest.importorskip("qdrant_edge", reason="needs qdrant-edge-py (.ci/requirements-eval.txt)")


def test_edge_and_local_agree_with_mmr():
    rng = np.random.default_rng(3)
    edge = get_selector("qdrant-mmr")
    local = get_selector("qdrant-mmr", engine="local")
    mmr = get_selector("mmr")
    for P in (120, 30, 80, 3):  # the shard shrinks and grows between pools
        M = rng.standard_normal((P, 32)).astype(np.float32)
        M[1] = M[0] + 0.01 * rng.standard_normal(32)  # a near-duplicate MMR must skip
        q = rng.standard_normal(32)
        want = mmr.select(q, M, 10).order
        np.testing.assert_array_equal(edge.select(q, M, 10).order, want)
        np.testing.assert_array_equal(local.select(q, M, 10).order, want)


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
