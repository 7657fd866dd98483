"""Which memories of a pool a text names, by their titles.

Documents carry a title or a source name (a Wikipedia article's title, a file name, an entity's
name), and a passage about one thing names others by theirs: the song's passage names its
performer, whose own passage never matches a question about the song. :class:`TitleLinks`
finds, for any text, the pool's memories whose title it names, and for any memory, the pool's
memories that name it, so that a read policy can follow what its evidence so far points to
(``centered-fusion``'s ``titled`` and ``bridge``).

A text names a title when the title as written (lower-cased, without a trailing parenthesised
qualifier or file suffix: "Kiss and Tell (1945 film)" -> "kiss and tell", "travel_policy.md" ->
"travel policy") occurs in the
lower-cased text between word boundaries. A title of stop words only ("The", "It") names
nothing. Titles and texts are compared in Unicode normal form C.
"""

from __future__ import annotations

import functools
import operator
import re
import unicodedata
from itertools import compress, repeat
from typing import Any, Callable, Sequence

import numpy as np

from .lexical import STOP_WORDS, _term_counts, tokenize
from .signals import derived

__all__ = ["PoolTexts", "TitleLinks", "nfc", "pool_texts", "title_phrase"]

_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$|\.(?:md|txt|rst|html?|pdf|docx?|json)$", re.I)
_WORD = re.compile(r"[^\W_]+")
_FILE = re.compile(r"\.(?:md|txt|rst|html?|pdf|docx?|json)$", re.I)


def nfc(text: str) -> str:
    """``text`` in Unicode normal form C: titles and texts are compared in this one form, so
    a text naming "Café" (composed) names a title stored decomposed."""
    return text if text.isascii() else _nfc(text)


@functools.lru_cache(maxsize=1 << 16)
def _nfc(text: str) -> str:  # memories recur across a store's reads: each is checked once
    return text if unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


@functools.lru_cache(maxsize=1 << 16)
def _cased(title: str) -> tuple[bool, ...]:
    """For each word of the title's phrase, whether the title writes it capitalised (a text
    that names the title as a name writes it so too: "Father" is not named by "his father")."""
    title = nfc(title)
    bare = _QUALIFIER.sub("", title.strip())
    if _FILE.search(title.strip()):
        return ()  # a file name is named in any case
    return tuple(w[:1].isupper() for w in bare.replace("_", " ").split())


def _occurs_cased(phrase: str, caps: tuple[bool, ...], lowered: str, text: str) -> bool:
    """:func:`_occurs` where each word the title capitalises is capitalised in ``text`` too."""
    if not any(caps) or len(lowered) != len(text):
        return _occurs(phrase, lowered)
    at = lowered.find(phrase)
    while at >= 0:
        end = at + len(phrase)
        if ((at == 0 or not lowered[at - 1].isalnum())
                and (end == len(lowered) or not lowered[end].isalnum())):
            words = text[at:end].split(" ")
            if len(words) == len(caps) and all(w[:1].isupper() for w, c in zip(words, caps)
                                               if c):
                return True
        at = lowered.find(phrase, at + 1)
    return False


@functools.lru_cache(maxsize=1 << 16)
def _phrase(title: str) -> tuple[str, str]:
    title = nfc(title)
    bare = _QUALIFIER.sub("", title.strip())
    if _FILE.search(title.strip()):  # a file name: "travel_policy.md" is named "travel policy"
        bare = re.sub(r"[_\-]+", " ", bare)
    phrase = " ".join(bare.replace("_", " ").lower().split())
    words = _WORD.findall(phrase)
    if all(w in STOP_WORDS for w in words):
        return "", ""
    # the longest word that is not a stop word: a text without it cannot name the title
    rare = tokenize(max((w for w in words if w not in STOP_WORDS), key=len), stem=True)
    return phrase, rare[0] if rare else ""


@functools.lru_cache(maxsize=1 << 16)
def _title(title: str) -> tuple[str, str, tuple[bool, ...]]:
    """A title's phrase, its rarest word and its capitals (:func:`_phrase`, :func:`_cased`)."""
    return (*_phrase(title), _cased(title))


_NO_TITLE: tuple[str, str, tuple[bool, ...]] = ("", "", ())


@functools.lru_cache(maxsize=1 << 14)
def _lowered(text: str) -> str:
    return text.lower()


def title_phrase(title: object) -> str:
    """What a text must contain to name ``title``: the title lower-cased, without a trailing
    parenthesised qualifier or a file suffix (a file name's ``_`` and ``-`` read as spaces),
    its spaces single; ``""`` for a missing title or one of stop words only.

    >>> title_phrase("Kiss and Tell (1945 film)"), title_phrase("travel-policy_v2.md")
    ('kiss and tell', 'travel policy v2')
    >>> title_phrase("The Beatles"), title_phrase("The Who")
    ('the beatles', '')
    """
    return _phrase(title)[0] if isinstance(title, str) else ""


def _occurs(phrase: str, text: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` (both lower-cased) between word boundaries."""
    at = text.find(phrase)
    while at >= 0:
        end = at + len(phrase)
        if ((at == 0 or not text[at - 1].isalnum())
                and (end == len(text) or not text[end].isalnum())):
            return True
        at = text.find(phrase, at + 1)
    return False


class PoolTexts:
    """A pool's texts as title links read them: each in NFC, lower-cased and as its stemmed
    words, each made once (:func:`pool_texts` keeps one per pool).

    Parameters
    ----------
    texts : sequence of str, length P
    """

    def __init__(self, texts: Sequence[object]):
        self._texts = texts
        self._lowered: dict[int, str] = {}
        self._counts: list | None = None  # the texts' stemmed term counts, as BM25 keeps them
        self._holders: dict[str, tuple[int, ...]] = {}
        self._shorter: tuple[PoolTexts, int] | None = None

    def __len__(self) -> int:
        return len(self._texts)

    def text(self, j: int) -> str:
        """Text ``j`` in NFC."""
        return nfc(str(self._texts[j]))

    def lowered(self, j: int) -> str:
        """Text ``j`` in NFC, lower-cased."""
        if j not in self._lowered:
            self._lowered[j] = _lowered(self.text(j))
        return self._lowered[j]

    def holding(self, word: str) -> tuple[int, ...]:
        """The texts whose stemmed words include ``word``, in order (kept per word)."""
        found = self._holders.get(word)
        if found is None:
            if self._counts is None:
                self._counts = _stemmed(self._texts)
            shorter, P = self._shorter or (None, 0)
            if shorter is not None and word in shorter._holders:  # only the texts added
                found = shorter._holders[word] + tuple(j for j in range(P, len(self._counts))
                                                       if word in self._counts[j])
            else:
                found = tuple(compress(range(len(self._counts)),
                                       map(operator.contains, self._counts, repeat(word))))
            self._holders[word] = found
        return found

    def extended(self, texts: Sequence[object]) -> "PoolTexts":
        """The texts of a pool that is this one followed by more: ``texts`` the longer pool's,
        whose first ``P`` are these (what was read of them is kept)."""
        P = len(self._texts)
        out = PoolTexts(texts)
        out._lowered = self._lowered  # the same texts at the same places: shared
        if self._counts is not None:
            out._counts = self._counts + _stemmed(texts[P:])
        out._shorter = (self, P)
        return out


def _stemmed(texts: Sequence[object]) -> list[dict[str, int]]:
    """Each text's stemmed term counts, as the pool's BM25 keeps them (cached per text)."""
    return [_term_counts(nfc(str(t)), True)[0] for t in texts]


def pool_texts(signals: Any, texts: Sequence[object]) -> PoolTexts:
    """The pool's :class:`PoolTexts`, made once per pool's signals (the second read's pool
    extends the first's; :func:`~mempursuit_core.signals.derived`)."""
    return derived(signals, "pool texts", lambda: PoolTexts(texts),
                   lambda shorter, P: shorter.extended(texts))


class TitleLinks:
    """The pool's titles and texts, indexed to find which memories name which.

    Parameters
    ----------
    titles : sequence of str or None, length P
        Each candidate's title (None: the candidate has none, and nothing links to it).
    texts : sequence of str, length P, or PoolTexts, optional
        Each candidate's text (without them, only :meth:`named` works).
    cased : bool
        A text names a title only where it capitalises the words the title capitalises (a
        title is a name: "Father" is not named by "his father"); False: in any case.
    """

    def __init__(self, titles: Sequence[object],
                 texts: Sequence[object] | PoolTexts | None = None, *, cased: bool = False):
        self.phrases: list[str] = []
        self._caps: list[tuple[bool, ...]] = []
        self._rare: list[str] = []
        self._by_rare: dict[str, list[int]] = {}  # a title's rarest word -> the candidates
        self._add(titles)
        self._titles = titles
        self._same: dict[str, list[int]] | None = None  # a title as written -> its candidates
        self.cased = cased
        self.texts = (texts if texts is None or isinstance(texts, PoolTexts)
                      else PoolTexts(texts))
        self._found: dict[tuple[str, int], np.ndarray] = {}  # links() and naming() so far
        self._shorter: tuple[TitleLinks, int] | None = None  # (links, P) this one extends

    def _add(self, titles: Sequence[object]) -> None:
        start = len(self.phrases)
        found = [_title(t) if isinstance(t, str) else _NO_TITLE for t in titles]
        self.phrases += [f[0] for f in found]
        self._rare += [f[1] for f in found]
        self._caps += [f[2] for f in found]
        for j, (phrase, rare, _) in enumerate(found, start):
            if rare:  # a title with a rarest word has a phrase
                self._by_rare.setdefault(rare, []).append(j)

    def extended(self, titles: Sequence[object],
                 texts: Sequence[object] | PoolTexts | None = None) -> "TitleLinks":
        """The links of a pool that is this one followed by more candidates: ``titles`` (and
        ``texts``) the longer pool's, whose first ``P`` are this pool's. Equal to
        ``TitleLinks(titles, texts, cased=self.cased)``; what this pool has read of its
        titles and texts is not read again.
        """
        P = len(self.phrases)
        if P == 0 or (texts is None) != (self.texts is None):
            return TitleLinks(titles, texts, cased=self.cased)
        if texts is not None and not isinstance(texts, PoolTexts):
            texts = self.texts.extended(texts)
        # the first P candidates are asked of this pool's links, the others searched one by one
        out = TitleLinks((), texts, cased=self.cased)
        out.phrases, out._caps, out._rare = list(self.phrases), list(self._caps), list(self._rare)
        out._add(titles[P:])  # its _by_rare holds only these: the first P are asked above
        out._titles = titles
        out._shorter = (self, P)
        return out

    def __bool__(self) -> bool:
        return any(self.phrases)

    def _names(self, j: int, lowered: str, text: str, cased: bool | None = None) -> bool:
        """Whether the text (``lowered``, and as written) names candidate ``j``'s title."""
        if not (self.cased if cased is None else cased):
            return _occurs(self.phrases[j], lowered)
        return _occurs_cased(self.phrases[j], self._caps[j], lowered, text)

    def named(self, text: str, cased: bool | None = None) -> np.ndarray:
        """The candidates whose title ``text`` names (``cased``: as given at construction when
        None).

        Returns
        -------
        ndarray of intp, shape (m,)
            Sorted candidate indices.
        """
        return self._named(text, 0, cased)

    def _named(self, text: str, start: int, cased: bool | None = None) -> np.ndarray:
        """:meth:`named` among the candidates ``start`` onwards."""
        if not start and self._shorter is not None:
            shorter, start = self._shorter
            head = shorter._named(text, 0, cased)
            return np.concatenate([head, self._named(text, start, cased)])
        text = nfc(str(text))
        words = _term_counts(text, True)[0]  # the text's stemmed words (cached, as for BM25)
        lowered = _lowered(text)
        if start:  # the few candidates a longer pool adds
            found = [j for j in range(start, len(self.phrases))
                     if self._rare[j] in words and self._names(j, lowered, text, cased)]
        else:
            found = sorted(j for w in self._by_rare.keys() & words.keys()
                           for j in self._by_rare[w] if self._names(j, lowered, text, cased))
        return np.asarray(found, dtype=np.intp)

    def links(self, i: int) -> np.ndarray:
        """The candidates that the text of candidate ``i`` names, other than those titled as
        ``i`` or by a part of its title (its own name is no link).

        Returns
        -------
        ndarray of intp, shape (m,)
        """
        return self._kept("links", i, self._links)

    def _links(self, i: int, start: int) -> np.ndarray:
        own = self.phrases[i]
        texts = self.texts
        found = self._named(texts.text(i) if self.cased else texts.lowered(i), start)
        if own:
            found = found[[not _occurs(self.phrases[j], own) for j in found]]
        return found

    def naming(self, i: int) -> np.ndarray:
        """The candidates whose text names the title of candidate ``i``, other than those of
        the same title.

        Returns
        -------
        ndarray of intp, shape (m,)
        """
        return self._kept("naming", i, self._naming)

    def _naming(self, i: int, start: int) -> np.ndarray:
        phrase = self.phrases[i]
        if not phrase or not self._rare[i]:
            return np.empty(0, np.intp)
        texts = self.texts
        return np.asarray([j for j in texts.holding(self._rare[i])
                           if j >= start and self.phrases[j] != phrase
                           and self._names(i, texts.lowered(j), texts.text(j))],
                          dtype=np.intp)

    def _kept(self, kind: str, i: int, find: Callable[[int, int], np.ndarray]) -> np.ndarray:
        """``find(i, 0)``, kept; for a pool that extends a shorter one, the shorter pool's
        answer (where it gave one) followed by ``find(i, P)`` over the candidates it adds."""
        key = (kind, i)
        found = self._found.get(key)
        if found is None:
            shorter, P = self._shorter or (None, 0)
            before = shorter._found.get(key) if shorter is not None and i < P else None
            found = find(i, 0) if before is None else np.concatenate([before, find(i, P)])
            found.flags.writeable = False
            self._found[key] = found
        return found

    def same_title(self, i: int) -> np.ndarray:
        """The candidates titled exactly as candidate ``i``, the same string (``i`` among
        them; none when its title names nothing).

        Returns
        -------
        ndarray of intp, shape (m,)
        """
        return np.asarray(self._titled(self._titles[i]) if self.phrases[i] else [],
                          dtype=np.intp)

    def _titled(self, title: object) -> list[int]:
        """The candidates titled ``title`` (whose title names something)."""
        if self._shorter is not None:
            shorter, P = self._shorter
            return shorter._titled(title) + [j for j in range(P, len(self.phrases))
                                             if self.phrases[j] and self._titles[j] == title]
        if self._same is None:
            self._same = {}
            for j, t in enumerate(self._titles):
                if self.phrases[j]:
                    self._same.setdefault(t, []).append(j)
        return self._same.get(title, [])

    def distinct(self, candidates: np.ndarray) -> int:
        """How many distinct titles ``candidates`` have."""
        return len({self.phrases[j] for j in candidates})
