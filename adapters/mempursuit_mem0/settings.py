"""The adapter's settings: budget, pool size, read policy, failure mode (no Mem0 import here)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from mempursuit_core.adapter import DEFAULT_POLICY, DEFAULT_POOL, ReadOptions, did_you_mean

__all__ = ["MemPursuitSettings", "DEFAULT_POOL", "DEFAULT_POLICY"]


@dataclass(frozen=True)
class MemPursuitSettings(ReadOptions):
    """How a bound Mem0 ``Memory`` reads: the options every adapter takes
    (:class:`mempursuit_core.options.ReadOptions`), with the policy given by name.

    Parameters
    ----------
    k : int or None, default None
        Budget ``K``: how many memories a search returns. ``None`` uses the caller's ``top_k``;
        otherwise ``min(k, top_k)``.
    pool : int, default 200
        ``P``: how many candidates Mem0 ranks (with its own combined score, filters and
        threshold) before the policy reorders them. Raised to ``K`` when smaller.
    policy : str, default ``mempursuit_core.DEFAULT_POLICY`` ("centered-fusion")
        A registered selector name (``mempursuit_core.list_selectors()``): ``native`` (Mem0's
        own order, the "w/o" baseline), ``mempursuit`` (the paper's rule), ``mmr`` or any
        plugin's.
    policy_options : dict
        Keyword options for the selector factory (e.g. ``{"ridge": 1e-8}`` or ``{"lam": 0.7}``).
    strict : bool, default False
        False: when the adapter cannot read (a changed Mem0 internal, a store whose vectors it
        cannot fetch, a policy error) the search returns Mem0's native result and a warning
        is logged. True: the same cases raise :class:`mempursuit_mem0.search.AdapterError`.
    budget_tokens : int or None, default None
        A token budget beside ``k``: a search returns the longest prefix of the policy's order
        whose memories fit (:mod:`mempursuit_core.tokens`).
    """

    def __post_init__(self) -> None:
        if not isinstance(self.policy, str) or not self.policy:
            raise TypeError(f"policy must be a selector name (str), got {self.policy!r}")
        super().__post_init__()

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> "MemPursuitSettings":
        """Build from a config dict; unknown keys raise (a typo must not pass silently)."""
        values = dict(values or {})
        cls.check_keys(values, {f.name for f in fields(cls) if not f.name.startswith("_")})
        return cls(**values)

    @staticmethod
    def check_keys(values: Mapping[str, Any], known: set[str]) -> None:
        """Raise ``ValueError`` (one line, with a did-you-mean) for a key not in ``known``."""
        unknown = sorted(set(values) - known)
        if unknown:
            near = "".join(did_you_mean(name, known) for name in unknown)
            raise ValueError(
                f"unknown mempursuit setting(s) {unknown}{near}; known: {sorted(known)}"
            )
