"""Retrieval metrics for one selection and paired statistics between two policies.

Per question and budget ``K`` (a selection = the memory units a policy keeps):

* ``session_recall``: share of the gold sessions that some selected unit comes from.
* ``complete_coverage``: 1 if every gold session is present, else 0.
* ``turn_recall`` / ``turn_coverage``: the same at the turn / message level (a unit covers the
  turn ids in its ``source_ids``); ``None`` when the question has no gold turns.
* ``replaced``: share of the native top-``K`` that the selection does not keep.
* ``size``: number of units kept (``< K`` when adaptive stopping ends early or the pool is
  small).
* LongMemEval's names (its ``evaluate_retrieval``), at the session and the turn level:
  ``recall_all@K`` is ``complete_coverage`` / ``turn_coverage``; ``recall_any@K``
  (``session_recall_any`` / ``turn_recall_any``) is 1 when at least one gold item is kept;
  ``ndcg_any@K`` (``session_ndcg_any`` / ``turn_ndcg_any``) is the binary-relevance NDCG of the
  kept items in the order the policy ranks them (each session / turn counted at its first
  unit) with LongMemEval's discount: ``DCG = rel_1 + sum_{i >= 2} rel_i / log2(i)``, divided
  by the DCG of ``min(#gold, K)`` relevant items first.
* The multi-hop retrieval papers' ``recall@K`` (HippoRAG's "recall@5": the share of a
  question's gold passages among the top K, averaged) is ``session_recall`` when each passage
  is its own session (the document sets' paragraph units).

Per question and pool (:func:`pool_metrics`, the ceiling every policy shares): the same
recall and coverage with the whole pool of P kept.

Paired statistics compare per-question values of a policy with the baseline on the same
questions: mean difference, a seeded percentile bootstrap interval, and an exact two-sided
binomial test on the questions that differ (McNemar's exact test for 0/1 metrics, the sign
test otherwise). No SciPy needed.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np

__all__ = [
    "selection_metrics",
    "binomial_two_sided",
    "sign_test",
    "mcnemar_exact",
    "bootstrap_ci",
    "paired_comparison",
    "BINARY_METRICS",
    "PERCENT_METRICS",
    "LONGMEMEVAL_NAMES",
    "ndcg_any",
    "pool_metrics",
    "POOL_METRICS",
]

#: Metrics reported in percent (the others are plain means).
PERCENT_METRICS = ("session_recall", "complete_coverage", "turn_recall", "turn_coverage",
                   "replaced", "qa_accuracy", "session_recall_any", "session_ndcg_any",
                   "turn_recall_any", "turn_ndcg_any")
#: Our metric -> LongMemEval's name for it (its papers and leaderboards report these).
LONGMEMEVAL_NAMES = {
    "session_recall_any": "recall_any@k (session)", "complete_coverage": "recall_all@k (session)",
    "session_ndcg_any": "ndcg_any@k (session)", "turn_recall_any": "recall_any@k (turn)",
    "turn_coverage": "recall_all@k (turn)", "turn_ndcg_any": "ndcg_any@k (turn)",
}
#: What :func:`pool_metrics` gives: the pool ceiling (every candidate of P kept).
POOL_METRICS = ("session_recall", "complete_coverage", "turn_recall", "turn_coverage")
#: 0/1 per question: paired with McNemar's exact test.
BINARY_METRICS = ("complete_coverage", "turn_coverage", "qa_accuracy")


def selection_metrics(
    selected_sessions: Sequence[str],
    selected_turns: Iterable[str],
    gold_sessions: Sequence[str],
    gold_turns: Sequence[str],
    *,
    selected_uids: Sequence[str] = (),
    native_uids: Sequence[str] = (),
) -> dict:
    """Metrics of one selection against one question's gold evidence.

    Parameters
    ----------
    selected_sessions : sequence of str
        Session id of each selected unit.
    selected_turns : iterable of str
        Every turn id covered by the selected units.
    gold_sessions, gold_turns : sequence of str
        The question's gold evidence (``gold_sessions`` must be non-empty).
    selected_uids, native_uids : sequence of str
        The selection and the native top-K (same K), for ``replaced``.

    Returns
    -------
    dict
        ``session_recall``, ``complete_coverage``, ``turn_recall``, ``turn_coverage``
        (fractions in [0, 1] or None), ``replaced`` (fraction or None without a native top-K)
        and ``size``.
    """
    gs = set(gold_sessions)
    if not gs:
        raise ValueError("a question without gold sessions has no retrieval metrics")
    selected_sessions = list(selected_sessions)
    selected_turns = list(selected_turns)
    k = len(selected_uids) if selected_uids else len(selected_sessions)
    hit_s = len(gs & set(selected_sessions))
    out = {
        "session_recall": hit_s / len(gs),
        "complete_coverage": float(hit_s == len(gs)),
        "turn_recall": None,
        "turn_coverage": None,
        "replaced": None,
        "size": k,
        "session_recall_any": float(hit_s > 0),
        "session_ndcg_any": ndcg_any(selected_sessions, gs, k),
        "turn_recall_any": None,
        "turn_ndcg_any": None,
    }
    gt = set(gold_turns)
    if gt:
        hit_t = len(gt & set(selected_turns))
        out["turn_recall"] = hit_t / len(gt)
        out["turn_coverage"] = float(hit_t == len(gt))
        out["turn_recall_any"] = float(hit_t > 0)
        out["turn_ndcg_any"] = ndcg_any(selected_turns, gt, max(k, 1))
    if native_uids:
        nat = set(native_uids)
        out["replaced"] = len(nat - set(selected_uids)) / len(nat)
    return out


def pool_metrics(pool_sessions: Sequence[str], pool_turns: Iterable[str],
                 gold_sessions: Sequence[str], gold_turns: Sequence[str]) -> dict:
    """The pool's ceiling for one question: :data:`POOL_METRICS` with all P candidates kept
    (what no reordering of that pool can beat at any K).

    Parameters
    ----------
    pool_sessions : sequence of str, length P
        Session id of each pool unit.
    pool_turns : iterable of str
        Every turn id the pool's units cover.
    gold_sessions, gold_turns : sequence of str
        The question's gold evidence (``gold_sessions`` non-empty).
    """
    m = selection_metrics(pool_sessions, pool_turns, gold_sessions, gold_turns)
    return {k: m[k] for k in POOL_METRICS}


def ndcg_any(ranked: Sequence[str], gold: set, k: int) -> float:
    """Binary-relevance NDCG@k of ``ranked`` items (repeats count once, at their first rank),
    with LongMemEval's ``ndcg_any`` discount: ``DCG = rel_1 + sum_{i=2..k} rel_i / log2(i)``,
    over the DCG of ``min(len(gold), k)`` relevant items ranked first."""
    def gain(i: int) -> float:  # rank i + 1
        return 1.0 if i == 0 else 1.0 / math.log2(i + 1)

    items = list(dict.fromkeys(ranked))[:k]
    dcg = sum(gain(i) for i, x in enumerate(items) if x in gold)
    ideal = sum(gain(i) for i in range(min(len(gold), k)))
    return dcg / ideal if ideal > 0 else 0.0


def binomial_two_sided(k: int, n: int) -> float:
    """Exact two-sided p-value of ``k`` successes in ``n`` fair coin flips.

    ``p = min(1, 2 * P[X <= min(k, n - k)])`` with ``X ~ Binomial(n, 1/2)``; ``p = 1`` for
    ``n = 0``. Computed with integer arithmetic (``math.comb``), exact for any ``n``.
    """
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 1.0
    m = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(m + 1))
    p = 2 * tail / (1 << n) if 2 * m != n else 1.0
    return float(min(1.0, p))


def sign_test(diffs: Sequence[float]) -> dict:
    """Exact sign test on paired differences (zeros dropped).

    Returns
    -------
    dict
        ``wins`` (diff > 0), ``losses`` (diff < 0), ``ties``, ``p_value``.
    """
    d = np.asarray(diffs, dtype=np.float64)
    wins, losses = int((d > 0).sum()), int((d < 0).sum())
    return {"wins": wins, "losses": losses, "ties": int(d.size - wins - losses),
            "p_value": binomial_two_sided(wins, wins + losses), "test": "sign"}


def mcnemar_exact(a: Sequence[float], b: Sequence[float]) -> dict:
    """Exact McNemar test for paired 0/1 outcomes ``a`` (policy) and ``b`` (baseline).

    Returns
    -------
    dict
        ``wins`` (a=1, b=0), ``losses`` (a=0, b=1), ``ties`` (concordant), ``p_value``.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("paired outcomes must have the same length")
    for name, x in (("a", a), ("b", b)):
        if not np.isin(x, (0.0, 1.0)).all():
            raise ValueError(f"McNemar needs 0/1 outcomes; {name} has other values")
    wins = int(((a == 1) & (b == 0)).sum())
    losses = int(((a == 0) & (b == 1)).sum())
    return {"wins": wins, "losses": losses, "ties": int(a.size - wins - losses),
            "p_value": binomial_two_sided(wins, wins + losses), "test": "mcnemar-exact"}


def bootstrap_ci(diffs: Sequence[float], *, n_boot: int = 2000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``diffs`` (resampling questions).

    Parameters
    ----------
    diffs : sequence of float, length n
    n_boot : int
    level : float
        Two-sided coverage, e.g. 0.95.
    seed : int
        Seed of ``np.random.default_rng`` (the interval is reproducible).

    Returns
    -------
    (low, high) : tuple of float
        ``(nan, nan)`` for an empty input.
    """
    d = np.asarray(diffs, dtype=np.float64)
    if d.size == 0:
        return (math.nan, math.nan)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if int(n_boot) < 1:
        raise ValueError(f"n_boot (--bootstrap) must be >= 1, got {n_boot}")
    rng = np.random.default_rng(seed)
    means = np.empty(int(n_boot))
    step = max(1, 4_000_000 // max(d.size, 1))
    for s in range(0, int(n_boot), step):
        e = min(int(n_boot), s + step)
        idx = rng.integers(0, d.size, size=(e - s, d.size))
        means[s:e] = d[idx].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


def paired_comparison(policy: Sequence[float], baseline: Sequence[float], *, binary: bool,
                      n_boot: int = 2000, seed: int = 0, scale: float = 100.0) -> dict:
    """Policy minus baseline on the same questions.

    Parameters
    ----------
    policy, baseline : sequence of float, length n
        Per-question values (fractions for recall / coverage / accuracy).
    binary : bool
        0/1 outcomes: McNemar's exact test; else the sign test.
    scale : float
        Multiplies the mean difference and interval (100: percentage points).

    Returns
    -------
    dict
        ``n``, ``policy``, ``baseline`` (means, scaled), ``diff``, ``ci_low``, ``ci_high``,
        ``wins``, ``losses``, ``ties``, ``p_value``, ``test``.
    """
    a = np.asarray(policy, dtype=np.float64)
    b = np.asarray(baseline, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError("paired values must have the same length")
    d = a - b
    test = mcnemar_exact(a, b) if binary else sign_test(d)
    lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=seed)
    n = int(d.size)
    return {
        "n": n,
        "policy": float(a.mean() * scale) if n else math.nan,
        "baseline": float(b.mean() * scale) if n else math.nan,
        "diff": float(d.mean() * scale) if n else math.nan,
        "ci_low": lo * scale,
        "ci_high": hi * scale,
        **test,
    }
