"""The read options every framework adapter takes: the same names, defaults and checks.

==============  ===========================================================================
``k``           budget ``K``: how many memories a read returns (``None``: the framework's own
                ``top_k`` / ``limit``; with one, ``min(k, top_k)``)
``pool``        ``P``: how many candidates the framework ranks before the policy reorders
                them (default 200, raised to ``K`` when smaller)
``policy``      a registered selector name or a selector object (default
                :data:`mempursuit_core.DEFAULT_POLICY`; ``"native"`` is the framework's order)
``policy_options``  keyword options for the selector factory
``strict``      ``False``: when the adapter cannot read (a changed framework internal, missing
                vectors, a policy error) it logs a warning and returns the framework's native
                result; ``True``: it raises
``follow_timeout``  seconds the second read (:mod:`mempursuit_core.follow`) may take before
                the first read's order stands, with one warning (default 0.5; None: no limit)
``budget_tokens``  a token budget beside ``k``: the read returns the longest prefix of its
                order whose texts fit (:mod:`mempursuit_core.tokens`; default None: no budget)
==============  ===========================================================================
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Mapping

from .builtins import DEFAULT_POLICY
from .follow import DEFAULT_FOLLOW_TIMEOUT
from .selectors import NativeSelector
from .tokens import TokenBudgetSelector, check_budget_tokens
from .validation import check_int

__all__ = ["DEFAULT_POOL", "ReadOptions", "blank_query"]

#: The keywords :meth:`ReadOptions.build` takes itself, whatever the adapter's signature.
SHARED = ("k", "pool", "policy", "policy_options", "strict", "follow_timeout",
          "budget_tokens")

#: The candidate pool every adapter asks its framework for unless told otherwise.
DEFAULT_POOL = 200

@dataclass(frozen=True)
class ReadOptions:
    """Checked, immutable read options (see the module docstring for each field)."""

    k: int | None = None
    pool: int = DEFAULT_POOL
    policy: Any = DEFAULT_POLICY
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    strict: bool = False
    follow_timeout: float | None = DEFAULT_FOLLOW_TIMEOUT
    budget_tokens: int | None = None
    #: the selector, resolved once (a copy for another ``k`` keeps it: ``with_k``)
    _selector: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_int("k", self.k, allow_none=True)
        check_budget_tokens(self.budget_tokens)
        check_int("pool", self.pool)
        if self._selector is not None:  # a copy (with_k): checked and resolved already
            pass
        elif isinstance(self.policy, str):
            if not self.policy:
                raise ValueError("policy must be a selector name or a selector, got ''")
            from .plugins import UnknownNameError, known_selector, list_selector_factories

            # a misspelt name fails here, not at the first read; a built-in name loads no plugin
            if not known_selector(self.policy):
                raise UnknownNameError("selector", self.policy, list(list_selector_factories()))
        elif not callable(getattr(self.policy, "select", None)):
            raise TypeError(f"policy must be a selector name or a selector, got {self.policy!r}")
        if not isinstance(self.policy_options, Mapping):
            raise TypeError("policy_options must be a dict of selector options, got "
                            f"{type(self.policy_options).__name__}")
        if not isinstance(self.strict, bool):
            raise TypeError(f"strict must be True or False, got {self.strict!r}")
        timeout = self.follow_timeout
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(
                timeout, (int, float)) or not timeout > 0 or timeout == float("inf")):
            raise ValueError("follow_timeout must be a number of seconds > 0, or None for no "
                             f"limit, got {timeout!r}")
        object.__setattr__(self, "policy_options", dict(self.policy_options))
        if self._selector is None:  # resolved here, once: a bad name or option fails at set-up
            object.__setattr__(self, "_selector", self._resolve())

    def _resolve(self):
        from .plugins import check_selector_options, resolve_selector

        if isinstance(self.policy, str):  # a misspelt option fails in one line
            check_selector_options(self.policy, self.policy_options)
        selector = resolve_selector(self.policy, **self.policy_options)
        if self.budget_tokens is None:
            return selector
        return TokenBudgetSelector(selector, self.budget_tokens)

    @classmethod
    def build(cls, where: str, *, k: Any = None, pool: Any = None, policy: Any = None,
              policy_options: Mapping[str, Any] | None = None, strict: Any = None,
              follow_timeout: Any = DEFAULT_FOLLOW_TIMEOUT, budget_tokens: Any = None,
              own: Any = (),
              **options: Any) -> "ReadOptions":
        """Options from an adapter's keyword arguments (``None`` means the default); any other
        keyword is a selector option (as ``policy_options``).

        ``own`` is the adapter's own parameters (names, or callables such as its ``__init__``
        whose signatures give them): a keyword that neither it nor the policy takes is one
        ``TypeError`` naming both sets, with a did-you-mean (``documnet_store`` ->
        ``document_store``).

        Raises
        ------
        TypeError, ValueError
            A bad option, its message starting with ``where`` (the adapter's name)."""
        name = DEFAULT_POLICY if policy is None else policy
        if options:
            _check_keywords(where, name, options, own)
        try:
            return cls(
                k=k,
                pool=DEFAULT_POOL if pool is None else pool,
                policy=name,
                policy_options={**(policy_options or {}), **options},
                strict=False if strict is None else strict,
                follow_timeout=follow_timeout,
                budget_tokens=budget_tokens,
            )
        except (TypeError, ValueError) as exc:
            if type(exc) not in (TypeError, ValueError) or str(exc).startswith(where):
                raise
            raise type(exc)(f"{where}: {exc}") from None

    @property
    def is_native(self) -> bool:
        """Whether the policy is the framework's own order: the name ``"native"`` or the
        registered :class:`~mempursuit_core.selectors.NativeSelector` itself (not a subclass,
        which may change the order). An adapter then passes the read through untouched."""
        if isinstance(self.policy, str):
            return self.policy == "native"
        return type(self.policy) is NativeSelector

    def selector(self):
        """The selector these options name, resolved once when the options were made (the same
        object at every call); with ``budget_tokens``, wrapped to carry it
        (:class:`~mempursuit_core.tokens.TokenBudgetSelector`)."""
        return self._selector

    def with_k(self, k: int | None) -> "ReadOptions":
        """These options with budget ``k``, the same selector (never resolved again)."""
        return dataclasses.replace(self, k=k)

    def sizes(self, top_k: int, offset: int = 0) -> tuple[int, int]:
        """``(K, P)`` for a read asked for ``top_k`` results after ``offset``: the one rule
        every adapter applies, ``K = min(k, top_k)`` and ``P = max(pool, offset + K)``."""
        k = self.budget(top_k)
        return k, self.pool_size(offset + k)

    def budget(self, top_k: int) -> int:
        """``K`` for a read asked for ``top_k`` results."""
        return top_k if self.k is None else min(self.k, top_k)

    def pool_size(self, budget: int) -> int:
        """``P`` for a budget ``K``."""
        return max(self.pool, budget)


def _check_keywords(where: str, policy: Any, options: Mapping[str, Any], own: Any) -> None:
    """An adapter's keywords beyond its own are the policy's options: refuse, in one line, a
    name the policy does not take (a policy name not registered is refused after this)."""
    from .plugins import check_selector_options, known_selector

    parts = [own] if callable(own) or isinstance(own, str) else list(own)
    names = tuple(dict.fromkeys([*(name for part in parts for name in (
        _parameter_names(part) if callable(part) else (part,))), *SHARED]))
    if isinstance(policy, str):
        if policy and known_selector(policy):
            check_selector_options(policy, options, where=where, own=names)
        return
    from .plugins import did_you_mean

    name = next(iter(options))
    valid = f"{', '.join(sorted(names))} ({where}); " if names else ""
    raise TypeError(f"{where}: unknown option {name!r}{did_you_mean(name, names)}; valid: "
                    f"{valid}a selector object takes no options")


def _parameter_names(func: Any) -> tuple[str, ...]:
    """The names ``func`` takes by keyword (``self`` left out)."""
    import inspect

    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in params if p.name != "self"
                 and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def blank_query(query: Any, where: str, *, log: logging.Logger | None = None) -> bool:
    """Whether ``query`` is an empty or blank (whitespace-only) string, saying so in one WARNING.

    There is nothing to choose by: the adapter then returns the framework's own result for the
    read, unreordered (as with ``policy="native"``). Anything but a string (``None``, a vector,
    a framework's query object) is not blank here.

    Parameters
    ----------
    query : Any
        The read's query text.
    where : str
        The adapter's name, starting the warning.
    log : Logger, optional
        Where the warning goes (default the ``mempursuit`` logger).
    """
    if not isinstance(query, str) or query.strip():
        return False
    (log or logging.getLogger("mempursuit")).warning(
        "mempursuit: %s: the query is %s, so there is nothing to choose by: the framework's own "
        "order is returned; pass the question's text", where, "empty" if not query else "blank")
    return True
