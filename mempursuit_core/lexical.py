"""Lexical signals for the plain store: BM25 scores and tf-idf sparse features, per group.

Tokens: lower-cased runs of letters and digits (``\\w+`` without ``_``), English stop words
removed; with ``stem=True`` each token also goes through :func:`stem`, a light English suffix
stemmer (the plain store's own BM25 and tf-idf do not stem). One :class:`LexicalIndex` covers one
group (a store scope); document frequencies, lengths and idf are that group's.

* BM25 (Robertson / Lucene form): ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))``,
  ``score(d) = sum_{t in q} idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b |d| / avgdl))`` over the
  query's distinct in-vocabulary terms; ``k1 = 1.2``, ``b = 0.75``.
* tf-idf (scikit-learn's ``TfidfVectorizer(sublinear_tf=True)`` definition):
  ``(1 + ln tf) * (ln((1 + N) / (1 + df)) + 1)``, rows L2-normalised; query terms absent from
  the group are ignored (as ``transform`` would).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["tokenize", "stem", "LexicalIndex", "STOP_WORDS", "pool_bm25", "pool_bm25_parts",
           "QueryTerms"]

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has
have having he her here hers herself him himself his how i if in into is it its itself just let
me more most my myself no nor not now of off on once only or other ought our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there these
they this those through to too under until up very was we were what when where which while who
whom why will with would you your yours yourself yourselves s t d ll m re ve don didn doesn isn
wasn weren won wouldn shouldn couldn hasn haven hadn aren
""".split())


def tokenize(text: str, stem: bool = False) -> list[str]:
    """Lower-cased word tokens without stop words (each passed through :func:`stem` if asked)."""
    toks = [t for t in _TOKEN.findall(text.lower()) if t not in STOP_WORDS]
    return [_stem(t) for t in toks] if stem else toks


_VOWEL = re.compile("[aeiouy]")
_SUFFIXES = ("ingly", "edly", "ing", "ed", "ly", "ation", "ion", "ment", "ness", "er")


@functools.lru_cache(maxsize=1 << 16)
def _stem(word: str) -> str:
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in _SUFFIXES:
        rest = word[:-len(suffix)]
        if word.endswith(suffix) and len(rest) >= 3 and _VOWEL.search(rest):
            doubled = len(rest) > 3 and rest[-1] == rest[-2] and rest[-1] not in "lsz"
            word = rest[:-1] if doubled else rest
            break
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    if len(word) > 3 and word.endswith("y"):
        word = word[:-1] + "i"
    return word


def stem(word: str) -> str:
    """A light English suffix stemmer, so that inflected forms of a word share one token.

    One plural ending (``-ies`` to ``-y``, ``-sses``, ``-s``), then at most one of ``-ingly``,
    ``-edly``, ``-ing``, ``-ed``, ``-ly``, ``-ation``, ``-ion``, ``-ment``, ``-ness``, ``-er``
    (when at least three letters with a vowel remain; a doubled final consonant other than
    l, s, z is undoubled), then a final ``e`` is dropped and a final ``y`` becomes ``i``. Words
    of three letters or less and tokens with digits are kept. It over-stems (``better`` and
    ``bet`` meet) and misses irregular forms: BM25 over one pool tolerates both; what it buys
    is that ``painting``, ``painted`` and ``paints`` all match ``paint``.
    """
    return _stem(word)


@functools.lru_cache(maxsize=1 << 16)
def _term_counts(text: str, stem: bool = False) -> tuple[dict[str, int], int]:
    counts: dict[str, int] = {}
    toks = tokenize(text, stem)
    for t in toks:
        counts[t] = counts.get(t, 0) + 1
    return counts, len(toks)


def pool_bm25(texts: Sequence[str], query: str, *, k1: float = 1.2, b: float = 0.75,
              stem: bool = False) -> np.ndarray:
    """BM25 of ``query`` against ``texts`` with the texts themselves as the collection.

    Equal to ``LexicalIndex(texts, stem=stem).bm25(query)``, but touches only the query's terms
    and keeps each text's term counts in a bounded cache, so scoring a pool whose memories were
    seen before costs dictionary lookups (memories recur across a store's queries).

    Returns
    -------
    ndarray of float64, shape (N,)
    """
    return QueryTerms.of(texts, query, stem=stem).bm25(k1=k1, b=b)


def pool_bm25_parts(texts: Sequence[str], query: str, parts: Sequence[Sequence[str]], *,
                    k1: float = 1.2, b: float = 0.75, stem: bool = False
                    ) -> tuple[np.ndarray, list[np.ndarray]]:
    """:func:`pool_bm25` of ``query`` and of each part of it (lists of the query's words) in
    one pass over the texts.

    Returns
    -------
    whole : ndarray of float64, shape (N,)
        ``pool_bm25(texts, query)``.
    parts : list of ndarray of float64, each shape (N,)
        BM25 of each part's terms that are also the query's (the others score nothing).
    """
    counts = QueryTerms.of(texts, query, stem=stem)
    N, terms = len(texts), counts.terms
    if not terms or N == 0:
        return np.zeros(N), [np.zeros(N) for _ in parts]
    saturated, idf = counts.weights(k1, b)
    column = {t: j for j, t in enumerate(terms)}
    rows = []
    for words in parts:
        cols = list(dict.fromkeys(column[t] for t in tokenize(" ".join(words), stem)
                                  if t in column))
        rows.append(saturated[:, cols] @ idf[cols] if cols else np.zeros(N))
    return saturated @ idf, rows


@dataclass(frozen=True)
class QueryTerms:
    """How often each of a query's terms occurs in each text of a pool, and the texts' lengths:
    what the pool's BM25 reads (:func:`pool_bm25`).

    Attributes
    ----------
    terms : list of str, length T
        The query's distinct tokens, in order.
    tf : ndarray of float64, shape (N, T)
    lengths : ndarray of float64, shape (N,)
        Each text's token count.
    stem : bool
    """

    terms: list[str]
    tf: np.ndarray
    lengths: np.ndarray
    stem: bool

    @classmethod
    def of(cls, texts: Sequence[str], query: str, *, stem: bool = False) -> "QueryTerms":
        terms = list(dict.fromkeys(tokenize(query, stem)))
        return cls(terms, *_counted(texts, terms, stem), stem)

    def extended(self, texts: Sequence[str]) -> "QueryTerms":
        """These counts followed by those of ``texts`` (a pool followed by more candidates)."""
        tf, lengths = _counted(texts, self.terms, self.stem)
        return QueryTerms(self.terms, np.concatenate([self.tf, tf]),
                          np.concatenate([self.lengths, lengths]), self.stem)

    def weights(self, k1: float = 1.2, b: float = 0.75) -> tuple[np.ndarray, np.ndarray]:
        """Each text's saturated term frequencies, shape (N, T), and the terms' idf over the
        pool, shape (T,)."""
        tf, lengths = self.tf, self.lengths
        N = tf.shape[0]
        df = (tf > 0).sum(axis=0)
        idf = np.log1p((N - df + 0.5) / (df + 0.5))
        avgdl = float(lengths.mean()) if lengths.mean() > 0 else 1.0
        norm = k1 * (1.0 - b + b * lengths / avgdl)
        return tf * (k1 + 1.0) / (tf + norm[:, None]), idf

    def bm25(self, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
        """BM25 of the query against the texts, the texts as the collection, shape (N,)."""
        N = self.tf.shape[0]
        if not self.terms or N == 0:
            return np.zeros(N)
        saturated, idf = self.weights(k1, b)
        return saturated @ idf


def _counted(texts: Sequence[str], terms: list[str], stem: bool
             ) -> tuple[np.ndarray, np.ndarray]:
    """The texts' counts of ``terms``, shape (N, T), and their lengths, shape (N,)."""
    N = len(texts)
    flat: list[int] = []
    sizes: list[int] = []
    zeros = [0] * len(terms)
    for text in texts:
        counts, n = _term_counts(text, stem)
        sizes.append(n)
        flat.extend(map(counts.get, terms, zeros))
    return (np.array(flat, dtype=np.float64).reshape(N, len(terms)),
            np.array(sizes, dtype=np.float64))


class LexicalIndex:
    """BM25 and tf-idf over one group's documents (rows in store order).

    Parameters
    ----------
    texts : sequence of str, length N
    k1, b : float
        BM25 parameters.
    stem : bool
        Pass tokens through :func:`stem` (documents and queries).
    """

    def __init__(self, texts: Sequence[str], *, k1: float = 1.2, b: float = 0.75,
                 stem: bool = False):
        if k1 < 0 or not 0 <= b <= 1:
            raise ValueError(f"need k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        vocab: dict[str, int] = {}
        rows, cols, counts = [], [], []
        lengths = np.zeros(len(texts), dtype=np.float64)
        self.stem = bool(stem)
        for i, text in enumerate(texts):
            toks = tokenize(text, self.stem)
            lengths[i] = len(toks)
            local: dict[int, int] = {}
            for t in toks:
                j = vocab.setdefault(t, len(vocab))
                local[j] = local.get(j, 0) + 1
            for j, c in local.items():
                rows.append(i)
                cols.append(j)
                counts.append(c)
        self.vocab = vocab
        self.n_docs = len(texts)
        self.rows = np.asarray(rows, dtype=np.int64)
        self.cols = np.asarray(cols, dtype=np.int64)
        tf = np.asarray(counts, dtype=np.float64)
        V = len(vocab)
        df = np.bincount(self.cols, minlength=V).astype(np.float64)
        N = float(self.n_docs)
        self.bm25_idf = np.log1p((N - df + 0.5) / (df + 0.5))
        self.tfidf_idf = np.log((1.0 + N) / (1.0 + df)) + 1.0
        avgdl = float(lengths.mean()) if self.n_docs and lengths.mean() > 0 else 1.0
        denom = tf + k1 * (1.0 - b + b * lengths[self.rows] / avgdl)
        self._bm25_tf = tf * (k1 + 1.0) / denom                   # per (doc, term) entry
        w = (1.0 + np.log(tf)) * self.tfidf_idf[self.cols]
        norms = np.sqrt(np.bincount(self.rows, weights=w * w, minlength=self.n_docs))
        self._tfidf = w / np.where(norms[self.rows] > 0, norms[self.rows], 1.0)
        # CSR view by document for gathering pool rows.
        order = np.argsort(self.rows, kind="stable")
        self._csr_cols = self.cols[order]
        self._csr_tfidf = self._tfidf[order]
        self._indptr = np.zeros(self.n_docs + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.rows, minlength=self.n_docs), out=self._indptr[1:])
        self.k1, self.b = float(k1), float(b)

    def query_terms(self, query: str) -> np.ndarray:
        """Distinct in-vocabulary term ids of ``query`` (first-occurrence order)."""
        seen: dict[int, None] = {}
        for t in tokenize(query, self.stem):
            j = self.vocab.get(t)
            if j is not None:
                seen.setdefault(j, None)
        return np.fromiter(seen, dtype=np.int64, count=len(seen))

    def bm25(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query``.

        Returns
        -------
        ndarray of float64, shape (N,)
        """
        terms = self.query_terms(query)
        if terms.size == 0 or self.n_docs == 0:
            return np.zeros(self.n_docs)
        mask = np.isin(self.cols, terms)
        contrib = self._bm25_tf[mask] * self.bm25_idf[self.cols[mask]]
        return np.bincount(self.rows[mask], weights=contrib, minlength=self.n_docs)

    def tfidf(self, docs: Sequence[int] | np.ndarray, query: str
              ) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Dense tf-idf features of some documents and the query over their joint vocabulary.

        Parameters
        ----------
        docs : sequence of int, length P
            Document rows (store order within the group), e.g. a pool.
        query : str

        Returns
        -------
        features : ndarray of float32, shape (P, m)
            L2-normalised rows (a row without any term is zero).
        query_features : ndarray of float32, shape (m,)
            The query's L2-normalised tf-idf vector over the same columns.
        terms : list of str, length m
            Column terms (every term of the documents and the query's in-vocabulary terms, in
            the index's term-id order).
        """
        docs = np.asarray(docs, dtype=np.int64).reshape(-1)
        if docs.size and (docs.min() < 0 or docs.max() >= self.n_docs):
            raise IndexError(f"document rows must be in [0, {self.n_docs})")
        starts, ends = self._indptr[docs], self._indptr[docs + 1]
        lens = ends - starts
        offsets = np.cumsum(lens) - lens
        idx = np.repeat(starts - offsets, lens) + np.arange(int(lens.sum()))
        cols = self._csr_cols[idx]
        vals = self._csr_tfidf[idx]
        local_rows = np.repeat(np.arange(docs.size), lens)
        qtoks = [self.vocab[t] for t in tokenize(query, self.stem) if t in self.vocab]
        qterms, qcounts = (np.unique(np.asarray(qtoks, dtype=np.int64), return_counts=True)
                           if qtoks else (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        uniq, inverse = np.unique(np.concatenate([cols, qterms]), return_inverse=True)
        m = uniq.size
        feats = np.zeros((docs.size, m), dtype=np.float32)
        feats[local_rows, inverse[: cols.size]] = vals
        qvec = np.zeros(m, dtype=np.float64)
        if qterms.size:
            qw = (1.0 + np.log(qcounts)) * self.tfidf_idf[qterms]
            qvec[inverse[cols.size:]] = qw / np.linalg.norm(qw)
        inv_vocab = self._inverse_vocab()
        return feats, qvec.astype(np.float32), [inv_vocab[j] for j in uniq]

    def _inverse_vocab(self) -> list[str]:
        if not hasattr(self, "_inv"):
            inv = [""] * len(self.vocab)
            for t, j in self.vocab.items():
                inv[j] = t
            self._inv = inv
        return self._inv
