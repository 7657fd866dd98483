"""Compiled kernels. They see validated, C-contiguous arrays and scalars only.

The public, validating API is :mod:`mempursuit_core.pursuit`. Every dot product is accumulated
in float64, whatever the storage dtype (float32 sums carry ~1e-7 errors, a thousand times the
ridge, and reorder near-duplicate pools).
"""

import numpy as np
from numba import njit, prange

# Reassociation lets LLVM vectorise the float64 reductions; no finite-math assumptions, because
# non-finite inputs must be detected, not optimised away.
_FM = {"reassoc", "contract"}

# Status codes returned by the kernels (mapped to ValueErrors in pursuit.py).
OK = 0
BAD_ROW = 1  # a candidate row with zero or non-finite norm; its index is reported

# Stop reasons.
STOP_BUDGET = 0  # k (or P) memories selected
STOP_ADAPTIVE = 1  # patience steps in a row with relative improvement <= tau

_PIVOT_FLOOR = 1e-300
# |M_i|^2 inside (_NN_LOW, _NN_HIGH) is computed directly; outside, with the row rescaled.
_NN_LOW = 1e-280
_NN_HIGH = 1e280
# Cosine at or above 1 - DUP_TOL: the same direction as a selected memory (a copy).
DUP_TOL = 1e-12


@njit(cache=True, fastmath=_FM, nogil=True)
def _scores_and_norms(M, q, b, inv_norm):
    """b_i = <M_i, q> / |M_i| (q already unit, float64) and 1/|M_i|; returns first bad row or -1."""
    P, d = M.shape
    bad = -1
    for i in range(P):
        dq = 0.0
        nn = 0.0
        for l in range(d):
            v = np.float64(M[i, l])
            dq += v * q[l]
            nn += v * v
        if _NN_LOW < nn < _NN_HIGH:
            norm = np.sqrt(nn)
        else:
            # |M_i|^2 under- or overflows (or the row is bad): max|M_i| times the norm of
            # M_i / max|M_i| is the same norm without leaving the float64 range.
            m = 0.0
            for l in range(d):
                m = max(m, abs(np.float64(M[i, l])))
            norm = 0.0
            if m > 0.0 and np.isfinite(m):
                acc = 0.0
                for l in range(d):
                    v = np.float64(M[i, l]) / m
                    acc += v * v
                norm = m * np.sqrt(acc)
        s = 1.0 / norm if norm > 0.0 else 0.0
        if not (s > 0.0) or not np.isfinite(s) or not np.isfinite(norm) or not np.isfinite(dq):
            if bad < 0:
                bad = i
            inv_norm[i] = 0.0
            b[i] = 0.0
        else:
            inv_norm[i] = s
            b[i] = dq * s
    return bad


@njit(cache=True, fastmath=_FM, nogil=True)
def _gram_column(M, inv_norm, j, x, out):
    """out_i = <M_i, M_j> / (|M_i| |M_j|), one pass over M; x is a float64 work vector of size d."""
    P, d = M.shape
    s = inv_norm[j]
    for l in range(d):  # the unit M_j: products with any finite row then stay in range
        x[l] = np.float64(M[j, l]) * s
    for i in range(P):
        acc = 0.0
        for l in range(d):
            acc += np.float64(M[i, l]) * x[l]
        out[i] = acc * inv_norm[i]


@njit(cache=True, nogil=True)
def _chol_append(L, n, h_col, h_diag):
    """Append one row/column to the Cholesky factor L[:n, :n] of H_FF; False if not positive."""
    for r in range(n):
        acc = h_col[r]
        for c in range(r):
            acc -= L[n, c] * L[r, c]
        L[n, r] = acc / L[r, r]
    piv = h_diag
    for c in range(n):
        piv -= L[n, c] * L[n, c]
    # Exact duplicates give pivots of about 2 * ridge; a pivot far below that is a dependent
    # column (ridge = 0): refuse it rather than divide by rounding noise.
    if not (piv > 1e-14 * h_diag) or piv < _PIVOT_FLOOR:
        return False
    L[n, n] = np.sqrt(piv)
    return True


@njit(cache=True, nogil=True)
def _chol_solve(L, n, rhs, out, tmp):
    for r in range(n):
        acc = rhs[r]
        for c in range(r):
            acc -= L[r, c] * tmp[c]
        tmp[r] = acc / L[r, r]
    for r in range(n - 1, -1, -1):
        acc = tmp[r]
        for c in range(r + 1, n):
            acc -= L[c, r] * out[c]
        out[r] = acc / L[r, r]


@njit(cache=True, nogil=True)
def _refactor(H, free_list, nf, L):
    """Cholesky of H[free, free] from scratch; returns how many leading entries were accepted."""
    hc = np.empty(nf)
    for a in range(nf):
        fa = free_list[a]
        for r in range(a):
            hc[r] = H[free_list[r], fa]
        if not _chol_append(L, a, hc, H[fa, fa]):
            return a
    return nf


@njit(cache=True, nogil=True)
def _simplex_qp(H, bS, t, alpha, free_list, L, work):
    """Solve min 1/2 a'Ha - bS'a, a >= 0, sum a = 1 over the first t entries; warm start alpha.

    Primal active-set method: alpha must be feasible on entry (the previous optimum with a zero
    appended for the new entry). Returns the number of free-set changes (for diagnostics).
    """
    x = work[0]
    y = work[1]
    z = work[2]
    tmp = work[3]
    rhs = work[4]
    ones = work[5]
    blocked_after_release = work[6]  # 1.0 if released then blocked again in this solve
    for i in range(t):
        blocked_after_release[i] = 0.0
        ones[i] = 1.0
    released = np.zeros(t, dtype=np.bool_)
    nf = 0
    for i in range(t):
        if alpha[i] > 0.0 or i == t - 1:
            free_list[nf] = i
            nf += 1
    nf_ok = _refactor(H, free_list, nf, L)
    while nf_ok < nf:
        # A dependent column (only possible with ridge = 0): keep it at zero, blocked.
        bad = free_list[nf_ok]
        alpha[bad] = 0.0
        blocked_after_release[bad] = 1.0
        for a in range(nf_ok, nf - 1):
            free_list[a] = free_list[a + 1]
        nf -= 1
        nf_ok = _refactor(H, free_list, nf, L)
    changes = 0
    max_iter = 4 * t + 20
    for _ in range(max_iter):
        for a in range(nf):
            rhs[a] = bS[free_list[a]]
        _chol_solve(L, nf, rhs, x, tmp)
        _chol_solve(L, nf, ones, y, tmp)
        sx = 0.0
        sy = 0.0
        for a in range(nf):
            sx += x[a]
            sy += y[a]
        mu = (1.0 - sx) / sy
        feasible = True
        for a in range(nf):
            z[a] = x[a] + mu * y[a]
            if z[a] <= 0.0:
                feasible = False
        if feasible:
            for i in range(t):
                alpha[i] = 0.0
            for a in range(nf):
                alpha[free_list[a]] = z[a]
            # Multipliers of the entries held at zero: lam_i = (H a - b)_i - mu >= 0 at optimum.
            worst = -1
            worst_val = 0.0
            for i in range(t):
                # Free entries are exactly those with alpha > 0 here (z > 0 on the free set).
                if alpha[i] > 0.0 or blocked_after_release[i] != 0.0:
                    continue
                g = -bS[i] - mu
                for c in range(t):
                    g += H[i, c] * alpha[c]
                if g < -1e-15 * (1.0 + abs(mu)) and g < worst_val:
                    worst_val = g
                    worst = i
            if worst < 0:
                return changes
            # Release the most violated entry into the free set.
            for r in range(nf):
                rhs[r] = H[free_list[r], worst]
            if _chol_append(L, nf, rhs, H[worst, worst]):
                free_list[nf] = worst
                nf += 1
                released[worst] = True
            else:
                blocked_after_release[worst] = 1.0
            changes += 1
        else:
            # Step from alpha towards z until the first free entry hits zero; block it.
            step = 1.0
            hit = -1
            for a in range(nf):
                i = free_list[a]
                if z[a] <= 0.0:
                    denom = alpha[i] - z[a]
                    ratio = alpha[i] / denom if denom > 0.0 else 0.0
                    if ratio < step:
                        step = ratio
                        hit = a
            if hit < 0:
                hit = 0
                for a in range(nf):
                    if z[a] <= 0.0:
                        hit = a
                        break
                step = 0.0
            for a in range(nf):
                i = free_list[a]
                alpha[i] += step * (z[a] - alpha[i])
            hi = free_list[hit]
            alpha[hi] = 0.0
            if released[hi]:
                blocked_after_release[hi] = 1.0  # guard against release/block cycling
            for a in range(hit, nf - 1):
                free_list[a] = free_list[a + 1]
            nf -= 1
            # Entries driven to (numerically) zero by the step leave the free set too.
            a = 0
            while a < nf:
                i = free_list[a]
                if alpha[i] <= 0.0:
                    alpha[i] = 0.0
                    for c in range(a, nf - 1):
                        free_list[c] = free_list[c + 1]
                    nf -= 1
                else:
                    a += 1
            nf_ok = _refactor(H, free_list, nf, L)
            nf = nf_ok
            changes += 1
            if nf == 0:
                # Degenerate: put all weight back on the best single entry.
                best = 0
                for i in range(1, t):
                    if H[i, i] - 2.0 * bS[i] < H[best, best] - 2.0 * bS[best]:
                        best = i
                for i in range(t):
                    alpha[i] = 0.0
                alpha[best] = 1.0
                free_list[0] = best
                nf = _refactor(H, free_list, 1, L)
    return changes


@njit(cache=True, fastmath=_FM, nogil=True)
def _pursuit_one(M, q, k, ridge, adaptive, tau, patience, prior, gamma, n_fixed,
                 order, weights, losses, gaps):
    """Fully corrective residual pursuit on one pool. Returns (n_selected, stop, bad_row).

    M : (P, d) float32/float64, q : (d,) float64 unit; outputs have length >= min(k, P).
    The paper's rule picks argmax u (``prior`` empty, ``n_fixed`` 0). With a ``prior`` (P,),
    the pick maximises ``prior_i - gamma * (G_S alpha)_i``: the prior relevance minus the part
    of each candidate the current reconstruction already explains (``u = b - G_S alpha``).
    The first ``n_fixed`` picks are the native positions ``0 .. n_fixed - 1``.
    """
    P, d = M.shape
    n = min(k, P)
    b = np.empty(P)
    inv_norm = np.empty(P)
    bad = _scores_and_norms(M, q, b, inv_norm)
    if bad >= 0:
        return 0, STOP_BUDGET, bad
    cols = np.empty((n, P))  # Gram columns of the selected memories only: O(P K)
    H = np.empty((n, n))
    bS = np.empty(n)
    alpha = np.zeros(n)
    u = b.copy()
    taken = np.zeros(P, dtype=np.bool_)
    deferred = np.zeros(P, dtype=np.bool_)
    x = np.empty(d)
    L = np.zeros((n, n))
    free_list = np.empty(n, dtype=np.int64)
    work = np.empty((7, n))
    plain = prior.shape[0] == 0
    prev_loss = 1.0  # |q|^2
    flat = 0
    stop = STOP_BUDGET
    t = 0
    while t < n:
        # Pick: best residual score, ties to the lowest native position. A copy of a selected
        # memory (same direction) cannot change the reconstruction; its score exceeds the
        # others only by ridge terms (lambda * alpha), so it is deferred until nothing else is
        # left, and deferred copies then come in native order.
        j = -1
        while True:
            j = -1
            best = -np.inf
            if t < n_fixed:
                j = t
                break
            if plain:
                for i in range(P):
                    if not taken[i] and not deferred[i] and u[i] > best:
                        best = u[i]
                        j = i
            else:
                for i in range(P):
                    if not taken[i] and not deferred[i]:
                        v = prior[i] + gamma * (u[i] - b[i])
                        if v > best:
                            best = v
                            j = i
            if j < 0:
                break
            copy = False
            for s in range(t):
                if cols[s, j] >= 1.0 - DUP_TOL:
                    copy = True
                    break
            if not copy:
                break
            deferred[j] = True
        if j < 0:
            j = 0
            while taken[j]:
                j += 1
        taken[j] = True
        order[t] = j
        _gram_column(M, inv_norm, j, x, cols[t])
        for s in range(t + 1):
            g = cols[t, order[s]]
            H[t, s] = g
            H[s, t] = g
        H[t, t] = cols[t, j] + ridge
        bS[t] = b[j]
        alpha[t] = 0.0
        t += 1
        if t == 1:
            alpha[0] = 1.0
        else:
            _simplex_qp(H, bS, t, alpha, free_list, L, work)
        # u = b - G[:, S] alpha, the correlation of every candidate with the residual.
        for i in range(P):
            u[i] = b[i]
        for s in range(t):
            a = alpha[s]
            if a != 0.0:
                col = cols[s]
                for i in range(P):
                    u[i] -= a * col[i]
        # Loss |q - M_S' alpha|^2 = 1 - 2 a'b_S + a'G_SS a (ridge excluded).
        quad = 0.0
        lin = 0.0
        an2 = 0.0
        for s in range(t):
            lin += alpha[s] * bS[s]
            an2 += alpha[s] * alpha[s]
            acc = 0.0
            for c in range(t):
                g = H[s, c] - (ridge if s == c else 0.0)
                acc += g * alpha[c]
            quad += alpha[s] * acc
        loss = 1.0 - 2.0 * lin + quad
        if loss < 0.0:
            loss = 0.0
        losses[t - 1] = loss
        # Frank-Wolfe certificate: max_{m not in S} u_m - (a'u_S - ridge |a|^2), floored at 0.
        nu = lin - quad - ridge * an2
        umax = -np.inf
        for i in range(P):
            if not taken[i] and u[i] > umax:
                umax = u[i]
        gap = umax - nu
        gaps[t - 1] = gap if gap > 0.0 else 0.0
        if adaptive:
            rel = (prev_loss - loss) / max(prev_loss, 1e-12)
            flat = flat + 1 if rel <= tau else 0
            if flat >= patience:
                prev_loss = loss
                stop = STOP_ADAPTIVE
                break
        prev_loss = loss
    for s in range(t):
        weights[s] = alpha[s]
    return t, stop, -1


@njit(cache=True, parallel=True, nogil=True)
def _pursuit_batch(pools, Q, k, ridge, adaptive, tau, patience, priors, gamma, n_fixed,
                   order, weights, losses, gaps, n_sel, stop, bad):
    """Query b uses ``pools[b]`` (a typed list of C-contiguous arrays, not copied) and
    ``priors[b]`` (empty when none); parallel over queries."""
    B = Q.shape[0]
    for b in prange(B):
        bi = np.int64(b)  # typed-list indexing wants a signed index
        ns, st, br = _pursuit_one(pools[bi], Q[bi], k, ridge, adaptive, tau, patience,
                                  priors[bi], gamma, n_fixed,
                                  order[bi], weights[bi], losses[bi], gaps[bi])
        n_sel[bi] = ns
        stop[bi] = st
        bad[bi] = br
