"""The adapter's settings: budget, pool size, read policy, failure mode, the metadata key of a
memory's title (no Mem0 import here)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from mempursuit_core.adapter import DEFAULT_POLICY, DEFAULT_POOL, ReadOptions, did_you_mean

__all__ = ["MemPursuitSettings", "DEFAULT_POOL", "DEFAULT_POLICY", "METADATA_SIGNALS",
           "MEM0_FIELDS", "MEM0_PROMOTED", "TITLE_KEY", "title_key"]

#: the metadata key that holds a memory's title unless ``metadata_keys`` names another
TITLE_KEY = "title"
#: the signals ``metadata_keys`` may name in this adapter: Mem0's other signals come from its
#: own fields (``created_at``; ``run_id`` / ``session_id``; ``speaker`` / ``actor_id`` / ``role``)
METADATA_SIGNALS = ("titles",)
#: Mem0's payload keys that it lifts out of a result's metadata (``_search_vector_store``)
MEM0_PROMOTED = ("user_id", "agent_id", "run_id", "actor_id", "role", "attributed_to",
                 "expiration_date")
#: Mem0's payload keys that are not metadata: its own fields and the lifted ones
MEM0_FIELDS = frozenset({"data", "hash", "created_at", "updated_at", "id", "text_lemmatized",
                         *MEM0_PROMOTED})


def title_key(metadata_keys: Mapping[str, str] | None) -> str:
    """The metadata key of a memory's title that ``metadata_keys`` names (``title`` when it
    names none).

    Parameters
    ----------
    metadata_keys : mapping or None
        ``{signal: metadata key}``; the only signal this adapter reads from it is ``titles``.

    Returns
    -------
    str

    Raises
    ------
    TypeError
        ``metadata_keys`` is not a mapping, or its ``titles`` entry is not a string.
    ValueError
        It names a signal other than ``titles`` (with a did-you-mean), or its ``titles`` entry
        is blank or one of Mem0's own fields (``user_id``, ``hash``, ...), which never reach a
        result's metadata.
    """
    if metadata_keys is None:
        return TITLE_KEY
    if not isinstance(metadata_keys, Mapping):
        raise TypeError("metadata_keys takes {signal: metadata key}, e.g. {'titles': 'name'}; "
                        f"got a {type(metadata_keys).__name__}")
    unknown = sorted(map(str, set(metadata_keys) - set(METADATA_SIGNALS)))
    if unknown:
        near = "".join(did_you_mean(name, METADATA_SIGNALS) for name in unknown)
        raise ValueError(
            f"metadata_keys: unknown signal(s) {unknown}{near}; the Mem0 adapter reads only "
            f"{list(METADATA_SIGNALS)} from it (its timestamps, sessions and speakers come from "
            "Mem0's own fields), e.g. metadata_keys={'titles': 'name'}")
    key = metadata_keys.get("titles", TITLE_KEY)
    if not isinstance(key, str) or not key.strip():
        error = TypeError if not isinstance(key, str) else ValueError
        raise error("metadata_keys['titles'] must be the metadata key that holds a memory's "
                    f"title (a non-empty str, e.g. {{'titles': 'name'}}), got {key!r}")
    if key in MEM0_FIELDS:
        raise ValueError(f"metadata_keys['titles']={key!r} is a field Mem0 keeps out of a "
                         "memory's metadata, so no memory would have a title; store the title "
                         "under a metadata key of its own, e.g. metadata={'title': ...} and "
                         "metadata_keys={'titles': 'title'}")
    return key


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
    follow_timeout : float or None, default 0.5
        Seconds the second read may take before the first read's order stands.
    metadata_keys : dict, default ``{"titles": "title"}``
        ``{signal: metadata key}``, as the document adapters take it: ``titles`` names the
        metadata key that holds a memory's title, read for the ``titles`` signal and used by
        the second read (the scope's titles and the ``{key: title}`` fetch filter). The only
        signal it may name here (Mem0's others come from its own fields).
    """

    metadata_keys: Mapping[str, str] = field(default_factory=lambda: {"titles": TITLE_KEY})

    def __post_init__(self) -> None:
        if not isinstance(self.policy, str) or not self.policy:
            raise TypeError(f"policy must be a selector name (str), got {self.policy!r}")
        title_key(self.metadata_keys)  # a bad mapping fails here, in one line
        object.__setattr__(self, "metadata_keys", dict(self.metadata_keys))
        super().__post_init__()

    @property
    def title_key(self) -> str:
        """The metadata key that holds a memory's title (``metadata_keys["titles"]``)."""
        return title_key(self.metadata_keys)

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
