"""The ``"mempursuit"`` reranker provider's config class (imports only Mem0's config base)."""

from __future__ import annotations

from typing import Any, Dict, Optional

from mem0.configs.rerankers.base import BaseRerankerConfig
from pydantic import ConfigDict, Field, model_validator

from mempursuit_core.adapter import DEFAULT_FOLLOW_TIMEOUT

from .settings import DEFAULT_POLICY, DEFAULT_POOL, TITLE_KEY, MemPursuitSettings

__all__ = ["MemPursuitRerankerConfig"]


class MemPursuitRerankerConfig(BaseRerankerConfig):
    """``{"reranker": {"provider": "mempursuit", "config": {...}}}``.

    ``k`` (budget, default: the search's ``top_k``), ``pool`` (P, default 200), ``policy``
    (a selector name, default ``mempursuit_core.DEFAULT_POLICY``), ``policy_options`` (selector
    keyword options), ``strict`` (raise instead of falling back to Mem0's native result),
    ``budget_tokens`` (a token budget beside ``k``: the longest prefix of the order that fits),
    ``follow_timeout`` (seconds the second read may take before the first read's order stands,
    default 0.5; ``None`` waits as long as the store takes),
    ``metadata_keys`` (``{"titles": key}``: the metadata key that holds a memory's title, for the
    ``titles`` signal and the second read; default ``{"titles": "title"}``).
    ``top_k`` (Mem0's common reranker field) is accepted as an alias of ``k``. Unknown keys are
    an error, unlike Mem0's own reranker configs, so a typo cannot silently change the policy.
    """

    model_config = ConfigDict(extra="forbid")

    k: Optional[int] = Field(default=None, description="Budget K (default: the search's top_k)")
    pool: int = Field(default=DEFAULT_POOL, description="Pool size P ranked by Mem0")
    policy: str = Field(default=DEFAULT_POLICY, description="Selector name")
    policy_options: Dict[str, Any] = Field(default_factory=dict, description="Selector options")
    strict: bool = Field(default=False, description="Raise instead of falling back to native")
    budget_tokens: Optional[int] = Field(default=None, description="Token budget beside k")
    follow_timeout: Optional[float] = Field(default=DEFAULT_FOLLOW_TIMEOUT,
                                            description="Seconds the second read may take")
    metadata_keys: Dict[str, Any] = Field(default_factory=lambda: {"titles": TITLE_KEY},
                                          description="{'titles': the title's metadata key}")

    @model_validator(mode="before")
    @classmethod
    def _known_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):  # Mem0's settings' one line, with a did-you-mean
            MemPursuitSettings.check_keys(data, set(cls.model_fields))
        return data

    @model_validator(mode="after")
    def _check(self) -> "MemPursuitRerankerConfig":
        if self.k is not None and self.top_k is not None and self.k != self.top_k:
            raise ValueError(f"k={self.k} and top_k={self.top_k} disagree; set only k")
        self.to_settings()  # validates ranges and the policy's type
        return self

    def to_settings(self) -> MemPursuitSettings:
        return MemPursuitSettings(
            k=self.k if self.k is not None else self.top_k,
            pool=self.pool,
            policy=self.policy,
            policy_options=dict(self.policy_options),
            strict=self.strict,
            budget_tokens=self.budget_tokens,
            follow_timeout=self.follow_timeout,
            metadata_keys=dict(self.metadata_keys),
        )


def _finish_registration() -> None:
    # Importing Mem0 above may have run the provider's import hook before this class existed;
    # the hook then left the registration to this module (mempursuit_mem0.provider).
    import sys

    provider = sys.modules.get(f"{__package__}.provider")
    factory = sys.modules.get("mem0.utils.factory")
    if provider is not None and factory is not None and hasattr(factory, "RerankerFactory"):
        provider._register_into(factory)


_finish_registration()
