"""Whose words a question asks about, and centered-fusion's ``speaker`` and ``named`` options."""

import numpy as np
import pytest

from mempursuit_core import get_selector
from mempursuit_core.aspects import about_asker, named_speakers


@pytest.mark.parametrize("question", [
    "How many bikes do I own?",
    "What did I cook for my friend a couple of days ago?",
    "Can you remind me what I ordered at the deli?",  # a request: still about the asker
    "Could you tell me how long I've been working here?",
])
def test_questions_about_the_asker(question):
    assert about_asker(question)


@pytest.mark.parametrize("question", [
    "What was the name of the hostel you recommended to me?",
    "Can you remind me of the two companies you mentioned?",  # what "you" said
    "When did Caroline go to the support group?",  # not in the first person
    "",
])
def test_questions_not_about_the_asker(question):
    assert not about_asker(question)


def test_named_speakers():
    people = ["Caroline", "Melanie"]
    assert named_speakers("What did Caroline research?", people) == {"Caroline"}
    assert named_speakers("When did Caroline and Melanie meet?", people) == set()  # both
    assert named_speakers("What did Carolines research?", people) == set()  # whole words only
    # roles are not names: "the user" names no one
    assert named_speakers("What did the user buy?", ["user", "assistant"]) == set()
    assert named_speakers("What did Caroline say?", [None, "Caroline", 3, "Melanie"]) == {
        "Caroline"}


def _chat_pool(question):
    """Ten assistant turns closest to the query, then the user's own turn, then filler."""
    rng = np.random.default_rng(0)
    d = 24
    topic = np.eye(d)[0]
    M = np.stack([topic + 0.05 * rng.standard_normal(d) for _ in range(10)]
                 + [topic + 0.6 * np.eye(d)[1]]
                 + [rng.standard_normal(d) for _ in range(9)])
    speakers = ["assistant"] * 10 + ["user"] + ["user", "assistant"] * 4 + ["user"]
    signals = {"texts": [f"turn {i}" for i in range(20)], "query_text": question,
               "speakers": speakers}
    return topic, M, signals


def _order(question_signals, q, M, **options):
    return list(get_selector("centered-fusion", **options).select(q, M, 5,
                                                                  signals=question_signals).order)


def test_speaker_lifts_the_askers_own_turn():
    q, M, signals = _chat_pool("Which bike do I ride to work?")
    off = _order(signals, q, M, speaker=0, named=0)
    assert 10 not in off and _order(signals, q, M)[0] == 10  # the default: speaker=2
    # a question about what "you" said, or no speakers at all: no change
    you = dict(signals, query_text="Which bike did you recommend?")
    assert _order(you, q, M) == _order(you, q, M, speaker=0, named=0)
    bare = {k: v for k, v in signals.items() if k != "speakers"}
    assert _order(bare, q, M) == off


def test_named_lifts_the_named_speakers_turns_and_takes_precedence():
    q, M, signals = _chat_pool("What bike does Ann ride?")
    signals["speakers"] = ["Bob"] * 10 + ["Ann"] + ["Ann", "Bob"] * 4 + ["Ann"]
    assert 10 not in _order(signals, q, M, named=0) and _order(signals, q, M)[0] == 10
    # a first-person question that names a speaker: the name decides, and with named=0 nothing
    signals["query_text"] = "Which bike did I lend to Ann?"
    signals["speakers"] = ["user"] * 10 + ["Ann"] + ["Ann", "user"] * 4 + ["Ann"]
    assert _order(signals, q, M, named=0) == _order(signals, q, M, speaker=0, named=0)


@pytest.mark.parametrize("options, match", [
    ({"speaker": -1}, "speaker"), ({"named": float("nan")}, "named"),
])
def test_bad_speaker_weights(options, match):
    with pytest.raises(ValueError, match=match):
        get_selector("centered-fusion", **options)


def test_unreadable_speakers_are_nobody():
    q, M, signals = _chat_pool("Which bike do I ride to work?")
    signals["speakers"] = [["x"], None, float("nan")] + signals["speakers"][3:]
    assert _order(signals, q, M)[0] == 10  # the user's own turn is still raised


def test_speakers_of_the_wrong_length():
    q, M, signals = _chat_pool("Which bike do I ride?")
    signals["speakers"] = signals["speakers"][:-1]
    with pytest.raises(ValueError, match="'speakers' has 19 entries but the pool has P=20"):
        get_selector("centered-fusion", speaker=1).select(q, M, 5, signals=signals)


def test_plain_store_hands_over_speakers():
    from mempursuit_eval.base import MemoryUnit
    from mempursuit_eval.store import PlainStore

    class Embed:
        def encode(self, texts):
            return np.array([[1.0, len(t) % 3, 1.0] for t in texts], dtype=np.float32)

    units = [MemoryUnit(uid=f"u{i}", text=f"turn number {i}", group="g", session_id="s",
                        speaker=("user", "assistant")[i % 2]) for i in range(4)]
    store = PlainStore()
    store.build(units, embedder=Embed())
    pool = store.pool("g", "turn", 4)
    by_uid = {u.uid: u.speaker for u in units}
    assert list(pool.signals["speakers"]) == [by_uid[u] for u in pool.items]
