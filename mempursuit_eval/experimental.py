"""Experimental read policies: measured, and behind the default in ``docs/results.md``.

They live with the harness that measured them, not in the core: the harness's plugin registers
them under ``experimental/NAME`` (``mempursuit selectors`` lists them apart), loaded like any
plugin the first time such a name is asked for. They are kept for comparison and research, not
for users to pick; their options and orders may change or go without notice.

Each starts from the native order and uses pursuit only to push down what the already-selected
memories explain:

* ``experimental/pursuit-rank``: the pick maximises ``prior_i - gamma * (G_S alpha)_i`` where
  ``prior`` is the native rank on the pool's cosine scale
  (:func:`mempursuit_core.pursuit.rank_prior`) and
  ``G_S alpha`` is each candidate's projection on the current convex reconstruction.
  ``gamma = 0`` is the native order; with a cosine order and ``gamma = 1`` it is the paper's
  rule.
* ``experimental/pursuit-anchor``: the native top ``ceil(frac * k)`` first, then the paper's
  rule.
* ``experimental/pursuit-joint``: the paper's rule on joint features ``[dense ; w * tf-idf]``
  (needs the ``sparse`` / ``query_sparse`` signals), optionally with the rank prior.
* ``experimental/pursuit-time``: ``pursuit-rank`` on features ``[dense ; w * onehot(time
  bucket)]`` with the query ``[q ; 0]``: memories from a period the reconstruction already
  draws on look explained. Buckets from :func:`mempursuit_core.signals.time_buckets`;
  without any, it is ``pursuit-rank``.
* ``experimental/native-dedup``: the native order with near-copies (cosine >= ``threshold``
  to a kept memory) moved behind the rest.
"""

from __future__ import annotations

import math

import numpy as np

from mempursuit_core.builtins import EXPERIMENTAL_PREFIX as PREFIX
from mempursuit_core.pursuit import rank_prior, select
from mempursuit_core.selectors import PoolSelector, Selection
from mempursuit_core.signals import time_buckets
from mempursuit_core.validation import unit_rows as _unit_rows

__all__ = ["AnchoredPursuit", "JointPursuit", "NativeDedup", "RankPriorPursuit", "TimePursuit",
           "PREFIX", "SELECTORS"]



def _result(res, **info) -> Selection:
    return Selection(order=res.order, weights=res.weights, stopped=res.stop_reason,
                     info={"losses": res.losses, "gaps": res.gaps, **info})


class RankPriorPursuit(PoolSelector):
    name = PREFIX + "pursuit-rank"
    description = "native rank (cosine scale) minus gamma x what the selected memories explain"

    def __init__(self, *, gamma: float = 0.5, keep: int = 1, ridge: float = 1e-10):
        self.gamma, self.keep, self.ridge = float(gamma), int(keep), float(ridge)

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        prior = rank_prior(q, M)
        res = select(q, M, k, ridge=self.ridge, prior=prior, gamma=self.gamma,
                     keep=min(self.keep, k))
        return _result(res)


class AnchoredPursuit(PoolSelector):
    name = PREFIX + "pursuit-anchor"
    description = "native top ceil(frac*k) kept, the rest by MemPursuit"

    def __init__(self, *, frac: float = 0.5, ridge: float = 1e-10):
        if not 0.0 <= frac <= 1.0:
            raise ValueError(f"frac must be in [0, 1], got {frac}")
        self.frac, self.ridge = float(frac), float(ridge)

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        keep = min(math.ceil(self.frac * k), k, M.shape[0])
        return _result(select(q, M, k, ridge=self.ridge, keep=keep))


class JointPursuit(PoolSelector):
    name = PREFIX + "pursuit-joint"
    description = "MemPursuit on [dense ; w * tf-idf] features (needs sparse signals)"

    def __init__(self, *, weight: float = 1.0, gamma: float | None = None, keep: int = 0,
                 ridge: float = 1e-10):
        self.weight, self.gamma, self.keep, self.ridge = float(weight), gamma, int(keep), float(ridge)

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        P = M.shape[0]
        sparse = None if signals is None else signals.get("sparse")
        qs = None if signals is None else signals.get("query_sparse")
        if sparse is None or qs is None:
            raise ValueError(f"{self.name} needs the 'sparse' and 'query_sparse' signals "
                             "(the framework's lexical features); none were given")
        S = np.asarray(sparse.toarray() if hasattr(sparse, "toarray") else sparse, dtype=np.float64)
        qs = np.asarray(qs.toarray() if hasattr(qs, "toarray") else qs, dtype=np.float64).ravel()
        if S.ndim != 2 or S.shape[0] != P or qs.shape[0] != S.shape[1]:
            raise ValueError(f"sparse signals have shapes {S.shape} and {qs.shape}; expected "
                             f"({P}, m) and (m,)")
        dense = _unit_rows(M)
        # Joint rows are normalised by the kernel; rows and query without lexical overlap keep
        # their dense part only.
        X = np.hstack([dense, self.weight * S])
        y = np.concatenate([q, self.weight * qs])
        prior = None
        if self.gamma is not None:
            prior = rank_prior(y, X)
        res = select(y, X, k, ridge=self.ridge, prior=prior,
                     gamma=1.0 if self.gamma is None else float(self.gamma),
                     keep=min(self.keep, k))
        return _result(res)




class TimePursuit(PoolSelector):
    name = PREFIX + "pursuit-time"
    description = "pursuit-rank on [dense ; w * onehot(time bucket)]: composes evidence across time"

    def __init__(self, *, weight: float = 1.0, gamma: float = 0.5, keep: int = 1,
                 bucket: str = "day", ridge: float = 1e-10):
        if bucket not in ("day", "exact"):
            raise ValueError(f"bucket must be 'day' or 'exact', got {bucket!r}")
        self.weight, self.gamma, self.keep = float(weight), float(gamma), int(keep)
        self.bucket, self.ridge = bucket, float(ridge)

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        P = M.shape[0]
        buckets = time_buckets(signals, P, self.bucket)
        dense = _unit_rows(M)
        if buckets is None or self.weight == 0.0:
            X, y = dense, q
        else:
            index = {b: j for j, b in enumerate(dict.fromkeys(buckets))}
            onehot = np.zeros((P, len(index)))
            onehot[np.arange(P), [index[b] for b in buckets]] = self.weight
            X, y = np.hstack([dense, onehot]), np.concatenate([q, np.zeros(len(index))])
        res = select(y, X, k, ridge=self.ridge, prior=rank_prior(y, X), gamma=self.gamma,
                     keep=min(self.keep, k))
        return _result(res, time_signal=buckets is not None)


class NativeDedup(PoolSelector):
    name = PREFIX + "native-dedup"
    description = "native order, near-copies (cosine >= threshold) of kept memories moved last"

    def __init__(self, *, threshold: float = 0.95):
        if not math.isfinite(float(threshold)):
            raise ValueError(f"threshold must be a finite cosine, got {threshold}")
        self.threshold = float(threshold)

    def _select(self, q, M, k, native_scores, signals) -> Selection:
        P = M.shape[0]
        U = _unit_rows(M)
        kept, later = [], []
        best = np.full(P, -np.inf)  # max cosine to a kept memory
        for i in range(P):
            if len(kept) >= k:
                break
            if best[i] >= self.threshold:
                later.append(i)
                continue
            kept.append(i)
            best = np.maximum(best, U @ U[i])
        order = (kept + later + list(range(len(kept) + len(later), P)))[:k]
        return Selection(order=np.asarray(order, dtype=np.intp))


#: The experimental selectors by registered name.
SELECTORS = {cls.name: cls for cls in (RankPriorPursuit, AnchoredPursuit, JointPursuit,
                                       TimePursuit, NativeDedup)}
