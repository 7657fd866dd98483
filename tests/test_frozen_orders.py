"""Every order of the default policy, its published variants and every kept selector is as
frozen before the refactor of issue 25 (``tests/frozen_orders.py`` records and checks them).

Why the check is exact, and on frozen vectors (issue 46)
--------------------------------------------------------
The orders used to be computed from vectors embedded on the machine running the test, and on
other CPUs 60 of LoCoMo's 102 order hashes moved with no change of code. The component that
differs is the embedder: the packaged "int8" MiniLM keeps int8 weights that ONNX Runtime
dequantises once when it loads the model, and then runs float32 MatMul, Softmax, Erf and
LayerNormalization in MLAS kernels it picks by CPU (AVX-512F or AVX2/FMA3; a quantised int8
product, where VNNI matters, never runs: ``benchmarks/embedder_cpu.py``). Those need not agree to
the last bit, and the plain store's dense scores are float32, so candidates whose scores differ
by about 1e-7 swap (docs/performance.md, "Orders across CPUs"). Everything after the embedder
gave the same orders under an AVX2 stand-in (numba compiled for Haswell, NumPy's AVX-512 loops
and OpenBLAS's SkylakeX kernels switched off: ``test_the_orders_hold_with_avx2_code_paths``).

So the orders are computed from fixed inputs: ``tests/fixtures/frozen_inputs.npz`` holds the
vectors the packaged model gave (the fixture's as float32: they reproduce every fixture order
as first frozen; LoCoMo's as int8 with a per-row scale, 2.7 MB instead of 11), served to the
harness's own plain store through :class:`frozen_orders.FrozenEmbedder`. With the inputs fixed,
an order is a function of the policy code alone and the check can be exact. The alternative, a
tolerance for near-ties (accept a swap of two items whose scores differ by less than some
epsilon), would need every policy's internal score at every greedy step (a swap at one step
changes every later pick, so the rest of the order could not be checked at all), and would
hide a real change that only moves near-tied items. Exactness is shown to catch a one-swap
change (``test_a_one_swap_change_is_reported``) and a 1e-4 nudge of one pool vector
(``test_a_tiny_change_of_one_vector_is_reported``).

A change of order that is intended (a new channel that fires on LoCoMo, a fixed bug) is
recorded with ``python tests/frozen_orders.py --write``; a new embedder or dataset loader first
needs ``python tests/frozen_orders.py --write-inputs``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import frozen_orders as fo

pytestmark = pytest.mark.slow  # computes every kept selector's orders on the fixture (and LoCoMo)

FROZEN = json.loads(fo.FROZEN.read_text())
#: NumPy's and OpenBLAS's AVX-512 code paths off and numba compiling for Haswell (AVX2): what
#: an AVX2-only x86 CPU runs after the (frozen) embedder.
AVX2 = {"NUMBA_CPU_NAME": "haswell", "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
        "OPENBLAS_CORETYPE": "Haswell"}


@pytest.fixture(scope="module")
def fixture_now():
    return fo.fixture_orders()


def test_the_fixture_orders_are_as_frozen(fixture_now):
    frozen = FROZEN["fixture"]
    # the readable orders first: a moved one shows where
    for key, orders in frozen["orders"].items():
        assert fixture_now["orders"][key] == orders, key
    assert fo.compare(frozen["hashes"], fixture_now["hashes"]) == []


def test_the_titled_document_orders_are_as_frozen():
    """The default's second read and bridge on titled paragraphs (the fetched titles included)."""
    now = fo.document_orders()
    frozen = FROZEN["documents"]
    for key, orders in frozen["orders"].items():
        assert now["orders"][key] == orders, key
    assert fo.compare(frozen["hashes"], now["hashes"]) == []
    # the second read acts in these pools: some fetched title is frozen
    assert any(o.split(" | ")[1] for orders in frozen["orders"].values() for o in orders)


def test_the_frozen_file_covers_every_kept_selector_and_published_variant():
    keys = FROZEN["fixture"]["hashes"]
    for spec in fo.KEPT + fo.VARIANTS + fo.EXPERIMENTAL:
        for native in fo.NATIVE:
            assert f"{native}|P200|{spec}|K10" in keys, spec
    assert {"native", "mempursuit", "mmr", "centered-fusion"} <= set(fo.KEPT)


def test_the_frozen_inputs_are_small_and_match_the_datasets():
    assert fo.INPUTS.stat().st_size < 4_000_000
    embedder = fo.frozen_embedder("fixture")
    ds, questions = fo._dataset(fo.FIXTURE)
    texts = [u.text for u in ds.units]
    vectors = embedder.encode(texts)
    assert vectors.shape == (len(texts), 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    with pytest.raises(ValueError, match="--write-inputs"):
        embedder.encode(texts[1:])  # other texts: the dataset changed, say how to re-record


class OneSwap:
    """``spec``'s selector with the second and third picks of one pool swapped."""

    def __init__(self, spec: str, pool_index: int):
        self.inner, self.pool_index, self.calls = fo.build(spec), pool_index, 0
        self.nested = self.inner.nested

    def select(self, *args, **kwargs):
        got = self.inner.select(*args, **kwargs)
        if self.calls == self.pool_index:
            got.order[[1, 2]] = got.order[[2, 1]]
        self.calls += 1
        return got


def test_a_one_swap_change_is_reported():
    pools = fo._pools(fo.FIXTURE, "dense", (200,), "fixture")[200]
    key = "dense|P200|centered-fusion|K10"
    now = dict(FROZEN["fixture"]["hashes"])
    now[key] = fo._digest(fo.orders(pools, "centered-fusion", 10))
    assert fo.compare(FROZEN["fixture"]["hashes"], now) == []  # as frozen, computed here
    now[key] = fo._digest(fo.orders(pools, "centered-fusion", 10, OneSwap("centered-fusion", 7)))
    assert fo.compare(FROZEN["fixture"]["hashes"], now) == [f"{key}: orders moved"]


def test_a_tiny_change_of_one_vector_is_reported():
    """No tolerance: one pool vector nudged towards its query by 1e-4 (its score moves by
    about 1e-4) that moves an order is reported."""
    pools = fo._pools(fo.FIXTURE, "dense", (200,), "fixture")[200]
    spec, key = "mmr", "dense|P200|mmr|K10"
    sel = fo.build(spec)
    base = fo.orders(pools, spec, 10, sel)
    assert fo._digest(base) == FROZEN["fixture"]["hashes"][key]
    for i, pool in enumerate(pools):
        for row in range(len(pool.vectors)):
            vectors = pool.vectors.copy()
            vectors[row] += np.float32(1e-4) * pool.query_vector
            got = sel.select(pool.query_vector, vectors, 10, native_scores=pool.native_scores,
                             signals=pool.signals).order.tolist()
            if got != base[i]:
                moved = base[:i] + [got] + base[i + 1:]
                now = {**FROZEN["fixture"]["hashes"], key: fo._digest(moved)}
                assert fo.compare(FROZEN["fixture"]["hashes"], now) == [f"{key}: orders moved"]
                return
    pytest.fail("no nudge of one vector moved an order: the check could not see it either")


def test_the_orders_hold_with_avx2_code_paths(tmp_path):
    """The fixture's orders with numba, NumPy and OpenBLAS on their AVX2 paths (a fresh numba
    cache, so the kernels compile for Haswell), in a fresh interpreter."""
    env = {**os.environ, **AVX2, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    run = subprocess.run([sys.executable, str(fo.ROOT / "tests" / "frozen_orders.py"),
                          "--fixture-only"], env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "every order as frozen" in run.stdout


@pytest.mark.skipif(not fo.LOCOMO.exists(), reason=f"LoCoMo is not at {fo.LOCOMO} (../shared)")
def test_the_locomo_orders_are_as_frozen():
    assert fo.compare(FROZEN["locomo"], fo.locomo_hashes()) == []
