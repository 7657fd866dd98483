import os

# Keep stray installed plugins out of the unit tests (built-ins still load).
os.environ.setdefault("MEMPURSUIT_PLUGINS", "")
os.environ.setdefault("MEM0_TELEMETRY", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


def clustered(rng, P=120, d=64, n_clusters=12, dup_noise=0.02, noise=0.3):
    """Unit-norm pool of fact clusters with near-duplicates, and a query mixing 3 clusters."""
    centres = rng.standard_normal((n_clusters, d))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    owner = np.arange(P) % n_clusters
    rng.shuffle(owner)
    scale = np.where(rng.random(P) < 0.4, dup_noise, noise)[:, None]
    M = centres[owner] + scale * rng.standard_normal((P, d)) / np.sqrt(d)
    M /= np.linalg.norm(M, axis=1, keepdims=True)
    q = np.array([0.6, 0.5, 0.4])[: len(centres)] @ centres[:3] + 0.2 * rng.standard_normal(d) / np.sqrt(d)
    return q / np.linalg.norm(q), M


def current_names(selectors):
    """The registered selector names, sorted."""
    return sorted(selectors)
