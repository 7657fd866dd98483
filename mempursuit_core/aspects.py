"""The things a question sets side by side: "which first, A or B?", "between A and B", "how many
days after A did B?", "the order of A, B and C". Each is an aspect the picked memories must cover
on their own: a memory about A does not explain B, however close both are to the whole question.
"""

from __future__ import annotations

import re

from .lexical import tokenize

__all__ = ["query_aspects", "aspect_terms", "asks_for_several", "named_speakers",
           "about_asker", "ASKER_ROLES"]

_OR = re.compile(r"\bor\b", re.I)
_BETWEEN = re.compile(r"\bbetween\b(.+?)\band\b(.+)", re.I)
# inside a sentence only: a leading "When did ..." asks for a date, it joins nothing
_CONNECT = re.compile(r"(?<=\S)\s+(?:before|after|since|when|while)\s+", re.I)
# "how many days after A did B", "how long had I been A when B": a span between two events
_DURATION = re.compile(r"\s*how\s+(?:many|long|old)\b", re.I)
_CHOICES = re.compile(r"\s*,\s*(?:(?:or|and)\s+)?|\s+or\s+", re.I)
_LIST = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+(?=the\b)", re.I)
# the question's frame, not an aspect: "how many days had passed", "which happened first"
FRAME_WORDS = frozenset("""
many much long day days week weeks month months year years ago passed pass take took taken
first last earliest latest earlier later order happened happen event events time times
total start starting finish finished which who what thing things one ones
""".split())


def query_aspects(text: str) -> list[str]:
    """The parts of a question that name different things, or ``[]`` when it names one.

    >>> query_aspects("Which book did I finish first, 'The Hate U Give' or 'The Nightingale'?")
    ["'The Hate U Give'", "'The Nightingale'"]
    >>> query_aspects("How many days passed between the MoMA visit and the Met exhibit?")
    ['the MoMA visit', 'the Met exhibit']
    >>> query_aspects("When did Caroline go to the support group?")
    []

    Parts that hold only frame words ("how many days had passed") are dropped; what remains
    counts only when two or more parts have words of their own (:func:`aspect_terms`).
    """
    return _aspects(text)[0]


def _aspects(text: str, stem: bool = True) -> tuple[list[str], list[list[str]]]:
    """:func:`query_aspects` and the :func:`aspect_terms` of its parts (both empty for a
    question that names one thing)."""
    t = re.sub(r"\s+", " ", str(text)).strip().rstrip("?.! ")
    m = _BETWEEN.search(t)
    if m:
        parts = [m.group(1), m.group(2)]
    elif o := _OR.search(t):
        head = max(t.rfind(",", 0, o.start()), t.rfind(":", 0, o.start()))
        parts = _CHOICES.split(t[head + 1:] if head >= 0 else t)
    elif ":" in t:
        parts = _LIST.split(t[t.index(":") + 1:])
    elif _DURATION.match(t):
        parts = _CONNECT.split(t)
    else:
        return [], []
    parts = [p for p in (p.strip(" ,;:") for p in parts) if p]
    terms = aspect_terms(parts, stem)
    return (parts, terms) if len(terms) >= 2 else ([], [])


def aspect_terms(parts: list[str], stem: bool = True) -> list[list[str]]:
    """Each part's own content words, as written: no stop or frame words and none whose stem
    every part shares; parts left with no word are dropped."""
    words = [[(w, tokenize(w, stem)[0]) for w in tokenize(p) if w not in FRAME_WORDS]
             for p in parts]
    shared = set.intersection(*({s for _, s in ws} for ws in words)) if words else set()
    kept = [[w for w, s in ws if s not in shared] for ws in words]
    return [list(dict.fromkeys(ws)) for ws in kept if ws]


_SEVERAL = re.compile(r"\b(?:how many|how much|in what order|the order|list|all the|total|"
                      r"different|what (?:are|were) the \w+s|what \w+s)\b", re.I)


def asks_for_several(text: str) -> bool:
    """Whether a question asks for a count, a total, an order or a list ("how many", "in what
    order", "what books"): its evidence is usually spread over several sessions."""
    return bool(_SEVERAL.search(str(text)))


ASKER_ROLES = frozenset({"user", "human"})
_FIRST = re.compile(r"\b(?:i|me|my|mine|myself|i'm|i've|i'd|i'll)\b", re.I)
# a request to the assistant ("can you remind me") leaves the question about the asker
_REQUEST = re.compile(r"\b(?:can|could|would|will)\s+you\b|\bdo\s+you\s+(?:think|know|remember)\b|"
                      r"\bthank\s+you\b", re.I)
_SECOND = re.compile(r"\b(?:you|your|yours|yourself|you've|you'd)\b", re.I)


def named_speakers(text: str, speakers) -> frozenset:
    """The speakers a question names ("What did Caroline research?"), or an empty set when it
    names none or every one; the roles ``user`` and ``human`` are not names.

    >>> sorted(named_speakers("What did Caroline research?", ["Caroline", "Melanie"]))
    ['Caroline']
    >>> sorted(named_speakers("When did Caroline meet Melanie?", ["Caroline", "Melanie"]))
    []
    """
    names = {s for s in speakers if isinstance(s, str) and s.strip()}
    named = frozenset(s for s in names if s.lower() not in ASKER_ROLES
                      and re.search(rf"\b{re.escape(s)}\b", text))
    return named if named != names else frozenset()


def about_asker(text: str) -> bool:
    """Whether a question asks about the asker's own life: in the first person and not about
    what "you" (the assistant) said; a request such as "can you remind me" does not count.

    >>> about_asker("Can you remind me where I parked?")
    True
    >>> about_asker("What was the hostel you recommended to me?")
    False
    """
    return bool(_FIRST.search(text)) and not _SECOND.search(_REQUEST.sub(" ", text))
