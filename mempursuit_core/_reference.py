"""A slow, plain-numpy MemPursuit: the oracle for tests and the baseline for the benchmark.

It follows the published implementation's structure: the full ``P x P`` Gram matrix up front,
one Python-level step per pick, and an exact simplex QP refit, solved here by a cold-started
active set on the KKT system (a different algorithm from the compiled kernel's warm start).
"""

from __future__ import annotations

import numpy as np


def simplex_qp(H: np.ndarray, b: np.ndarray, tol: float = 1e-13) -> np.ndarray:
    """Exact ``argmin 1/2 a'Ha - b'a`` over the probability simplex (H positive definite).

    Cold-started primal active set: start from the best vertex, solve the equality-constrained
    problem on the free set through the full KKT system, step back to feasibility, release the
    entry with the most negative multiplier.
    """
    n = len(b)
    start = int(np.argmin(0.5 * np.diag(H) - b))
    a = np.zeros(n)
    a[start] = 1.0
    free = [start]
    for _ in range(10 * n + 50):
        F = np.array(sorted(free))
        m = len(F)
        kkt = np.zeros((m + 1, m + 1))
        kkt[:m, :m] = H[np.ix_(F, F)]
        kkt[:m, m] = kkt[m, :m] = 1.0
        sol = np.linalg.solve(kkt, np.concatenate([b[F], [1.0]]))
        z, mu = sol[:m], -sol[m]
        if np.all(z > 0):
            a[:] = 0.0
            a[F] = z
            lam = H @ a - b - mu
            lam[F] = np.inf
            i = int(np.argmin(lam))
            if lam[i] >= -tol * (1.0 + abs(mu)):
                return a
            free.append(i)
        else:
            neg = z <= 0
            ratios = np.where(neg, a[F] / np.where(neg, a[F] - z, 1.0), np.inf)
            h = int(np.argmin(ratios))
            a[F] += ratios[h] * (z - a[F])
            a[F[h]] = 0.0
            free = [f for f in F if a[f] > 0]
            if not free:
                free = [int(F[h])]
                a[:] = 0.0
                a[F[h]] = 1.0
    raise RuntimeError("reference simplex QP did not converge")


def select_reference(query, candidates, k, *, ridge=1e-10, adaptive=False, tau=1e-5,
                     patience=2, prior=None, gamma=1.0, keep=0, tie_margins=False):
    """Plain-numpy MemPursuit. Returns ``(order, weights, losses, gaps, margins)``.

    With ``prior`` (P,) the pick maximises ``prior_i - gamma * (G_S alpha)_i`` instead of the
    residual correlation; the first ``keep`` picks are the positions ``0 .. keep - 1``.

    ``margins[t]`` is the score gap between step ``t``'s pick and the runner-up (inf when no
    runner-up): where it is tiny, the choice is a numerical tie and orders may legitimately
    differ between implementations.
    """
    M = np.asarray(candidates, dtype=np.float64)
    M = M / np.linalg.norm(M, axis=1, keepdims=True)
    q = np.asarray(query, dtype=np.float64)
    q = q / np.linalg.norm(q)
    P = M.shape[0]
    G = M @ M.T  # the full P x P Gram matrix, as published
    b = M @ q
    n = min(k, P)
    order, losses, gaps, margins = [], [], [], []
    alpha = np.zeros(0)
    u = b.copy()
    prev, flat = 1.0, 0
    for _ in range(n):
        if len(order) < keep:
            j = len(order)
            order.append(j)
            margins.append(np.inf)
            S = np.array(order)
            alpha, r, loss = _refit(G, M, q, b, S, ridge)
            u = M @ r
            losses.append(loss)
            gaps.append(_gap(u, alpha, S, ridge))
            prev = loss
            continue
        # G_S alpha = b - u: what the current reconstruction explains of each candidate
        score = u if prior is None else np.asarray(prior, dtype=np.float64) - gamma * (b - u)
        masked = np.where(np.isin(np.arange(P), order), -np.inf, score)
        if order:  # copies of selected memories are deferred (see _kernel.DUP_TOL)
            copies = (G[:, order].max(axis=1) >= 1.0 - 1e-12) & np.isfinite(masked)
            if copies.all() or not np.isfinite(masked[~copies]).any():
                masked = np.where(copies, -np.arange(P, dtype=float), -np.inf)
            else:
                masked = np.where(copies, -np.inf, masked)
        j = int(np.argmax(masked))
        rest = np.delete(masked, j)
        margins.append(masked[j] - rest.max() if rest.size and np.isfinite(rest.max()) else np.inf)
        order.append(j)
        S = np.array(order)
        alpha, r, loss = _refit(G, M, q, b, S, ridge)
        u = M @ r
        losses.append(loss)
        gaps.append(_gap(u, alpha, S, ridge))
        if adaptive:
            flat = flat + 1 if (prev - loss) / max(prev, 1e-12) <= tau else 0
            prev = loss
            if flat >= patience:
                break
        prev = loss
    out = (np.array(order, dtype=np.intp), alpha, np.array(losses), np.array(gaps),
           np.array(margins))
    return out if tie_margins else out[:4]


def _refit(G, M, q, b, S, ridge):
    alpha = simplex_qp(G[np.ix_(S, S)] + ridge * np.eye(len(S)), b[S])
    r = q - M[S].T @ alpha
    return alpha, r, float(r @ r)


def _gap(u, alpha, S, ridge):
    """The Frank-Wolfe certificate: best outside score minus the simplex value."""
    nu = float(alpha @ u[S]) - ridge * float(alpha @ alpha)
    outside = np.delete(u, S)
    return max(0.0, float(outside.max()) - nu) if outside.size else 0.0
