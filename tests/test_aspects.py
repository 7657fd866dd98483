"""The things a question sets side by side, and centered-fusion's ``aspects`` option."""

import numpy as np
import pytest

from mempursuit_core import get_selector
from mempursuit_core.aspects import aspect_terms, query_aspects


@pytest.mark.parametrize("question, parts", [
    ("Which book did I finish reading first, 'The Hate U Give' or 'The Nightingale'?",
     ["'The Hate U Give'", "'The Nightingale'"]),
    ("Who did I meet first, Mark and Sarah or Tom?", ["Mark and Sarah", "Tom"]),
    ("How many days passed between my visit to MoMA and the exhibit at the Met?",
     ["my visit to MoMA", "the exhibit at the Met"]),
    ("How long had I been taking guitar lessons when I bought the new amp?",
     ["How long had I been taking guitar lessons", "I bought the new amp"]),
    ("What is the order of the three trips: Paris, the lake house, and Rome?",
     ["Paris", "the lake house", "Rome"]),
])
def test_aspects_of_questions_that_join_things(question, parts):
    assert query_aspects(question) == parts


@pytest.mark.parametrize("question", [
    "When did Caroline go to the LGBTQ support group?",
    "What did Melanie realize after the charity race?",  # one event, not a span between two
    "What is my favourite colour?",
    "Which is better, or not?",  # two parts, but one has no word of its own
    "",
])
def test_no_aspects_for_questions_about_one_thing(question):
    assert query_aspects(question) == []


def test_aspect_terms_drop_frame_and_shared_words():
    parts = ["the day I bought a gift for my brother", "the day I bought a gift for my friend"]
    assert aspect_terms(parts) == [["brother"], ["friend"]]
    # the frame clause of a duration question has no word of its own and is dropped
    assert aspect_terms(["How many days had passed", "I started ukulele lessons",
                         "I serviced my guitar"]) == [["started", "ukulele", "lessons"],
                                                      ["serviced", "guitar"]]


def _two_event_pool():
    """Ten memories about the racket (the dense channel's favourite), one about the tournament."""
    rng = np.random.default_rng(3)
    d = 32
    racket, tournament = np.eye(d)[1], np.eye(d)[2]
    q = racket + 0.4 * tournament
    M = np.stack([racket + 0.05 * rng.standard_normal(d) for _ in range(10)]
                 + [tournament + 0.3 * racket]
                 + [rng.standard_normal(d) for _ in range(9)])
    # the tournament is named in other memories too: the word alone does not find its memory
    texts = ([f"I bought a new tennis racket, note {i}" for i in range(10)]
             + ["I played in the tennis tournament downtown"]
             + [f"We watched a chess tournament and cooked pasta {i}" for i in range(4)]
             + [f"We talked about cooking pasta {i}" for i in range(5)])
    signals = {"texts": texts, "session_ids": [f"s{i}" for i in range(20)],
               "query_text": "How many days passed between the day I bought the racket "
                             "and the tournament?"}
    return q, M, signals


def test_aspects_take_the_memory_of_the_missing_event():
    q, M, signals = _two_event_pool()
    off = get_selector("centered-fusion").select(q, M, 3, signals=signals).order.tolist()
    assert 10 not in off  # three racket memories: the tournament is missed
    on = get_selector("centered-fusion", aspects=1.0).select(q, M, 3, signals=signals)
    assert 10 in on.order.tolist()
    assert on.order[0] == off[0]  # the first pick is the fused order's first
    full = get_selector("centered-fusion", aspects=1.0).select(q, M, 20, signals=signals)
    assert sorted(full.order.tolist()) == list(range(20))


def test_aspects_leave_a_one_thing_question_alone():
    q, M, signals = _two_event_pool()
    signals = {**signals, "query_text": "Which racket did I buy?"}
    off = get_selector("centered-fusion").select(q, M, 20, signals=signals)
    on = get_selector("centered-fusion", aspects=5.0).select(q, M, 20, signals=signals)
    assert on.order.tolist() == off.order.tolist()


def test_aspects_need_the_pool_texts():
    q, M, signals = _two_event_pool()
    no_texts = {k: v for k, v in signals.items() if k != "texts"}
    off = get_selector("centered-fusion").select(q, M, 20, signals=no_texts)
    on = get_selector("centered-fusion", aspects=1.0).select(q, M, 20, signals=no_texts)
    assert on.order.tolist() == off.order.tolist()
    with pytest.raises(ValueError, match="'texts' has 3 entries"):
        get_selector("centered-fusion", aspects=1.0).select(
            q, M, 5, signals={**signals, "texts": ["a", "b", "c"]})
    with pytest.raises(ValueError, match="aspects must be finite"):
        get_selector("centered-fusion", aspects=-1.0)


def test_part_scores_are_the_bm25_of_the_parts():
    from mempursuit_core.lexical import pool_bm25, pool_bm25_parts

    docs = ["I bought a racket", "the tennis tournament was fun", "racket strings and tennis",
            "cooking pasta", ""]
    query = "Which came first, buying the racket or the tennis tournament?"
    parts = [["buying", "racket"], ["tennis", "tournament"], ["pasta"]]  # pasta: not the query's
    for stem in (False, True):
        whole, rows = pool_bm25_parts(docs, query, parts, stem=stem)
        assert whole.tolist() == pool_bm25(docs, query, stem=stem).tolist()
        for words, row in zip(parts[:2], rows[:2]):
            assert np.allclose(row, pool_bm25(docs, " ".join(words), stem=stem))
        assert rows[2].tolist() == [0.0] * len(docs)
    assert [r.shape for r in pool_bm25_parts([], query, parts)[1]] == [(0,)] * 3
    whole, rows = pool_bm25_parts(docs, "", parts)
    assert whole.tolist() == [0.0] * 5 and all(r.tolist() == [0.0] * 5 for r in rows)


def test_aspect_greedy_is_the_stated_rule():
    """Each pick maximises key_i + w * sum_a max(0, z_ai - best_a) (no gain before the first);
    key: the spread key (every memory but its session's best pays the penalty)."""
    from mempursuit_core.policies import Aspects, _greedy_order, _spread_key

    rng = np.random.default_rng(5)
    for trial in range(200):
        P = int(rng.integers(1, 25))
        score = np.round(8 * rng.normal(size=P)) / 8
        Z = np.round(8 * rng.normal(size=(int(rng.integers(2, 4)), P))) / 8
        sessions = [f"s{b}" for b in rng.integers(0, max(1, P // 3), size=P)]
        penalty, w = float(rng.choice([0.0, 0.5])), float(rng.choice([0.25, 1.0, 4.0]))
        k = int(rng.integers(1, P + 1))
        order = np.argsort(-score, kind="stable")
        _, key = _spread_key(score, order, sessions, penalty)
        got = _greedy_order(key, order, k, [Aspects(Z, w)])
        picks, best = [], None
        for _ in range(k):
            gain = (np.zeros(P) if best is None
                    else w * np.maximum(Z - best[:, None], 0).sum(axis=0))
            total = [key[i] + gain[i] if i not in picks else -np.inf for i in range(P)]
            i = int(np.argmax(total))
            picks.append(i)
            best = Z[:, i].copy() if best is None else np.maximum(best, Z[:, i])
        assert got[:k].tolist() == picks, trial
        assert sorted(got.tolist()) == list(range(P))


@pytest.mark.parametrize("question, several", [
    ("How many charity events did I attend?", True),
    ("What is the order of the concerts I attended, from the earliest?", True),
    ("What books has Melanie read?", True),
    ("What did Caroline paint?", False),
    ("When did Jon open his studio?", False),
])
def test_questions_that_ask_for_several(question, several):
    from mempursuit_core.aspects import asks_for_several

    assert asks_for_several(question) is several


def test_gather_spreads_only_questions_that_ask_for_several():
    """Two sessions: session "a" holds the three best memories. A question for a count takes
    ``gather`` as its spread, any other question the plain ``spread``."""
    d = 8
    q = np.eye(d)[0]
    M = np.stack([np.eye(d)[0] + 0.1 * np.eye(d)[i] for i in (1, 2, 3)]
                 + [np.eye(d)[0] + 0.6 * np.eye(d)[4]] + [np.eye(d)[i] for i in (5, 6, 7)])
    sessions = ["a", "a", "a", "b", "c", "d", "e"]
    texts = ["x"] * 7

    def top2(question, **opts):
        signals = {"texts": texts, "session_ids": sessions, "query_text": question}
        return get_selector("centered-fusion", weight=0, spread=0, **opts).select(
            q, M, 2, signals=signals).order.tolist()

    assert top2("How many cakes did I bake?", gather=None) == [0, 1]  # spread 0: session a twice
    assert top2("How many cakes did I bake?") == [0, 3]  # the default gathers (0.8)
    assert top2("How many cakes did I bake?", gather=100.0) == [0, 3]
    assert top2("Which cake did I bake?", gather=100.0) == [0, 1]
    with pytest.raises(ValueError, match="gather must be finite"):
        get_selector("centered-fusion", gather=float("nan"))
