"""The default read policy, ``centered-fusion``, and the pieces it is made of.

Relevance measured after the pool's centroid, taken as a fixed background atom (one pursuit
step): every memory of a conversation shares a common component (speakers, style, topic), and a
small embedder's cosines are dominated by it, so relevance is measured between the query's
residual after the centroid and each memory's residual after it. Channels built from the pool's
signals are added to it (lexical, dates, speakers), one greedy step reorders (session spread,
adjacency, aspects), and an optional pursuit continuation composes on the centred features. The
experiments that lost to it are in :mod:`mempursuit_eval.experimental`.

It takes the pool in native order; it needs no LLM and no training.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from .aspects import (ASKER_ROLES, _aspects, about_asker, asks_for_several, aspect_terms,
                      named_speakers)
from .dates import match_spans, query_dates
from .follow import FollowRequest
from .lexical import QueryTerms, pool_bm25_parts
from .links import TitleLinks, _occurs, pool_texts
from .pursuit import rank_prior, select
from .selectors import PoolSelector, Selection
from .signals import derived, minmax, time_buckets, zscore  # noqa: F401 (time_buckets: re-exported)
from .validation import check_pool, checked_row_norms, signal_values

__all__ = ["CHANNELS", "CenteredFusion", "Centred", "PoolContext", "asker_channel",
           "centred_relevance", "date_channel", "lexical_channel", "named_channel",
           "rank_prior", "time_buckets", "titled_channel"]


# --------------------------------------------------------------------------------------------
# Centred relevance: the one quantity every channel is added to
# --------------------------------------------------------------------------------------------


class Centred(NamedTuple):
    """The pool's centred relevance and what the pursuit continuation reuses.

    Attributes
    ----------
    rel : ndarray of float64, shape (P,)
        ``cos(u_i - mu, q - mu)``; 0 for a memory at the centroid (and for every memory when
        the query is the centroid).
    X : ndarray of float64, shape (P, d)
        The rows as given.
    norms : ndarray, shape (P,)
        Their norms.
    mu : ndarray, shape (d,)
        The centroid of the unit rows.
    rn2 : ndarray, shape (P,)
        ``|u_i - mu|^2``.
    qn2 : float
        ``|q - mu|^2``.
    ok : ndarray of bool, shape (P,)
        Rows away from the centroid (``rn2 > 1e-12``).
    """

    rel: np.ndarray
    X: np.ndarray
    norms: np.ndarray
    mu: np.ndarray
    rn2: np.ndarray
    qn2: float
    ok: np.ndarray


def centred_relevance(q: np.ndarray, M: np.ndarray) -> Centred:
    """Relevance of what memory ``i`` and the query have beyond what the whole pool shares.

    Parameters
    ----------
    q : ndarray of float64, shape (d,)
        The unit query.
    M : ndarray, shape (P, d), P >= 1
        The pool's rows (any non-zero finite norms; a bad row is a ValueError naming it).

    Returns
    -------
    Centred
    """
    P = M.shape[0]
    X = M.astype(np.float64, copy=False)
    norms = checked_row_norms(X)
    # With unit rows u_i, centroid mu and residuals u_i - mu, q - mu (never formed):
    # (u_i - mu).(q - mu) = u_i.q - u_i.mu - mu.q + mu.mu and |u_i - mu|^2 = 1 - 2 u_i.mu + mu.mu.
    mu = (X.T @ (1.0 / norms)) / P
    Y = (X @ np.stack([q, mu], axis=1)) / norms[:, None]
    mm, mq = float(mu @ mu), float(mu @ q)
    rn2 = 1.0 - 2.0 * Y[:, 1] + mm
    qn2 = 1.0 - 2.0 * mq + mm
    ok = rn2 > 1e-12
    rel = np.zeros(P)
    if qn2 > 1e-12:
        rel[ok] = (Y[ok, 0] - Y[ok, 1] - mq + mm) / np.sqrt(rn2[ok] * qn2)
    return Centred(rel, X, norms, mu, rn2, qn2, ok)


# --------------------------------------------------------------------------------------------
# Channels: pool context -> (P,) scores or None, added to the fused score at their weight
# --------------------------------------------------------------------------------------------


@dataclass
class PoolContext:
    """What a channel reads about one pool.

    Attributes
    ----------
    query : ndarray of float64, shape (d,)
        The unit query.
    candidates : ndarray, shape (P, d)
    signals : mapping
        The pool's signals (empty when none were given); read them with :meth:`values`, so
        that a lazy mapping computes only what a channel reads.
    text : str or None
        The question's words (the ``"query_text"`` signal), None without it.
    policy : CenteredFusion
        The options (``policy.stem``, ``policy.date_window``, ...).
    notes : dict
        What channels report for ``Selection.info`` (e.g. ``"lexical"``: the sources used).
    """

    query: np.ndarray
    candidates: np.ndarray
    signals: Mapping
    text: str | None
    policy: "CenteredFusion"
    notes: dict = field(default_factory=dict)
    _links: Any = field(default=False, init=False, repr=False)  # False: not built yet

    @property
    def P(self) -> int:
        return self.candidates.shape[0]

    def values(self, key: str) -> list | None:
        """The per-candidate signal ``key`` (a list of length P), or None when absent."""
        return signal_values(self.signals, key, self.P)

    @property
    def links(self) -> TitleLinks | None:
        """The pool's ``"titles"`` (and ``"texts"``, when given) indexed
        (:class:`mempursuit_core.links.TitleLinks`), built on first use; None without titles or
        when no candidate has a usable one."""
        if self._links is False:
            titles = self.values("titles")
            links = None
            if titles is not None:
                texts, cased = self.values("texts"), self.policy.cased
                if texts is not None:
                    texts = pool_texts(self.signals, texts)
                links = derived(self.signals, ("title links", cased),
                                lambda: TitleLinks(titles, texts, cased=cased),
                                lambda shorter, P: shorter.extended(titles, texts))
            self._links = links if links else None
        return self._links

    @functools.cached_property
    def titles_named(self) -> np.ndarray:
        """The candidates whose title the question names (:meth:`TitleLinks.named`), shape
        (m,); empty without title links or a question."""
        links = self.links if self.text is not None else None
        return links.named(self.text) if links is not None else np.empty(0, np.intp)


def lexical_channel(ctx: PoolContext) -> np.ndarray | None:
    """The framework's keyword score (the ``"lexical"`` signal, when it varies over the pool)
    and BM25 over the pool's ``"texts"`` for the question, each on the fusion scale, their
    mean; which of them by ``policy.lexical``. Records ``notes["lexical"]``."""
    policy, P = ctx.policy, ctx.P
    mode = policy.lexical
    sources, names = [], []
    if mode in ("auto", "prefer-signal", "signal") and "lexical" in ctx.signals:
        lex = np.asarray(ctx.signals["lexical"], dtype=np.float64).ravel()
        if lex.shape != (P,) or not np.isfinite(lex).all():
            raise ValueError(f"the 'lexical' signal must hold P={P} finite scores, got "
                             f"shape {lex.shape}")
        if np.ptp(lex) > 0 or mode == "signal":
            sources.append(lex)
            names.append("signal")
    if mode == "signal" and not sources:
        raise ValueError(f"{policy.name}(lexical='signal') needs the framework's 'lexical' "
                         "signal; this adapter gives none (use lexical='auto' or 'pool')")
    if mode in ("auto", "pool") or (mode == "prefer-signal" and not sources):
        texts = ctx.values("texts") if ctx.text is not None else None
        if texts is not None:
            texts = [str(t) for t in texts]
            bm25 = derived(ctx.signals, ("query terms", ctx.text, policy.stem),
                           lambda: QueryTerms.of(texts, ctx.text, stem=policy.stem),
                           lambda shorter, P: shorter.extended(texts[P:])).bm25()
            if np.ptp(bm25) > 0 or mode == "pool":  # no query word in the pool: no order
                sources.append(bm25)
                names.append("pool")
        elif mode == "pool":
            raise ValueError(f"{policy.name}(lexical='pool') needs the 'texts' and "
                             "'query_text' signals; none were given")
    ctx.notes["lexical"] = "+".join(names) or "none"
    if not sources:
        return None
    norm = policy.FUSION[policy.fusion]
    return sum(norm(s) for s in sources) / len(sources)  # two sources count as one channel


def date_channel(ctx: PoolContext) -> np.ndarray | None:
    """How close each memory's ``"timestamps"`` day is to a day or month the question names
    ("on 3 June, 2023", "in July 2022"): 1 inside, falling to 0 at ``policy.date_window``
    days outside (:func:`mempursuit_core.dates.date_match`)."""
    spans = query_dates(ctx.text) if ctx.text is not None else None
    if not spans:
        return None
    stamps = ctx.values("timestamps")  # a lazy signal: read only for a question with a date
    return None if stamps is None else match_spans(spans, stamps, ctx.policy.date_window)


def _speakers(ctx: PoolContext) -> tuple[list, set] | None:
    who = ctx.values("speakers") if ctx.text is not None else None
    return None if who is None else (who, {s for s in who if isinstance(s, str)})


def _members(who: list, targets) -> np.ndarray | None:
    if not targets:
        return None
    return np.fromiter((isinstance(s, str) and s in targets for s in who), np.float64, len(who))


def named_channel(ctx: PoolContext) -> np.ndarray | None:
    """1 for the memories of the speakers a question names ("What did Caroline research?";
    :func:`mempursuit_core.aspects.named_speakers`), from the ``"speakers"`` signal."""
    found = _speakers(ctx)
    return None if found is None else _members(found[0], named_speakers(ctx.text, found[1]))


def asker_channel(ctx: PoolContext) -> np.ndarray | None:
    """1 for what the user said (a ``user`` / ``human`` speaker) when the question is about the
    asker's own life (:func:`mempursuit_core.aspects.about_asker`) and names no speaker."""
    found = _speakers(ctx)
    if found is None or named_speakers(ctx.text, found[1]) or not about_asker(ctx.text):
        return None
    who, present = found
    return _members(who, frozenset(s for s in present if s.lower() in ASKER_ROLES))


def titled_channel(ctx: PoolContext) -> np.ndarray | None:
    """1 for the memories whose title (the ``"titles"`` signal) the question names ("Which
    magazine started first, Arthur's Magazine or First for Women?")."""
    links = ctx.links if ctx.text is not None else None
    if links is None:
        return None
    named = ctx.titles_named
    if named.size == 0:
        return None
    values = np.zeros(ctx.P)
    values[named] = 1.0
    return values


#: The additive channels, in the order they are added: (name in ``info``, the option that
#: weighs it, the channel). A channel whose weight is 0 is not run (its signals stay unread).
CHANNELS: tuple[tuple[str, str, Callable[[PoolContext], np.ndarray | None]], ...] = (
    ("lexical", "weight", lexical_channel),
    ("dates", "dates", date_channel),
    ("named", "named", named_channel),
    ("speaker", "speaker", asker_channel),
    ("titled", "titled", titled_channel),
)


# --------------------------------------------------------------------------------------------
# The policy
# --------------------------------------------------------------------------------------------


def _one_of(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            raise ValueError(value)
        return value
    check.__doc__ = f"one of {allowed}"
    return check


def _true_or_false(value: Any) -> bool:
    """true or false"""
    if not isinstance(value, bool):
        raise ValueError(value)
    return value


def _non_negative(value: Any) -> float:
    """finite and >= 0"""
    value = float(value)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(value)
    return value


def _non_negative_or_none(value: Any) -> float | None:
    """finite and >= 0"""
    return None if value is None else _non_negative(value)


def _integer(value: Any) -> int:
    """an integer"""
    return int(value)


def _count(value: Any) -> int:
    """an integer >= 0"""
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(value)
    return int(value)


def _real(value: Any) -> float:
    """a number"""
    return float(value)


class CenteredFusion(PoolSelector):
    """The default read policy: centred relevance plus channels, one greedy reordering step,
    and an optional pursuit continuation.

    1. **Centred relevance** (:func:`centred_relevance`): ``cos(u_i - mu, q - mu)`` with ``mu``
       the centroid of the pool's unit rows, on the fusion scale (``fusion``).
    2. **Channels** (:data:`CHANNELS`), each added at its weight where it fires: ``lexical``
       (weight ``weight``), ``dates``, ``named``, ``speaker``, ``titled``.
    3. **One greedy reordering step**: once a session has a pick its other memories count
       ``spread`` less (``gather`` for a question that asks for several things), a pick's
       session neighbours gain ``adjacent``, the memories whose title a pick names gain
       ``bridge`` (documents), and, for a question that sets things side by side, a candidate
       gains ``aspects`` x what it adds to the picks' cover of each thing.
    4. With ``gamma > 0``, ``experimental/pursuit-rank`` on the centred features continues from
       the fused order.

    ``Selection.info`` says what acted: ``"lexical"`` (the lexical sources: ``"signal"``,
    ``"pool"``, both joined by ``+``, or ``"none"``), ``"channels"`` (``{name: weight}`` of the
    channels that fired) and ``"reorder"`` (``{step: value}`` of the reordering steps that
    ran). How each default was chosen is in ``docs/results.md`` (*How the default's options
    were chosen*).

    Parameters
    ----------
    lexical : {"auto", "prefer-signal", "signal", "pool", "none"}, default "auto"
        The lexical channel's sources: the framework's keyword score (the ``"lexical"`` signal,
        when it varies over the pool) and BM25 over the pool's ``"texts"`` for the
        ``"query_text"``. ``"auto"``: the mean of both where both exist, else the one there
        is. ``"prefer-signal"``: the framework's score, the pool's BM25 only without it.
        ``"signal"`` / ``"pool"`` insist on one (ValueError when missing).
    stem : bool, default True
        Light-stem the pool BM25's tokens (:func:`mempursuit_core.lexical.stem`: ``painted``
        matches ``painting``); a framework's keyword score is used as it comes.
    fusion : {"zscore", "minmax"}, default "zscore"
        The scale relevance and the lexical scores are put on before adding: pool z-scores, or
        min-max (what hybrid stores do; ``fusion="minmax", weight=1`` is equal-weight hybrid).
    weight : float, default 0.7
        Weight of the lexical channel; 0 turns it off.
    spread : float, default 0.3
        Once a session has a pick, the fused score of its other memories is lowered by
        ``spread`` (sessions from the ``"time_buckets"`` or ``"session_ids"`` signal, else the
        calendar day of ``"timestamps"``; nothing without them). 0 keeps the most gold turns,
        larger values cover more sessions.
    dates : float, default 3
        Weight of the date channel (:func:`date_channel`); no change when the question names
        no date or the pool has no timestamps.
    date_window : float, default 7
        Days outside a named day or month at which the date match has fallen to 0.
    adjacent : float, default 0
        Once a memory is picked, the memories right before and after it in its session (the
        ``"positions"`` signal, the memory's place in the store's write order, within the same
        session) gain ``adjacent``, as MemoryBank's read path expands its seeds.
    aspects : float, default 0
        For a question that sets things side by side ("which first, A or B?", "between A and
        B"; :func:`mempursuit_core.aspects.query_aspects`): each thing's BM25 over the pool's
        ``"texts"`` as a pool z-score ``z_a``; once memories are picked, a candidate gains
        ``aspects * sum_a max(0, z_a,i - c_a)``, ``c_a`` the best ``z_a`` among the picks.
    gather : float or None, default 0.8
        The ``spread`` for a question that asks for a count, an order or a list ("how many",
        "in what order", "what books"; :func:`mempursuit_core.aspects.asks_for_several`); None:
        ``spread`` for every question.
    speaker : float, default 2
        Weight of the asker channel (:func:`asker_channel`): a first-person question about the
        asker's own life raises what the user said. No change without ``"speakers"``.
    named : float, default 1
        Weight of the named channel (:func:`named_channel`): a question that names some of the
        pool's speakers raises their memories; it takes precedence over ``speaker``.
    titled : float, default 1
        Weight of the titled channel (:func:`titled_channel`): the memories whose title (the
        ``"titles"`` signal: a document's title, file or entity name) the question names. No
        change without titles.
    bridge : float, default 8
        Following what the evidence names: once a memory is picked, the memories whose title
        its text names (:class:`mempursuit_core.links.TitleLinks`) gain ``bridge / sqrt(n)``,
        ``n`` the number of distinct titles it names, and the memories whose text names its
        title gain half as much (``bridge / 2 / sqrt(n)``, ``n`` their distinct titles). It
        finds the second hop of a question that names only the first ("where did the performer
        of song X die?": X's passage names the performer, whose own passage never matches the
        question). No change without the
        ``"titles"`` and ``"texts"`` signals.
    follow : int, default 2
        The second read (:mod:`mempursuit_core.follow`): once the first ``follow_from`` picks
        are chosen, up to ``follow`` titles that they and the question name but no candidate
        carries are fetched from the store by title, and the policy chooses again over the
        pool and them. The policy only asks (its selection's ``follow``); the read path's
        stage reads the store (:func:`mempursuit_core.follow.follow_pool`). 0, a pool without
        titles or a store that cannot read by title: no second read; a read that fails or is
        late gives the first read's order and one warning.
    follow_from : int, default 3
        How many of the first read's picks the second read follows.
    cased : bool, default True
        A text names a title only where it capitalises the words the title capitalises (a
        title is a name: "Father" or "Today (album)" is not named by "his father said today";
        a file name is named in any case). False: in any case. For ``titled``, ``bridge`` and
        the second read.
    hub_named : int, default 5
        The second read does not follow a title that this many of the pool's texts name (a
        hub: a country, a city, an office; a weak link); 0 follows every title.
    defer : bool, default True
        When the question names two or more of the pool's titles (it sets them side by side),
        the ``bridge`` raises wait until each has a pick (:class:`Bridge`).
    link_once : bool, default True
        A link is followed once: when a pick has a title, the pool's other passages of that
        title give back their ``bridge`` raises (:class:`Bridge`). False: each keeps them.
    gamma : float, default 0
        With ``gamma > 0`` the fused order is the prior of ``experimental/pursuit-rank`` on the
        centred unit features; 0 returns the fused order (and ``k``-selections are nested).
    keep : int, default 1
        With ``gamma > 0``: the first ``keep`` picks of the fused order are fixed.
    ridge : float, default 1e-10
        With ``gamma > 0``: the ridge of the pursuit's refit.
    """

    name = "centered-fusion"
    description = ("default: relevance of what the query has beyond the pool's centroid, fused "
                   "with the framework's and the pool's lexical scores, the dates the query "
                   "names and whose words it asks about, spread over sessions")

    LEXICAL = ("auto", "prefer-signal", "signal", "pool", "none")
    FUSION = {"zscore": zscore, "minmax": minmax}
    CHANNELS = CHANNELS

    #: What each option must be, the one place it is said (the signature gives the defaults,
    #: the docstring the meaning): ``{option: check}``, each check returning the value
    #: converted or raising, its docstring the rule an error message states.
    _parameter_constraints: dict[str, Callable[[Any], Any]] = {
        "lexical": _one_of(*LEXICAL), "stem": _true_or_false, "fusion": _one_of(*FUSION),
        **{name: _non_negative for name in ("weight", "spread", "gamma", "dates", "date_window",
                                            "adjacent", "aspects", "speaker", "named",
                                            "titled", "bridge")},
        "gather": _non_negative_or_none, "keep": _integer, "ridge": _real,
        "follow": _count, "follow_from": _count, "cased": _true_or_false, "hub_named": _count,
        "defer": _true_or_false, "link_once": _true_or_false,
    }

    def __init__(self, *, lexical: str = "auto", stem: bool = True, fusion: str = "zscore",
                 weight: float = 0.7, spread: float = 0.3, gamma: float = 0.0, keep: int = 1,
                 ridge: float = 1e-10, dates: float = 3.0, date_window: float = 7.0,
                 adjacent: float = 0.0, aspects: float = 0.0, gather: float | None = 0.8,
                 speaker: float = 2.0, named: float = 1.0, titled: float = 1.0,
                 bridge: float = 8.0, follow: int = 2, follow_from: int = 3,
                 cased: bool = True, hub_named: int = 5, defer: bool = True,
                 link_once: bool = True):
        given = locals()
        self._set_options({name: given[name] for name in self._parameter_constraints})

    def _set_options(self, options: dict[str, Any]) -> None:
        """Check every option against :attr:`_parameter_constraints` and keep it converted; the
        options that break a constraint of the same kind are named together in one ValueError."""
        bad: dict[str, list[str]] = {}
        for name, value in options.items():
            check = self._parameter_constraints[name]
            try:
                setattr(self, name, check(value))
            except (TypeError, ValueError):
                bad.setdefault(check.__doc__, []).append(name)
        for rule, names in bad.items():
            raise ValueError(f"{', '.join(names)} must be {rule}, got "
                             + ", ".join(f"{n}={options[n]!r}" for n in names))

    @property
    def nested(self) -> bool:
        """Without the pursuit continuation the order does not depend on ``k``."""
        return self.gamma == 0

    def scores(self, query: Any, candidates: Any, *, signals: Mapping | None = None
               ) -> np.ndarray:
        """The fused score of every candidate before the reordering step, shape (P,)."""
        q, M, _, _, signals = check_pool(query, candidates, 1, None, signals)
        if M.shape[0] == 0:
            return np.empty(0)
        ctx = self._context(q, M, signals)
        return self._fuse(centred_relevance(q, M).rel, ctx)[0]

    def _context(self, q, M, signals) -> PoolContext:
        signals = {} if signals is None else signals  # no len(): lazy mappings stay lazy
        text = str(signals["query_text"] or "") if "query_text" in signals else None
        return PoolContext(q, M, signals, text, self)

    def _fuse(self, rel: np.ndarray, ctx: PoolContext) -> tuple[np.ndarray, dict]:
        """Relevance on the fusion scale plus each channel that fires at its weight; the
        channels that fired, ``{name: weight}``."""
        score = self.FUSION[self.fusion](rel)
        fired = {}
        for name, option, channel in self.CHANNELS:
            weight = getattr(self, option)
            if weight == 0:
                continue
            values = channel(ctx)
            if values is not None:
                score = score + weight * values
                fired[name] = weight
        return score, fired

    def _reorder(self, score: np.ndarray, ctx: PoolContext, k: int
                 ) -> tuple[np.ndarray, dict]:
        """The greedy reordering step: session spread (or gather), then the steps that act
        pick by pick (:class:`Aspects`, :class:`Neighbours`, :class:`Bridge`); the order (its
        first ``min(k, P)`` greedy) and ``{step: value}`` of the steps that ran."""
        P, text = ctx.P, ctx.text
        order = np.argsort(-score, kind="stable")
        positions = self._positions(ctx) if self.adjacent > 0 else None
        Z = self._aspect_scores(ctx) if self.aspects > 0 else None
        spread, which = self.spread, "spread"
        if self.gather is not None and text is not None and asks_for_several(text):
            spread, which = self.gather, "gather"
        buckets = (time_buckets(ctx.signals, P) if spread > 0 or positions is not None
                   else None)
        links = ctx.links if self.bridge > 0 and text is not None else None
        follow = links if links is not None and "texts" in ctx.signals else None
        steps = {which: spread} if buckets is not None and spread > 0 else {}
        for name, value, on in (("adjacent", self.adjacent, positions is not None),
                                ("bridge", self.bridge, follow is not None),
                                ("aspects", self.aspects, Z is not None)):
            if on:
                steps[name] = value
        if positions is None and Z is None and follow is None:
            if buckets is not None:
                order = _spread_order(score, order, buckets, spread)
            return order, steps
        # every memory but its bucket's best pays the penalty; with neighbour bonuses alone a
        # bucket's first pick is still its best (a bonus only reaches buckets that already
        # have a pick), aspect gains may take another first
        group, key = (_spread_key(score, order, buckets, spread) if buckets is not None
                      else (np.zeros(P, dtype=np.intp), score.copy()))
        greedy = [Aspects(Z, self.aspects)] if Z is not None else []
        if positions is not None:
            greedy.append(Neighbours(group, positions, self.adjacent))
        if follow is not None:
            first: list[set] = []
            if self.defer:
                groups: dict[str, set] = {}
                for j in ctx.titles_named.tolist():
                    groups.setdefault(follow.phrases[j], set()).add(j)
                # a title named only inside a longer one the question names is no second thing
                first = [g for p, g in groups.items()
                         if not any(p != o and _occurs(p, o) for o in groups)]
            greedy.append(Bridge(follow, self.bridge, first, once=self.link_once))
        order = _greedy_order(key, order, min(k, P), greedy)
        return order, steps

    @staticmethod
    def _positions(ctx: PoolContext) -> np.ndarray | None:
        if "positions" not in ctx.signals:
            return None
        try:
            positions = np.asarray(ctx.signals["positions"], dtype=np.int64).ravel()
        except (TypeError, ValueError, OverflowError):
            raise ValueError("the 'positions' signal must hold one integer (the memory's "
                             "place in write order) per candidate") from None
        if positions.shape != (ctx.P,):
            raise ValueError(f"'positions' has {positions.shape[0]} entries but the pool "
                             f"has P={ctx.P}")
        return positions

    def _aspect_scores(self, ctx: PoolContext) -> np.ndarray | None:
        """Each aspect's pool BM25 as z-scores, shape (m, P), m >= 2; None for a question that
        names one thing (or without ``"texts"``)."""
        if ctx.text is None or "texts" not in ctx.signals:
            return None
        parts, terms = _aspects(ctx.text)
        parts = (terms if self.stem else aspect_terms(parts, stem=False)) or None
        if parts is None:
            return None
        texts = [str(t) for t in ctx.values("texts")]
        rows = pool_bm25_parts(texts, ctx.text, parts, stem=self.stem)[1]
        rows = [zscore(r) for r in rows if np.ptp(r) > 0]
        return np.stack(rows) if len(rows) >= 2 else None

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        ctx = self._context(q, M, signals)
        cen = centred_relevance(q, M)
        score, fired = self._fuse(cen.rel, ctx)
        # the picks the second read follows do not depend on k (nested orders stay nested)
        order, steps = self._reorder(score, ctx, max(k, self.follow_from) if self.follow else k)
        request = self._follow_request(ctx, order) if self.follow > 0 else None
        info = {"lexical": ctx.notes.get("lexical", "none"), "channels": fired,
                "reorder": steps}
        if self.gamma == 0 or cen.qn2 <= 1e-12 or not cen.ok.any():
            return Selection(order=order[:k].astype(np.intp), info=info, follow=request)
        chosen = self._continue(q, cen, order, k, info)
        return dataclasses.replace(chosen, follow=request) if request is not None else chosen

    def _follow_request(self, ctx: PoolContext, order: np.ndarray) -> FollowRequest | None:
        """What the second read would follow: the titles the first ``follow_from`` picks and
        the question name that the pool lacks (read by the read path's stage,
        :func:`mempursuit_core.follow.follow_pool`); None without titles and texts."""
        if "titles" not in ctx.signals or "texts" not in ctx.signals:
            return None
        texts = ctx.values("texts")
        said = [str(texts[i]) for i in order[:self.follow_from]]
        if ctx.text:
            said.append(ctx.text)
        titles = ctx.values("titles")
        return FollowRequest(tuple(said), frozenset(t for t in titles if isinstance(t, str)),
                             self.follow, self._then(), cased=self.cased,
                             max_named=self.hub_named or None)

    def _then(self) -> "CenteredFusion":
        """This policy without the second read: what chooses again over the larger pool."""
        then = getattr(self, "_without_follow", None)
        if then is None:
            then = copy.copy(self)
            then.follow = 0
            self._without_follow = then
        return then

    def _continue(self, q, cen: Centred, order: np.ndarray, k: int, info: dict) -> Selection:
        """``experimental/pursuit-rank`` on the centred features, the fused order as native."""
        U = cen.X / cen.norms[:, None]
        R, r = U - cen.mu, q - cen.mu
        rn = np.sqrt(np.maximum(cen.rn2, 0.0))
        qn = math.sqrt(cen.qn2)
        ok = cen.ok
        Rn = np.where(ok[:, None], R / np.where(ok, rn, 1.0)[:, None], U)[order]
        res = select(r / qn, Rn, k, ridge=self.ridge, prior=rank_prior(r, Rn), gamma=self.gamma,
                     keep=min(self.keep, k))
        return Selection(order=order[res.order].astype(np.intp), weights=res.weights,
                         stopped=res.stop_reason,
                         info={"losses": res.losses, "gaps": res.gaps, "pursuit": self.gamma,
                               **info})


def _spread_order(score: np.ndarray, order: np.ndarray, buckets: list,
                  penalty: float) -> np.ndarray:
    """The greedy order in which, once a bucket has a pick, its other scores count ``penalty``
    less. ``order`` is ``score``'s own stable order."""
    # A bucket's first pick is always its best memory (``order``'s first of that bucket) and
    # the penalty is paid once, so the greedy sequence is the stable sort of ``score`` with
    # every other memory lowered by ``penalty``: O(P log P) instead of O(kP).
    _, key = _spread_key(score, order, buckets, penalty)
    return np.argsort(-key, kind="stable")


def _spread_key(score: np.ndarray, order: np.ndarray, buckets: list, penalty: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's bucket number, shape (P,), and its score less ``penalty`` unless it is
    its bucket's best (first in ``order``), shape (P,)."""
    ids: dict = {}
    group = np.array([ids.setdefault(b, len(ids)) for b in buckets], dtype=np.intp)
    _, first = np.unique(group[order], return_index=True)
    key = score - penalty
    key[order[first]] = score[order[first]]
    return group, key


class Neighbours:
    """Reorder step: each pick raises its session neighbours (``positions`` +-1 in the same
    bucket) by ``bonus`` (the ``adjacent`` option)."""

    def __init__(self, group: np.ndarray, positions: np.ndarray, bonus: float):
        P = group.shape[0]
        # neighbours: consecutive in (bucket, position) order with positions one apart
        by = np.lexsort((positions, group))
        step = (group[by][1:] == group[by][:-1]) & (np.diff(positions[by]) == 1)
        self.after = np.full(P, -1, dtype=np.intp)
        self.before = np.full(P, -1, dtype=np.intp)
        self.after[by[:-1][step]] = by[1:][step]
        self.before[by[1:][step]] = by[:-1][step]
        self.bonus = bonus

    def gain(self) -> None:
        return None

    def picked(self, i: int, live: np.ndarray) -> None:
        for j in (self.before[i], self.after[i]):
            if j >= 0 and live[j] > -np.inf:
                live[j] += self.bonus


class Bridge:
    """Reorder step: with the pool's title links, each pick raises the candidates its text
    names by ``reach / sqrt(n)`` (``n`` distinct titles among those not yet picked) and the
    candidates whose text names its title by half that (the ``bridge`` option).

    ``first``: the candidates of each title the question names (one set per title; a title named
    only inside a longer one is left out). When the question names two or more, it sets them
    side by side ("which came first, X or Y?"): the
    raises wait until each of those titles has a pick (or twice as many picks are made), so
    that what the first picks name never pushes out what the question itself asked for; then
    they all apply (the ``defer`` option).

    ``once`` (the ``link_once`` option): a link is followed once. When a pick has a title, the
    other passages of that exact title give back what links raised them by and gain no more:
    a second passage of a title the picks already hold adds nothing the link asked for.
    """

    def __init__(self, links: TitleLinks, reach: float, first: Sequence[set] = (), *,
                 once: bool = True):
        self.links, self.reach = links, reach
        self.pending = [set(g) for g in first] if len(first) >= 2 else []
        self.patience = 2 * len(self.pending)
        self.held: list[tuple[np.ndarray, float]] = []
        self.once = once
        P = len(links.phrases)
        self.raised = np.zeros(P)  # what the links have raised each candidate by so far
        self.followed = np.zeros(P, dtype=bool)  # candidates whose title has a pick

    def gain(self) -> None:
        return None

    def picked(self, i: int, live: np.ndarray) -> None:
        same = self.links.same_title(i) if self.once else ()
        if len(same):
            back = same[live[same] > -np.inf]
            live[back] -= self.raised[back]
            self.raised[same] = 0.0
            self.followed[same] = True
        # forward: what the pick names; backward, at half weight: what names the pick
        for found, gain in ((self.links.links(i), self.reach),
                            (self.links.naming(i), self.reach / 2)):
            found = found[live[found] > -np.inf]
            if found.size:
                self.held.append((found, gain / math.sqrt(self.links.distinct(found))))
        if self.pending:
            self.pending = [g for g in self.pending if i not in g]
            self.patience -= 1
            if self.pending and self.patience > 0:
                return
            self.pending = []
        for found, raise_ in self.held:
            found = found[(live[found] > -np.inf) & ~self.followed[found]]
            live[found] += raise_
            self.raised[found] += raise_
        self.held = []


class Aspects:
    """Reorder step: every candidate gains ``weight`` times what it adds to the picks' best
    score on each aspect, ``aspects`` shape (m, P) (the ``aspects`` option)."""

    def __init__(self, aspects: np.ndarray, weight: float):
        self.Z, self.weight = aspects, weight
        self.best: np.ndarray | None = None  # the picks' best score on each aspect, (m, 1)

    def gain(self) -> np.ndarray | None:
        if self.best is None:
            return None
        return self.weight * (np.maximum(self.Z, self.best) - self.best).sum(axis=0)

    def picked(self, i: int, live: np.ndarray) -> None:
        col = self.Z[:, i:i + 1]
        self.best = col if self.best is None else np.maximum(self.best, col)


def _greedy_order(key: np.ndarray, order: np.ndarray, k: int, steps: Sequence[Any]
                  ) -> np.ndarray:
    """The first ``k`` picks one at a time, the rest in ``order``: each pick is the best of
    ``key`` as raised so far plus the steps' current gains (:class:`Aspects`), and each step
    then raises what the pick makes worth more (:class:`Neighbours`, :class:`Bridge`).

    ``key`` (P,) is the fused score after the session spread (:func:`_spread_key`), ``order``
    its stable order; each step has ``gain() -> (P,) or None`` and ``picked(i, live)``."""
    P = key.shape[0]
    live = key.copy()
    live[~np.isfinite(live)] = np.finfo(np.float64).min  # never tied with a taken slot
    picks = np.empty(k, dtype=np.intp)
    for t in range(k):
        gains = [g for g in (step.gain() for step in steps) if g is not None]
        i = int(np.argmax(live + sum(gains) if gains else live))
        picks[t] = i
        live[i] = -np.inf
        for step in steps:
            step.picked(i, live)
    taken = np.zeros(P, dtype=bool)
    taken[picks] = True
    return np.concatenate([picks, order[~taken[order]]])
