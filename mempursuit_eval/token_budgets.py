"""Complete coverage at equal tokens (``mempursuit eval --budget-tokens 500 1000 2000``).

A read with a token budget ``B`` keeps the longest prefix of its order whose units count at
most ``B`` tokens (:mod:`mempursuit_core.tokens`: the same counter and the same rule as an
adapter's ``budget_tokens=``). Coverage only grows along an order, so a question is completely
covered at ``B`` exactly when the tokens of the shortest covering prefix (its
``to_complete``) are at most ``B``: each policy's order over the whole pool (``K = P``) is
scored once per question, and every budget is read off it.

Per question and policy the record keeps ``to_complete`` (session level),
``to_complete_turns`` (turn level; None without turn evidence or when the pool never covers
it), ``size[B]`` (how many units the prefix at ``B`` keeps) and ``used[B]`` (the tokens they
count). The summary's ``token_budgets``
gives, per policy and budget, complete coverage (session / turn, percent), the mean tokens
spent, the paired difference with ``native`` (exact McNemar p) and, on the questions both
orders cover within the pool, the median tokens each needs to cover them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from mempursuit_core.tokens import check_budget_tokens, fit_budget, token_counter

from .metrics import paired_comparison

__all__ = ["add_token_budgets", "check_budgets", "summarise_token_budgets"]


def check_budgets(budgets: Sequence[Any]) -> tuple[int, ...]:
    """The budgets, sorted and distinct; a bad one raises one line naming the flag."""
    return tuple(sorted({check_budget_tokens(b, "--budget-tokens") for b in budgets}))


def _to_complete(cum: np.ndarray, covered_at: int | None) -> int | None:
    return None if covered_at is None else int(cum[covered_at])


def _first_covering(steps: Sequence[set], gold: set) -> int | None:
    """The index of the unit whose prefix first covers ``gold`` (None: never)."""
    if not gold:
        return None
    seen: set = set()
    for i, got in enumerate(steps):
        seen |= got
        if gold <= seen:
            return i
    return None


def add_token_budgets(records: list[dict], orders: Mapping[str, list[np.ndarray]],
                      pool_units: list[list[Any]], budgets: Sequence[int],
                      counts: dict[str, int]) -> None:
    """Put each scored record's ``token_budget`` entry in place.

    Parameters
    ----------
    records : list of dict
        The batch's question records (:func:`mempursuit_eval.stages.score`).
    orders : mapping
        ``orders[policy][i]``: the policy's order of pool ``i`` at ``K = P``.
    pool_units : list of list of MemoryUnit
        Pool ``i``'s units (fetched ones after the pool).
    budgets : sequence of int
    counts : dict
        Unit id -> tokens, filled as units are first seen.
    """
    counter = token_counter()
    for i, rec in enumerate(records):
        if not rec.get("gold_sessions"):
            continue
        units = pool_units[i]
        new = [u for u in units if u.uid not in counts]
        for u, n in zip(new, counter.counts([u.text for u in new])):
            counts[u.uid] = n
        gold_s, gold_t = set(rec["gold_sessions"]), set(rec.get("gold_turns") or ())
        entry = rec.setdefault("token_budget", {})
        for name, per_pool in orders.items():
            sel = [units[j] for j in per_pool[i]]
            tokens = [counts[u.uid] for u in sel]
            cum = np.cumsum(tokens) if tokens else np.zeros(0, dtype=np.int64)
            at_s = _first_covering([{u.session_id} for u in sel], gold_s)
            at_t = _first_covering([set(u.source_ids) for u in sel], gold_t)
            sizes = {str(b): fit_budget(tokens, b) for b in budgets}
            entry[name] = {
                "to_complete": _to_complete(cum, at_s),
                "to_complete_turns": _to_complete(cum, at_t),
                "size": sizes,
                "used": {b: int(cum[n - 1]) if n else 0 for b, n in sizes.items()},
            }


def _covered(to_complete: int | None, budget: int) -> float:
    return float(to_complete is not None and to_complete <= budget)


def summarise_token_budgets(records: list[dict], policies: Sequence[str],
                            budgets: Sequence[int], *, baseline: str = "native",
                            n_boot: int = 2000, seed: int = 0) -> dict:
    """The ``token_budgets`` part of the summary (see the module docstring)."""
    rows = [r["token_budget"] for r in records if "token_budget" in r]
    out: dict[str, Any] = {"budgets": list(budgets), "tokenizer": token_counter().name,
                           "n": len(rows), "results": {}, "paired": {}, "to_complete": {}}
    turns = [r["token_budget"] for r in records if "token_budget" in r and r.get("gold_turns")]
    for name in policies:
        out["results"][name] = {}
        for b in budgets:
            s = [_covered(r[name]["to_complete"], b) for r in rows]
            t = [_covered(r[name]["to_complete_turns"], b) for r in turns]
            out["results"][name][str(b)] = {
                "complete_coverage": 100.0 * float(np.mean(s)) if s else None,
                "turn_coverage": 100.0 * float(np.mean(t)) if t else None,
                "tokens_mean": float(np.mean([r[name]["used"][str(b)] for r in rows]))
                if rows else None,
            }
        both = [(r[name]["to_complete"], r[baseline]["to_complete"]) for r in rows
                if r[name]["to_complete"] is not None and r[baseline]["to_complete"] is not None]
        out["to_complete"][name] = {
            "n": len(both),
            "median": float(np.median([a for a, _ in both])) if both else None,
            "median_native": float(np.median([b for _, b in both])) if both else None,
            "fewer": sum(a < b for a, b in both), "more": sum(a > b for a, b in both),
        }
        if name == baseline:
            continue
        out["paired"][name] = {}
        for b in budgets:
            out["paired"][name][str(b)] = {
                "session": paired_comparison(
                    [_covered(r[name]["to_complete"], b) for r in rows],
                    [_covered(r[baseline]["to_complete"], b) for r in rows],
                    binary=True, n_boot=n_boot, seed=seed),
                "turn": paired_comparison(
                    [_covered(r[name]["to_complete_turns"], b) for r in turns],
                    [_covered(r[baseline]["to_complete_turns"], b) for r in turns],
                    binary=True, n_boot=n_boot, seed=seed) if turns else None,
            }
    return out
