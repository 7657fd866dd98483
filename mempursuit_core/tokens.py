"""Token budgets: a read that fills ``budget_tokens`` in the policy's order.

An agent's context budget is in tokens, not memories. With ``budget_tokens=B`` (a read option
beside ``k``, :class:`~mempursuit_core.options.ReadOptions`) a read returns the **longest
prefix** of its order whose texts count at most ``B`` tokens: the policy's order is nested, so
a prefix is what the policy would have kept at a smaller ``K``. The budget is never exceeded:
the prefix ends at the first item that does not fit, so an item longer than the whole budget
ends it there (a first item over the budget gives an empty read, said once in a warning).
``k`` still caps the number of items.

Tokens are counted with the tokenizer that ships with the packaged embedder (all-MiniLM-L6-v2's
WordPiece, through ``tokenizers``: the ``[embed]`` extra), without special tokens, padding or
truncation. Without ``tokenizers`` installed the count is the stated fallback: the number of
whitespace-separated words times 1.3, rounded up (:data:`WORDS_TO_TOKENS`), said once in a
warning. The name of the counter in use is :func:`token_counter` ``().name``.
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Any, Callable, Sequence

__all__ = ["TokenBudgetSelector", "TokenCounter", "WORDS_TO_TOKENS", "check_budget_tokens",
           "fit_budget", "token_counter"]

logger = logging.getLogger("mempursuit")

#: Tokens per whitespace-separated word in the fallback count (no tokenizer installed).
WORDS_TO_TOKENS = 1.3


class TokenCounter:
    """Counts a text's tokens.

    Parameters
    ----------
    name : str
        What counts them (``"minilm-wordpiece"``, ``"words x 1.3"``).
    count : callable
        ``count(texts) -> list of int``.
    """

    def __init__(self, name: str, count: Callable[[list[str]], list[int]]):
        self.name = name
        self._count = count

    def counts(self, texts: Sequence[Any]) -> list[int]:
        """The tokens of each text (None counts as an empty text)."""
        return list(self._count(["" if t is None else str(t) for t in texts]))

    def __repr__(self) -> str:
        return f"<TokenCounter {self.name}>"


def _words(texts: list[str]) -> list[int]:
    return [math.ceil(len(t.split()) * WORDS_TO_TOKENS) for t in texts]


@functools.lru_cache(maxsize=1)
def token_counter() -> TokenCounter:
    """The counter every token budget uses: the packaged MiniLM tokenizer, else the fallback
    (words x 1.3, one warning)."""
    try:
        import tokenizers

        from .embed import DEFAULT_TOKENIZER

        tok = tokenizers.Tokenizer.from_file(str(DEFAULT_TOKENIZER))
        tok.no_padding()
        tok.no_truncation()
    except Exception as exc:  # noqa: BLE001 - not installed or unreadable: the stated fallback
        from .install import install_line

        logger.warning("mempursuit: token budgets count whitespace words x %.1f (the MiniLM "
                       "tokenizer is not available: %s; %s)", WORDS_TO_TOKENS, exc,
                       install_line("embed"))
        return TokenCounter(f"words x {WORDS_TO_TOKENS}", _words)

    def count(texts: list[str]) -> list[int]:
        return [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]

    return TokenCounter("minilm-wordpiece", count)


def check_budget_tokens(value: Any, where: str = "budget_tokens") -> int | None:
    """``value`` as a token budget: None, or an int >= 1.

    Raises
    ------
    TypeError, ValueError
        One line naming ``where`` and what it takes.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{where} takes a whole number of tokens >= 1 (or None), got {value!r}")
    if value < 1:
        raise ValueError(f"{where} takes a whole number of tokens >= 1 (or None), got {value}")
    return value


def fit_budget(counts: Sequence[int], budget: int) -> int:
    """The length of the longest prefix of ``counts`` whose sum is at most ``budget``.

    >>> fit_budget([40, 30, 50, 10], 100)
    2
    """
    used = 0
    for n, c in enumerate(counts):
        used += int(c)
        if used > budget:
            return n
    return len(counts)


class TokenBudgetSelector:
    """A read policy with a token budget (what ``ReadOptions(budget_tokens=B).selector()``
    gives): the policy itself, unchanged, carrying ``budget_tokens``, which
    :meth:`CandidatePool.select <mempursuit_core.readpath.CandidatePool.select>` fills with
    the longest prefix of the policy's order (after its second read) that fits.

    Every other attribute is the policy's (``name``, ``nested``, ``select``, ...).
    """

    def __init__(self, policy: Any, budget_tokens: int):
        self.policy = policy
        self.budget_tokens = check_budget_tokens(budget_tokens)
        self.warned = False

    def __getattr__(self, name: str) -> Any:
        if name == "policy":  # not set yet (a copy being built)
            raise AttributeError(name)
        return getattr(self.policy, name)

    def select(self, *args: Any, **kwargs: Any):
        return self.policy.select(*args, **kwargs)

    def select_batch(self, *args: Any, **kwargs: Any):
        return self.policy.select_batch(*args, **kwargs)

    def fit(self, texts: Sequence[Any]) -> tuple[int, int]:
        """``(n, tokens)``: how many of ``texts`` (the order's, in order) fit the budget, and
        the tokens those count."""
        counts = token_counter().counts(texts)
        n = fit_budget(counts, self.budget_tokens)
        if n == 0 and counts and not self.warned:
            self.warned = True
            logger.warning("mempursuit: the first item of a read counts %d tokens, more than "
                           "budget_tokens=%d: the read returns nothing (raise the budget)",
                           counts[0], self.budget_tokens)
        return n, int(sum(counts[:n]))

    def __repr__(self) -> str:
        return f"<{self.policy!r} budget_tokens={self.budget_tokens}>"
