"""``centered-fusion`` as channels: the fast path against the plain reference
(``tests/fusion_reference.py``), what ``info`` reports, and each channel on its own."""

from __future__ import annotations

import numpy as np
import pytest

import fusion_reference as ref
from mempursuit_core import get_selector
from mempursuit_core.policies import (CHANNELS, PoolContext, asker_channel, centred_relevance,
                                      date_channel, lexical_channel, named_channel,
                                      titled_channel)

WORDS = ("painted", "painting", "sunset", "lake", "Caroline", "concert", "sister", "moved",
         "Paris", "job", "dog", "adopted", "race", "charity", "the", "and", "my", "I")
QUESTIONS = ("What did Caroline paint on 3 June, 2023?", "How many races did I run?",
             "Where did Melanie move in July 2022?", "What did my sister adopt?",
             "Which concert was first, the lake one or the Paris one?", "sunset painting",
             "What did you recommend to me?")
SPEAKERS = ("Caroline", "Melanie", "user", "assistant", None)
STAMPS = ("2023-06-03T10:00", "2023-06-05", "2022-07-14 9:00", "2022-08-01", "", None,
          1685786400.0)


def random_pool(seed: int):
    rng = np.random.default_rng(seed)
    P, d = int(rng.integers(5, 40)), 8
    M = rng.standard_normal((P, d)) + 0.8 * rng.standard_normal(d)  # a shared component
    q = rng.standard_normal(d)
    signals = {"texts": [" ".join(rng.choice(WORDS, int(rng.integers(1, 8)))) for _ in range(P)],
               "query_text": QUESTIONS[seed % len(QUESTIONS)],
               "timestamps": [STAMPS[i] for i in rng.integers(0, len(STAMPS), P)],
               "speakers": [SPEAKERS[i] for i in rng.integers(0, len(SPEAKERS), P)],
               "session_ids": [int(s) for s in rng.integers(0, 4, P)]}
    if seed % 3:
        signals["lexical"] = rng.random(P) * (rng.random(P) < 0.5)
    return q, M, signals


@pytest.mark.parametrize("seed", range(60))
def test_the_fused_score_and_order_match_the_plain_reference(seed):
    q, M, signals = random_pool(seed)
    policy = get_selector("centered-fusion")
    fast = policy.scores(q, M, signals=signals)
    slow = ref.fused_score(q, M, signals)
    np.testing.assert_allclose(fast, slow, rtol=1e-9, atol=1e-9)
    k = min(10, len(M))
    want = ref.spread_order(slow, signals["session_ids"], signals["query_text"], k)
    assert policy.select(q, M, k, signals=signals).order.tolist() == want


def test_centred_relevance_is_the_cosine_of_the_residuals(rng):
    q, M, _ = random_pool(1)
    unit_q = q / np.linalg.norm(q)
    np.testing.assert_allclose(centred_relevance(unit_q, M).rel, ref.centred_relevance(q, M),
                               rtol=1e-10, atol=1e-12)


def test_info_says_which_channels_fired_with_what_weight():
    q, M, signals = random_pool(0)  # "What did Caroline paint on 3 June, 2023?"
    signals["timestamps"][0] = "2023-06-03"
    signals["speakers"][0] = "Caroline"
    signals["speakers"][1] = "Melanie"
    sel = get_selector("centered-fusion").select(q, M, 5, signals=signals)
    assert sel.info["channels"] == {"lexical": 0.7, "dates": 3.0, "named": 1.0}
    assert sel.info["reorder"] == {"spread": 0.3}
    off = get_selector("centered-fusion", dates=0, named=0, spread=0).select(
        q, M, 5, signals=signals)
    assert off.info["channels"] == {"lexical": 0.7} and off.info["reorder"] == {}
    bare = get_selector("centered-fusion").select(q, M, 5)
    assert bare.info == {"lexical": "none", "channels": {}, "reorder": {}}


def _context(signals, P=4, **options):
    policy = get_selector("centered-fusion", **options)
    return PoolContext(np.ones(3) / np.sqrt(3), np.ones((P, 3)), signals,
                       signals.get("query_text"), policy)


def test_each_channel_on_its_own():
    texts = ["painted a sunset", "a dog", "the lake", "painting class"]
    ctx = _context({"texts": texts, "query_text": "what did she paint"})
    assert lexical_channel(ctx).argmax() in (0, 3) and ctx.notes["lexical"] == "pool"
    assert lexical_channel(_context({"query_text": "what"})) is None
    stamps = ["2023-06-03", "2023-06-06", "2023-07-01", None]
    got = date_channel(_context({"timestamps": stamps, "query_text": "on 3 June, 2023?"}))
    np.testing.assert_allclose(got, [1.0, 1 - 3 / 7, 0.0, 0.0])
    assert date_channel(_context({"timestamps": stamps, "query_text": "when?"})) is None
    who = ["Caroline", "Melanie", "user", None]
    assert named_channel(_context({"speakers": who, "query_text": "Did Caroline go?"})
                         ).tolist() == [1, 0, 0, 0]
    assert asker_channel(_context({"speakers": who, "query_text": "Where did I go?"})
                         ).tolist() == [0, 0, 1, 0]
    # a named speaker takes precedence over the asker
    assert asker_channel(_context({"speakers": who, "query_text": "Did I meet Caroline?"})) is None
    titles = ["Sunset Lake", None, "The", "Painting class"]
    assert titled_channel(_context({"titles": titles, "query_text": "Who painted Sunset Lake?"})
                          ).tolist() == [1, 0, 0, 0]
    assert titled_channel(_context({"titles": titles, "query_text": "Who painted?"})) is None
    assert titled_channel(_context({"query_text": "Who painted Sunset Lake?"})) is None
    assert [name for name, _, _ in CHANNELS] == ["lexical", "dates", "named", "speaker", "titled"]


def test_a_new_channel_is_one_function(monkeypatch):
    from mempursuit_core.policies import CenteredFusion

    calls = []

    def late(ctx):  # a made-up channel: later memories score higher
        calls.append(ctx.text)
        return np.arange(ctx.P, dtype=np.float64)

    class WithLate(CenteredFusion):
        CHANNELS = CenteredFusion.CHANNELS + (("late", "late", late),)

        def __init__(self, *, late: float = 0.0, **options):
            super().__init__(**options)
            self.late = late

    q, M, signals = random_pool(2)
    off = WithLate(spread=0).select(q, M, 3, signals=signals)
    assert "late" not in off.info["channels"] and not calls  # weight 0: not run
    assert off.order.tolist() == get_selector("centered-fusion", spread=0).select(
        q, M, 3, signals=signals).order.tolist()
    on = WithLate(spread=0, late=1000.0).select(q, M, 3, signals=signals)
    assert on.info["channels"]["late"] == 1000.0 and calls
    assert on.order.tolist() == list(range(len(M) - 1, len(M) - 4, -1))


@pytest.mark.parametrize("bad", [None, 5, "abc", [1, 2]])
def test_garbage_signals_name_the_signal(bad):
    q, M, signals = random_pool(0)
    for key in ("texts", "timestamps", "speakers", "session_ids"):
        broken = {**signals, key: bad}
        if bad is None and key in ("session_ids",):
            continue  # an absent time signal: the calendar day of the timestamps instead
        with pytest.raises(ValueError, match=f"'{key}'"):
            get_selector("centered-fusion").select(q, M, 3, signals=broken)


# ---------------------------------------------------------------------------------- documents

NAMES = ("Marlow Bay", "Edda Kranz", "Velden", "Pale Road (film)", "Juri Sandt", "Ostfeld",
         "Anna Kranz", "River Ost", "Kiss and Tell (1945 film)", "Kiss and Tell (1953 film)",
         "Shirley Temple", "Detroit")


def titled_store(seed: int):
    """A store of titled passages (each naming a few others, now and then in lower case: not as
    a name), a pool of some of them, and a question that names one title (two, for odd
    seeds)."""
    rng = np.random.default_rng(seed)
    n, d = len(NAMES), 8
    V = rng.standard_normal((n, d)) + 0.8 * rng.standard_normal(d)
    texts = []
    for i, title in enumerate(NAMES):
        others = rng.choice([t for t in NAMES if t != title], int(rng.integers(0, 3)),
                            replace=False)
        bare = title.split(" (")[0]
        said = [o.split(' (')[0] for o in others]
        said = [o.lower() if rng.random() < 0.25 else o for o in said]
        texts.append(f"{bare} " + " ".join(f"met {o}" for o in said)
                     + " " + " ".join(rng.choice(WORDS, 3)))
    q = rng.standard_normal(d)
    pool = sorted(rng.choice(n, int(rng.integers(4, 9)), replace=False).tolist())
    if seed % 2:
        a, b = rng.choice(pool, 2, replace=False)
        text = (f"Did the friends of {NAMES[int(a)].split(' (')[0]} and "
                f"{NAMES[int(b)].split(' (')[0]} live in one city?")
    else:
        text = f"Where did the friend of {NAMES[int(rng.choice(pool))].split(' (')[0]} live?"
    return q, V, texts, pool, text


@pytest.mark.parametrize("seed", range(20))
def test_a_title_with_several_passages_is_followed_once_as_the_reference_says(seed):
    """Passages that share a title (an article split into paragraphs): once one is picked, the
    others give back their bridge raises (``link_once``), and keep them with it off."""
    q, V, texts, pool, text = titled_store(seed)
    titles = [NAMES[i] for i in pool]
    ptexts = [texts[i] for i in pool]
    rng = np.random.default_rng(seed)
    for j in rng.choice(len(pool), size=len(pool) // 3, replace=False):
        titles[j] = titles[int(rng.integers(len(pool)))]  # a second passage of that title
    signals = {"texts": ptexts, "titles": titles, "query_text": text,
               "session_ids": list(range(len(pool)))}
    k = min(6, len(pool))
    score = ref.fused_score(q, V[pool], signals)
    score = [s + t for s, t in zip(score, ref.titled_scores(text, titles))]
    for once in (True, False):
        got = get_selector("centered-fusion", follow=0, link_once=once).select(
            q, V[pool], k, signals=signals)
        want = ref.bridge_order(score, titles, ptexts, k, question=text, once=once)[:k]
        assert got.order.tolist() == want, (seed, once)


@pytest.mark.parametrize("seed", range(40))
def test_titles_bridge_and_the_second_read_match_the_plain_reference(seed):
    from mempursuit_core.follow import Fetched, TitleIndex, TitleLookup, follow_up

    q, V, texts, pool, text = titled_store(seed)
    titles = [NAMES[i] for i in pool]
    ptexts = [texts[i] for i in pool]
    signals = {"texts": ptexts, "titles": titles, "query_text": text,
               "session_ids": list(range(len(pool)))}
    k = min(4, len(pool))
    for follow in (0, 2):
        sig = dict(signals)
        if follow:
            def fetch(names, limit):
                at = [NAMES.index(t) for t in names][:limit]
                return Fetched([NAMES[i] for i in at], V[at],
                               {"texts": [texts[i] for i in at], "titles": [NAMES[i] for i in at],
                                "session_ids": [100 + i for i in at]})
            sig["title_lookup"] = TitleLookup(TitleIndex(lambda: NAMES), fetch, timeout=None)
        sel = get_selector("centered-fusion", follow=follow)
        got = follow_up(sel.select(q, V[pool], k, signals=sig), q, V[pool], k, signals=sig)
        # the reference: fused score (+ titled), bridge greedy, then the second read
        score = ref.fused_score(q, V[pool], signals)
        score = [s + t for s, t in zip(score, ref.titled_scores(text, titles))]
        first = ref.bridge_order(score, titles, ptexts, max(k, 3) if follow else k,
                                 question=text)
        rows, rtitles, rtexts = list(pool), list(titles), list(ptexts)
        if follow:
            more = ref.followed_titles([ptexts[i] for i in first[:3]] + [text], NAMES,
                                       set(titles), follow, pool_texts=ptexts)
            rows += [NAMES.index(t) for t in more]
            rtitles += more
            rtexts += [texts[NAMES.index(t)] for t in more]
            big = {"texts": rtexts, "titles": rtitles, "query_text": text,
                   "session_ids": list(range(len(rows)))}
            score = ref.fused_score(q, V[rows], big)
            score = [s + t for s, t in zip(score, ref.titled_scores(text, rtitles))]
            assert (got.extra.items if got.extra is not None else []) == more
        want = ref.bridge_order(score, rtitles, rtexts, k, question=text)[:k]
        assert got.order.tolist() == want, (seed, follow)
