"""Following what the evidence names: title links (mempursuit_core.links) and the default
policy's ``titled`` channel and ``bridge`` step."""

from __future__ import annotations

import numpy as np
import pytest

from mempursuit_core import get_selector
from mempursuit_core.links import TitleLinks, title_phrase
from mempursuit_core.policies import Bridge, CenteredFusion, _greedy_order


def test_title_phrase_drops_qualifiers_and_titles_that_name_nothing():
    assert title_phrase("Kiss and Tell (1945 film)") == "kiss and tell"
    assert title_phrase("  Steve   Wynn ") == "steve wynn"
    assert title_phrase("handbook.md") == "handbook"
    assert title_phrase("docs/travel_policy-2024.MD".rsplit("/", 1)[1]) == "travel policy 2024"
    assert title_phrase("Spider-Man") == "spider-man"  # not a file name: as written
    assert title_phrase("The Beatles") == "the beatles"
    assert title_phrase("The") == "" and title_phrase("") == "" and title_phrase(None) == ""
    assert title_phrase(3) == ""


TITLES = ["Big Stone Gap (film)", "Adriana Trigiani", "Stone", "The", None, "Greenwich Village"]
TEXTS = [
    "Big Stone Gap is a 2014 comedy film directed by Adriana Trigiani.",
    "Adriana Trigiani is an author and film director based in Greenwich Village.",
    "A stone is a piece of rock; Stonehenge is not one.",
    "The the the.",
    "A memory with no title names Big Stone Gap too.",
    "Greenwich Village is a neighborhood of Manhattan.",
]


def test_named_matches_whole_words_in_order():
    links = TitleLinks(TITLES, TEXTS)
    assert links.named("Who directed Big Stone Gap?").tolist() == [0, 2]
    assert links.named("a STONE-cold Adriana Trigiani fan").tolist() == [1, 2]
    assert links.named("Stonehenge and Trigiani Adriana").tolist() == []  # parts, wrong order
    assert links.named("").tolist() == []


def test_links_follow_what_a_text_names_but_not_its_own_name():
    links = TitleLinks(TITLES, TEXTS)
    # the film's passage names the director and, inside its own title, "Stone": no link
    assert links.links(0).tolist() == [1]
    assert links.links(1).tolist() == [5]
    assert links.links(4).tolist() == [0, 2]  # an untitled memory still names others
    assert links.links(3).tolist() == []


def test_naming_finds_the_memories_that_name_a_title():
    links = TitleLinks(TITLES, TEXTS)
    assert links.naming(1).tolist() == [0]  # the film names its director
    assert links.naming(5).tolist() == [1]
    assert links.naming(0).tolist() == [4]  # the untitled memory names the film
    assert links.naming(4).tolist() == [] and links.naming(3).tolist() == []
    assert links.distinct(np.array([0, 2, 2])) == 2


def test_no_usable_title_is_falsy():
    assert not TitleLinks([None, "The", ""], ["a", "b", "c"])
    assert TitleLinks(["x", "Paris"])


def _two_hop_pool(d=32, seed=0):
    """A question about a song (memory 0) whose answer is in its performer's passage
    (memory 1), which the question does not match; eight distractors match it better."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d)
    q /= np.linalg.norm(q)
    M = np.empty((10, d))
    for i, sim in enumerate([0.9, 0.05] + [0.6 - 0.02 * j for j in range(8)]):
        noise = rng.standard_normal(d)
        noise -= (noise @ q) * q
        noise /= np.linalg.norm(noise)
        M[i] = sim * q + np.sqrt(1 - sim ** 2) * noise
    titles = ["Blue Song", "Ann Lee"] + [f"Other song {j}" for j in range(8)]
    texts = ["Blue Song is a single performed by Ann Lee.", "Ann Lee died in Leeds."] + [
        f"Other song {j} is a song about blue skies." for j in range(8)]
    signals = {"titles": titles, "texts": texts, "query_text": "Where did the performer of "
               "Blue Song die?"}
    return q, M, signals


def test_the_bridge_brings_in_the_second_hop():
    q, M, signals = _two_hop_pool()
    sel = get_selector("centered-fusion")
    got = sel.select(q, M, 3, signals=signals)
    assert got.order[0] == 0 and 1 in got.order[:2]
    assert got.info["reorder"]["bridge"] == 8.0 and got.info["channels"]["titled"] == 1.0
    off = get_selector("centered-fusion", bridge=0).select(q, M, 3, signals=signals)
    assert 1 not in off.order and "bridge" not in off.info["reorder"]


def test_without_titles_the_default_is_unchanged(rng):
    q, M, signals = _two_hop_pool()
    quiet = {k: v for k, v in signals.items() if k != "titles"}
    for s in (quiet, {**signals, "titles": [None] * 10}):
        new = CenteredFusion().select(q, M, 5, signals=s)
        old = CenteredFusion(bridge=0, titled=0).select(q, M, 5, signals=s)
        assert new.order.tolist() == old.order.tolist()
        assert "bridge" not in new.info["reorder"] and "titled" not in new.info["channels"]


def test_titled_channel_raises_what_the_question_names():
    q, M, signals = _two_hop_pool()
    signals = {**signals, "query_text": "Did Ann Lee sing?"}
    scores = CenteredFusion(bridge=0).scores(q, M, signals=signals)
    base = CenteredFusion(bridge=0, titled=0).scores(q, M, signals=signals)
    assert scores[1] - base[1] == pytest.approx(1.0)
    assert np.allclose(np.delete(scores, 1), np.delete(base, 1))


def test_bridge_gain_is_the_stated_greedy():
    score = np.array([3.0, 0.0, 2.5, -1.0])
    links = TitleLinks(["Alpha", "Beta", "Gamma", "Delta"],
                       ["Alpha names Beta and Delta", "Beta", "Gamma names Alpha", "Delta"])
    order = np.argsort(-score, kind="stable")
    got = _greedy_order(score, order, 4, [Bridge(links, 3.0)])
    # after A: B and D gain 3 / sqrt(2) forward, C gains 1.5 / sqrt(1) backward (it names A)
    # -> C 4.0, B 2.12, D 1.12
    assert got.tolist() == [0, 2, 1, 3]


def test_bad_titles_are_one_clear_line():
    q, M, signals = _two_hop_pool()
    with pytest.raises(ValueError, match="'titles' has 3 entries but the pool has P=10"):
        CenteredFusion().select(q, M, 3, signals={**signals, "titles": ["a", "b", "c"]})
    with pytest.raises(ValueError, match="bridge must be finite and >= 0"):
        CenteredFusion(bridge=-1)


def test_a_composed_text_names_a_decomposed_title_and_the_other_way_round():
    import unicodedata

    composed = "Café Noir"
    decomposed = unicodedata.normalize("NFD", composed)
    for title, text in ((decomposed, composed), (composed, decomposed)):
        links = TitleLinks([title, "Other"], [f"We met at the {text}.", f"{text} closed."])
        assert links.named(f"Dinner at {text} tonight").tolist() == [0]
        assert links.naming(0).tolist() == [1]


def _titled_pool(rng, n, names):
    """``n`` passages titled from ``names`` (some repeated, some None), each naming a few."""
    titles = [names[i] if rng.random() > 0.1 else None
              for i in rng.integers(0, len(names), n)]
    texts = [f"{t or 'It'} is known for " + ", ".join(
             names[j] if rng.random() > 0.2 else names[j].lower()
             for j in rng.integers(0, len(names), rng.integers(0, 4))) + "."
             for t in titles]
    return titles, texts


_NAMES = ["Aretha Franklin", "Detroit", "Café Noir", "Leaving You (song)", "The Who",
          "Kiss and Tell (1945 film)", "Kiss and Tell", "Father", "travel_policy.md",
          "Zoë Saldaña", "New York City", "York", "Rank Organisation"]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("cased", [True, False])
def test_extended_links_equal_the_links_of_the_longer_pool(seed, cased):
    rng = np.random.default_rng(seed)
    titles, texts = _titled_pool(rng, 30, _NAMES)
    P = int(rng.integers(0, 30))
    shorter = TitleLinks(titles[:P], texts[:P], cased=cased)
    for i in range(0, P, 3):  # what the shorter pool has read already is carried over
        shorter.naming(i), shorter.links(i)
    longer, whole = shorter.extended(titles, texts), TitleLinks(titles, texts, cased=cased)
    assert longer.phrases == whole.phrases and bool(longer) == bool(whole)
    for i in range(30):
        assert longer.links(i).tolist() == whole.links(i).tolist()
        assert longer.naming(i).tolist() == whole.naming(i).tolist()
        assert longer.same_title(i).tolist() == whole.same_title(i).tolist()
    for text in texts[:5] + ["Where did Aretha Franklin die?"]:
        assert longer.named(text).tolist() == whole.named(text).tolist()
    assert len(shorter.phrases) == P  # the shorter pool's links are left as they were
