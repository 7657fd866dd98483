"""MemoryBank's documents: one per dialogue turn, then one per daily summary.

Behaviour re-implemented (clean room) from ``memory_bank/memory_retrieval/local_doc_qa.py``,
``JsonMemoryLoader.load``:

* dates are visited in the order of the user's ``history`` object;
* each turn of a date becomes one document
  ``<turn prefix for the date><user label> <query.strip()>; <ai label> <response.strip()>``;
* after the turns of a date, its summary (only if the date also has a ``history`` entry) becomes
  one document ``<summary template with the date and the summary value>``;
* every document carries the date as its ``source`` metadata;
* per-date ``personality`` is not indexed (commented out there).

The summary value is formatted as the f-string there formats it: a plain string as is, and a
``{"content": ...}`` object (what ``summarize_memory.py`` writes) as Python's ``str()`` of the
dict, braces and quotes included. ``summary_value="content"`` uses the ``content`` text instead,
as the forgetting variant (``forget_memory.py``) does.

A summary whose date has no ``history`` entry is never indexed by MemoryBank; we keep that and
report such dates in :attr:`DocumentSet.unindexed_summaries` (and warn), instead of dropping them
silently.
"""

from __future__ import annotations

import unicodedata
import warnings
from dataclasses import dataclass, field, replace
from typing import Literal

from .memory import UserMemory

__all__ = [
    "Templates",
    "TEMPLATES",
    "Document",
    "DocumentSet",
    "build_documents",
    "turn_text",
    "summary_text",
    "detect_language",
    "get_templates",
]

SummaryValue = Literal["literal", "content"]


@dataclass(frozen=True)
class Templates:
    """The strings MemoryBank writes around memories, for one language.

    Attributes
    ----------
    language : str
        ``"en"`` or ``"cn"`` (MemoryBank's names).
    turn_prefix : str
        Prefix of a turn document, with ``{date}``.
    user_label, ai_label : str
        Speaker labels in a turn document (``"<label> <text>"``).
    summary : str
        Summary document, with ``{date}`` and ``{summary}``.
    overall_history : str
        Resident history summary in the prompt, with ``{overall}``
        (``utils/prompt_utils.py``, ``build_prompt_with_search_memory_chatglm_app``).
    query_user_keyword, query_ai_keyword : str
        Keywords the prompt builder replaces in a search query (by the user name and ``"AI"``).
    """

    language: str
    turn_prefix: str
    user_label: str
    ai_label: str
    summary: str
    overall_history: str
    query_user_keyword: str
    query_ai_keyword: str


# Strings as MemoryBank writes them (local_doc_qa.py JsonMemoryLoader.load; prompt_utils.py).
TEMPLATES: dict[str, Templates] = {
    "en": Templates(
        language="en",
        turn_prefix="Conversation content on {date}:",
        user_label="[|User|]:",
        ai_label="[|AI|]:",
        summary="The summary of the conversation on {date} is: {summary}",
        overall_history="The summary of your past memories with the user is: {overall}",
        query_user_keyword="[|User|]",
        query_ai_keyword="[|AI|]",
    ),
    "cn": Templates(
        language="cn",
        turn_prefix="时间{date}的对话内容：",
        user_label="[|用户|]：",
        # local_doc_qa.py uses "AI恋人"; forget_memory.py uses "AI伴侣" (see TEMPLATES_CN_FORGET).
        ai_label="[|AI恋人|]：",
        summary="时间{date}的对话总结为：{summary}",
        overall_history="你和用户过去的回忆总结是：{overall}",
        query_user_keyword="[|用户|]",
        query_ai_keyword="[|AI伴侣|]",
    ),
}
# The AI label of the forgetting variant (forget_memory.py, MemoryForgetterLoader).
TEMPLATES["cn-forget"] = replace(TEMPLATES["cn"], ai_label="[|AI伴侣|]：")

# search_memory (local_doc_qa.py, LocalMemoryRetrieval.search_memory) removes this prefix, for the
# retrieved text's own date, from every retrieved text whatever the language: in practice only
# Chinese memories lose their prefix.
READ_STRIP_PREFIX = "时间{date}的对话内容："


def get_templates(language: str | Templates) -> Templates:
    """Templates for ``"en"``, ``"cn"`` (alias ``"zh"``) or ``"cn-forget"``, or a :class:`Templates`."""
    if isinstance(language, Templates):
        return language
    key = {"zh": "cn", "zh-cn": "cn", "chinese": "cn", "english": "en"}.get(language.lower(), language.lower())
    if key not in TEMPLATES:
        raise ValueError(f"unknown MemoryBank language {language!r}; use one of {sorted(TEMPLATES)} or 'auto'")
    return TEMPLATES[key]


def _is_cjk(ch: str) -> bool:
    return "CJK" in unicodedata.name(ch, "")


def detect_language(memory: UserMemory, *, sample: int = 2000) -> str:
    """``"cn"`` when CJK characters make up at least 20% of the letters of the user's turns.

    The decision is made on the first ``sample`` letters of the turns (queries and responses);
    a memory without turns is ``"en"``.
    """
    letters = cjk = 0
    for turns in memory.history.values():
        for turn in turns:
            for ch in turn.query + turn.response:
                if ch.isalpha():
                    letters += 1
                    cjk += _is_cjk(ch)
                    if letters >= sample:
                        return "cn" if cjk >= 0.2 * letters else "en"
    return "cn" if letters and cjk >= 0.2 * letters else "en"


@dataclass(frozen=True)
class Document:
    """One indexed MemoryBank document.

    Attributes
    ----------
    key : tuple
        ``(date, "turn", i)`` for the ``i``-th turn of ``date``, ``(date, "summary", 0)`` for its
        summary; stable identity used for incremental updates.
    text : str
        The document text (what MemoryBank stores as ``page_content``).
    date : str
        The date (MemoryBank's ``metadata["source"]``).
    """

    key: tuple
    text: str
    date: str

    @property
    def kind(self) -> str:
        return self.key[1]


@dataclass
class DocumentSet:
    """Documents in MemoryBank's index order, plus the summaries it would not index."""

    documents: list[Document]
    unindexed_summaries: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.documents)

    def __iter__(self):
        return iter(self.documents)

    def __getitem__(self, i):
        return self.documents[i]


def turn_text(date: str, query: str, response: str, templates: Templates) -> str:
    """One turn's document text (queries and responses stripped, as MemoryBank does)."""
    return (
        templates.turn_prefix.format(date=date)
        + f"{templates.user_label} {query.strip()}; {templates.ai_label} {response.strip()}"
    )


def summary_text(date: str, value, templates: Templates, summary_value: SummaryValue = "literal") -> str:
    """One daily summary's document text.

    ``summary_value="literal"`` formats the stored value as MemoryBank's f-string does (a dict
    becomes its ``str()``); ``"content"`` takes a dict's ``"content"``.
    """
    if summary_value == "content" and isinstance(value, dict):
        value = value["content"]
    elif summary_value not in ("literal", "content"):
        raise ValueError(f"summary_value must be 'literal' or 'content', got {summary_value!r}")
    return templates.summary.format(date=date, summary=f"{value}")


def build_documents(
    memory: UserMemory,
    templates: Templates | str = "en",
    *,
    summary_value: SummaryValue = "literal",
    warn: bool = True,
) -> DocumentSet:
    """Build the documents MemoryBank indexes for one user, in its order.

    Parameters
    ----------
    memory : UserMemory
    templates : Templates or str
        ``"en"``, ``"cn"``, ``"cn-forget"`` or a :class:`Templates`.
    summary_value : {"literal", "content"}
        How a ``{"content": ...}`` summary is written (see the module notes).
    warn : bool
        Warn (``UserWarning``) about summaries whose date has no history (never indexed).

    Returns
    -------
    DocumentSet
    """
    tpl = get_templates(templates)
    docs: list[Document] = []
    for date, turns in memory.history.items():
        for i, turn in enumerate(turns):
            docs.append(Document((date, "turn", i), turn_text(date, turn.query, turn.response, tpl), date))
        if date in memory.summary:
            docs.append(
                Document((date, "summary", 0), summary_text(date, memory.summary[date], tpl, summary_value), date)
            )
    orphans = [d for d in memory.summary if d not in memory.history]
    if orphans and warn:
        warnings.warn(
            f"user {memory.name!r}: summaries for dates without history are not indexed "
            f"(as in MemoryBank): {', '.join(orphans)}",
            UserWarning,
            stacklevel=2,
        )
    return DocumentSet(docs, orphans)
