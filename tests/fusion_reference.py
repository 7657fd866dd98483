"""A slow, plain reference of ``centered-fusion``'s fused score and its session spread: loops
over memories, written from the definitions in the policy's docstring, without the fast
path's algebra (the centroid is subtracted, BM25 is counted term by term). The question
readers (dates, speakers, aspects) are the library's own: this checks the arithmetic.

The oracle for :class:`mempursuit_core.policies.CenteredFusion` at ``fusion="zscore"``,
``gamma=0``, ``adjacent=0``, ``aspects=0`` (``tests/test_fusion.py``).
"""

from __future__ import annotations

import math

import numpy as np

from mempursuit_core.aspects import ASKER_ROLES, about_asker, asks_for_several, named_speakers
from mempursuit_core.dates import query_dates, to_date
from mempursuit_core.lexical import tokenize


def zscore(xs):
    n = len(xs)
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / n)
    return [0.0] * n if not std > 0 else [(x - mean) / std for x in xs]


def centred_relevance(q, M):
    """cos(u_i - mu, q - mu) with u_i the unit rows, mu their mean; 0 at the centroid."""
    units = [np.asarray(r, dtype=np.float64) / np.linalg.norm(r) for r in M]
    mu = sum(units) / len(units)
    b = np.asarray(q, dtype=np.float64) / np.linalg.norm(q) - mu
    out = []
    for u in units:
        a = u - mu
        if a @ a <= 1e-12 or b @ b <= 1e-12:
            out.append(0.0)
        else:
            out.append(float(a @ b) / math.sqrt(float(a @ a) * float(b @ b)))
    return out


def bm25(texts, query, k1=1.2, b=0.75, stem=True):
    docs = [tokenize(t, stem) for t in texts]
    N = len(docs)
    avgdl = sum(len(d) for d in docs) / N or 1.0
    scores = [0.0] * N
    for term in dict.fromkeys(tokenize(query, stem)):
        df = sum(term in d for d in docs)
        idf = math.log(1 + (N - df + 0.5) / (df + 0.5))
        for i, d in enumerate(docs):
            tf = d.count(term)
            scores[i] += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))
    return scores


def date_match(text, stamps, window=7.0):
    spans = query_dates(text)
    if not spans:
        return None
    out = []
    for t in stamps:
        day = to_date(t)
        if day is None:
            out.append(0.0)
            continue
        gap = min(max(a.toordinal() - day.toordinal(), day.toordinal() - z.toordinal(), 0)
                  for a, z in spans)
        out.append(max(0.0, 1.0 - gap / window))
    return out if any(out) else None


def fused_score(q, M, signals, *, weight=0.7, dates=3.0, named=1.0, speaker=2.0):
    """The fused score of every memory before reordering (the default options)."""
    P = len(M)
    score = zscore(centred_relevance(q, M))
    text = signals.get("query_text")
    sources = []
    lexical = signals.get("lexical")
    if lexical is not None and max(lexical) > min(lexical):
        sources.append(zscore(list(lexical)))
    if text is not None and "texts" in signals:
        pool = bm25(signals["texts"], text)
        if max(pool) > min(pool):
            sources.append(zscore(pool))
    if sources:
        for i in range(P):
            score[i] += weight * sum(s[i] for s in sources) / len(sources)
    if text is not None and "timestamps" in signals:
        match = date_match(text, signals["timestamps"])
        if match is not None:
            for i in range(P):
                score[i] += dates * match[i]
    if text is not None and "speakers" in signals:
        who = signals["speakers"]
        present = {s for s in who if isinstance(s, str)}
        targets, w = named_speakers(text, present), named
        if not targets and about_asker(text):
            targets, w = {s for s in present if s.lower() in ASKER_ROLES}, speaker
        for i in range(P):
            if who[i] in targets:
                score[i] += w
    return score


def spread_order(score, sessions, text, k, spread=0.3, gather=0.8):
    """The greedy picks: once a session has a pick, its other memories count ``spread`` less
    (``gather`` for a question that asks for several things); ties to the lowest position."""
    if text is not None and asks_for_several(text):
        spread = gather
    picked_sessions, order = set(), []
    for _ in range(min(k, len(score))):
        best, best_value = None, -math.inf
        for i, s in enumerate(score):
            if i in order:
                continue
            value = s - (spread if sessions[i] in picked_sessions else 0.0)
            if value > best_value:
                best, best_value = i, value
        order.append(best)
        picked_sessions.add(sessions[best])
    return order


# ---------------------------------------------------------------------------------- documents
# Titles: ``titled`` (the question names a memory's title), ``bridge`` (a pick's text names a
# memory's title, or a memory's text names the pick's) and the second read (``follow``). The
# title's phrase is the library's (``title_phrase``); whether a text names it is written here.


def names(text, phrase, caps=()):
    """Whether ``phrase`` occurs in ``text`` (lower-cased) with no letter or digit either side,
    and, where ``caps[w]``, the occurrence's word ``w`` starts with a capital in ``text``."""
    if not phrase:
        return False
    lowered = text.lower()
    for at in range(len(lowered) - len(phrase) + 1):
        if (lowered[at:at + len(phrase)] == phrase
                and (at == 0 or not lowered[at - 1].isalnum())
                and (at + len(phrase) == len(lowered) or not lowered[at + len(phrase)].isalnum())):
            words = text[at:at + len(phrase)].split(" ")
            if (not any(caps) or len(lowered) != len(text)
                    or all(w[:1].isupper() for w, c in zip(words, caps) if c)):
                return True
    return False


def caps_of(title):
    """For each word of a title (without a trailing parenthesised qualifier), whether it is
    capitalised; nothing for a file name (named in any case)."""
    import re

    title = title.strip()
    if re.search(r"\.(?:md|txt|rst|html?|pdf|docx?|json)$", title, re.I):
        return ()
    bare = re.sub(r"\s*\([^()]*\)\s*$", "", title)
    return tuple(w[:1].isupper() for w in bare.replace("_", " ").split())


def named(text, title):
    """Whether ``text`` names ``title`` as a name (the default's ``cased``)."""
    from mempursuit_core.links import title_phrase

    return names(text, title_phrase(title), caps_of(title))


def titled_scores(text, titles):
    """1 for each memory whose title the question names, else 0."""
    return [1.0 if named(text, t) else 0.0 for t in titles]


def bridge_order(score, titles, texts, k, bridge=8.0, question=None, once=True):
    """The greedy picks with every memory its own session: after each pick, the memories not
    yet picked whose title its text names (not titled as the pick, nor by a part of its title)
    gain ``bridge / sqrt(n)``, n their distinct titles; those whose text names the pick's title
    (another title) gain half as much over their own n. When the ``question`` names two or more
    of the pool's titles, the gains wait until each of those titles has a pick (or twice as many
    picks are made), then all come at once. With ``once``, a pick's title is followed: the
    other memories of exactly that title lose what they gained and gain nothing more. Then the
    rest by score."""
    from mempursuit_core.links import title_phrase

    phrases = [title_phrase(t) for t in titles]
    caps = [caps_of(t) for t in titles]
    groups = {}
    if question is not None:
        for j, t in enumerate(titles):
            if phrases[j] and named(question, t):
                groups.setdefault(phrases[j], set()).add(j)
    groups = {p: g for p, g in groups.items()  # not a title named only inside a longer one
              if not any(p != o and names(o, p) for o in groups)}
    pending = list(groups.values()) if len(groups) >= 2 else []
    patience = 2 * len(pending)
    held = []
    live = list(score)
    order = []
    gained = [0.0] * len(score)
    followed = set()
    for _ in range(min(k, len(score))):
        best = max((i for i in range(len(live)) if i not in order), key=lambda i: (live[i], -i))
        order.append(best)
        own = phrases[best]
        if once and own:
            followed.add(titles[best])
            for j in range(len(live)):
                if titles[j] == titles[best]:
                    live[j] -= gained[j]
                    gained[j] = 0.0
        ahead = [j for j in range(len(live)) if j not in order and phrases[j]
                 and names(texts[best], phrases[j], caps[j]) and not names(own, phrases[j])]
        back = [j for j in range(len(live)) if j not in order and own and phrases[j] != own
                and names(texts[j], own, caps[best])]
        for found, gain in ((ahead, bridge), (back, bridge / 2)):
            n = len({phrases[j] for j in found})
            held += [(j, gain / math.sqrt(n)) for j in found]
        if pending:
            pending = [g for g in pending if best not in g]
            patience -= 1
            if pending and patience > 0:
                continue
            pending = []
        for j, gain in held:
            if j not in order and titles[j] not in followed:
                live[j] += gain
                gained[j] += gain
        held = []
    rest = sorted((i for i in range(len(score)) if i not in order), key=lambda i: (-score[i], i))
    return order + rest


def followed_titles(texts, store_titles, exclude, limit, pool_texts=(), hub=5):
    """The second read's titles: the store's titles each text names (longer phrases first),
    taken one text at a time in turn, without those in ``exclude`` and those that ``hub`` or
    more of ``pool_texts`` name (in any case)."""
    from mempursuit_core.links import title_phrase

    def hub_title(t):
        return sum(names(x, title_phrase(t)) for x in pool_texts) >= hub

    queues = []
    for text in texts:
        found = [t for t in dict.fromkeys(store_titles)
                 if named(text, t) and t not in exclude and not hub_title(t)]
        queues.append(sorted(found, key=lambda t: -len(title_phrase(t))))
    out = []
    for turn in range(max((len(q) for q in queues), default=0)):
        for queue in queues:
            if turn < len(queue) and queue[turn] not in out:
                out.append(queue[turn])
    return out[:limit]
