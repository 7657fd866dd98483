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
==============  ===========================================================================
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

from .builtins import DEFAULT_POLICY
from .selectors import NativeSelector
from .validation import check_int

__all__ = ["DEFAULT_POOL", "ReadOptions", "LegacyOptionNames"]

#: The candidate pool every adapter asks its framework for unless told otherwise.
DEFAULT_POOL = 200

# Names the adapters took before they shared one surface: {old: (new, how the value maps)}.
_LEGACY = {
    "pool_size": ("pool", lambda v: v),
    "selector": ("policy", lambda v: v),
    "fallback": ("strict", lambda v: not v),
}


@dataclass(frozen=True)
class ReadOptions:
    """Checked, immutable read options (see the module docstring for each field)."""

    k: int | None = None
    pool: int = DEFAULT_POOL
    policy: Any = DEFAULT_POLICY
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    strict: bool = False

    def __post_init__(self) -> None:
        check_int("k", self.k, allow_none=True)
        check_int("pool", self.pool)
        if isinstance(self.policy, str):
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
        object.__setattr__(self, "policy_options", dict(self.policy_options))

    @classmethod
    def build(cls, where: str, *, k: Any = None, pool: Any = None, policy: Any = None,
              policy_options: Mapping[str, Any] | None = None, strict: Any = None,
              **extra: Any) -> "ReadOptions":
        """Options from an adapter's keyword arguments (``None`` means the default).

        The names the adapters used before (``pool_size``, ``selector``, ``fallback``) still
        work for one release, with a :class:`DeprecationWarning`; any other keyword is a
        selector option (as ``policy_options``).

        Raises
        ------
        TypeError
            When an option is given under both its name and its old name.
        """
        given, options = cls.translate(where, {"k": k, "pool": pool, "policy": policy,
                                               "strict": strict}, extra)
        return cls(
            k=given["k"],
            pool=DEFAULT_POOL if given["pool"] is None else given["pool"],
            policy=DEFAULT_POLICY if given["policy"] is None else given["policy"],
            policy_options={**(policy_options or {}), **options},
            strict=False if given["strict"] is None else given["strict"],
        )

    @staticmethod
    def translate(where: str, given: dict[str, Any], extra: dict[str, Any]
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(given with the old names mapped in, the other keywords)``; see :meth:`build`."""
        given, extra = dict(given), dict(extra)
        for old in [name for name in extra if name in _LEGACY]:
            new, convert = _LEGACY[old]
            value = extra.pop(old)
            if given.get(new) is not None:
                raise TypeError(f"{where}: give {new}= or {old}= (its old name), not both")
            warnings.warn(f"{where}: {old}= is now {new}= (the same for every adapter); the old "
                          "name goes in the next release", DeprecationWarning, stacklevel=4)
            given[new] = convert(value) if value is not None else None
        return given, extra

    @property
    def is_native(self) -> bool:
        """Whether the policy is the framework's own order: the name ``"native"`` or the
        registered :class:`~mempursuit_core.selectors.NativeSelector` itself (not a subclass,
        which may change the order). An adapter then passes the read through untouched."""
        if isinstance(self.policy, str):
            return self.policy == "native"
        return type(self.policy) is NativeSelector

    def selector(self):
        """The selector these options name (built now, so a bad name fails at set-up)."""
        from .plugins import resolve_selector

        return resolve_selector(self.policy, **self.policy_options)

    def budget(self, top_k: int) -> int:
        """``K`` for a read asked for ``top_k`` results."""
        return top_k if self.k is None else min(self.k, top_k)

    def pool_size(self, budget: int) -> int:
        """``P`` for a budget ``K``."""
        return max(self.pool, budget)


class LegacyOptionNames:
    """The attributes an adapter had under the old option names, read from ``self.options``."""

    options: ReadOptions

    @property
    def pool_size(self) -> int:
        """``P`` (the ``pool`` option; the old name)."""
        return self.options.pool

    @property
    def fallback(self) -> bool:
        """Whether a failure returns the framework's native result (``not strict``)."""
        return not self.options.strict
