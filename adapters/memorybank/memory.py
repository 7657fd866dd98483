"""Reading and validating MemoryBank memory files.

MemoryBank (zhongwanjun/MemoryBank-SiliconFriend) keeps every user's memory in one JSON object::

    {user_name: {"name": ...,
                 "history": {date: [{"query": q, "response": r}, ...]},
                 "summary": {date: str | {"content": str, ...}},
                 "personality": {date: str},
                 "overall_history": str,
                 "overall_personality": str,
                 ...}}

Its writers are ``utils/memory_utils.py:save_local_memory`` (appends ``{query, response}`` turns
under today's ``%Y-%m-%d`` date) and ``memory_bank/summarize_memory.py:summarize_memory`` (writes
``summary[date] = {"content": ...}``, ``personality[date] = str`` and the two ``overall_*``
strings). The forgetting variant (``memory_retrieval/forget_memory.py``,
``MemoryForgetterLoader.initial_load_forget_and_save``) also accepts a turn given as a
``[query, response]`` pair and a summary given as a plain string, and adds bookkeeping keys
(``memory_strength``, ``memory_id``, ``last_recall_date``) that the read path ignores.

This module accepts all of those shapes, checks them once, and raises
:class:`MemoryBankFormatError` (a ``ValueError``) naming the file, the user and the exact place of
anything it cannot read. It never writes to a file unless :func:`save_memory_file` is called.

Documented fallbacks (not errors):

* ``summary`` / ``personality`` given as ``null`` are read as empty (MemoryBank would crash);
* ``overall_history`` / ``overall_personality`` given as ``null`` are read as absent;
* a file whose top level is a single user's memory (it has a ``"history"`` object of dated
  lists) is read as that one user, named by its ``"name"`` field;
* a user name that matches no key exactly but exactly one key after ``str.strip()`` (the
  sample files have keys such as ``" Jason "``) resolves to that key.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

__all__ = [
    "MemoryBankFormatError",
    "UnknownUserError",
    "Turn",
    "UserMemory",
    "load_memory_file",
    "read_user",
    "list_users",
    "save_memory_file",
]


class MemoryBankFormatError(ValueError):
    """A MemoryBank memory file (or in-memory dict) has a shape this reader cannot use."""


class UnknownUserError(KeyError):
    """The requested user is not in the memory file; the message lists the users that are."""

    def __init__(self, user: str, known: list[str], source: str = "memory"):
        self.user, self.known, self.source = user, list(known), source
        super().__init__(user)

    def __str__(self) -> str:
        names = ", ".join(repr(u) for u in self.known) or "(none)"
        return f"user {self.user!r} is not in {self.source}; users there: {names}"


@dataclass(frozen=True)
class Turn:
    """One dialogue turn as MemoryBank stores it (``{"query": q, "response": r}``)."""

    query: str
    response: str


@dataclass
class UserMemory:
    """One user's MemoryBank memory, validated.

    Attributes
    ----------
    name : str
        The user's key in the memory file (MemoryBank uses the key, not the ``name`` field, as
        the user name in its prompts and index paths).
    history : dict of str to list of Turn
        Turns by date, in the file's order (MemoryBank's document order follows it).
    summary : dict of str to (str or dict)
        Daily summaries as stored: a string or a dict with a ``"content"`` string.
    personality : dict of str to str
        Daily personality analyses (not indexed by MemoryBank; kept for completeness).
    overall_history : str or None
        ``None`` when the key is absent (or null).
    overall_personality : str or None
        ``None`` when the key is absent (or null).
    raw : dict
        A deep copy of the user's JSON object, updated by appends, written back only on request.
    """

    name: str
    history: dict[str, list[Turn]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    personality: dict[str, str] = field(default_factory=dict)
    overall_history: str | None = None
    overall_personality: str | None = None
    raw: dict = field(default_factory=dict)

    @property
    def n_turns(self) -> int:
        return sum(len(v) for v in self.history.values())


def _where(source: str, user: str) -> str:
    return f"{source}, user {user!r}"


def _parse_turn(obj: Any, where: str) -> Turn:
    if isinstance(obj, Mapping):
        missing = [key for key in ("query", "response") if key not in obj]
        if missing:
            raise MemoryBankFormatError(
                f"{where}: a turn needs 'query' and 'response', missing {missing} "
                f"(keys present: {sorted(map(str, obj))})"
            )
        query, response = obj["query"], obj["response"]
    elif isinstance(obj, (list, tuple)):
        if len(obj) != 2:
            raise MemoryBankFormatError(
                f"{where}: a turn given as a list must be a [query, response] pair, got {len(obj)} items"
            )
        query, response = obj
    else:
        raise MemoryBankFormatError(
            f"{where}: a turn must be an object {{query, response}} or a [query, response] pair, "
            f"got {type(obj).__name__}"
        )
    for label, value in (("query", query), ("response", response)):
        if not isinstance(value, str):
            raise MemoryBankFormatError(
                f"{where}: the turn's {label} must be a string, got {type(value).__name__}"
            )
    return Turn(query, response)


def _parse_summary_value(value: Any, where: str) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        if "content" not in value or not isinstance(value["content"], str):
            raise MemoryBankFormatError(
                f"{where}: a summary object needs a string 'content' "
                f"(summarize_memory.py writes {{'content': text}}), got keys {sorted(map(str, value))}"
            )
        return dict(value)
    raise MemoryBankFormatError(
        f"{where}: a summary must be a string or an object with 'content', got {type(value).__name__}"
    )


def _dated_mapping(obj: Any, key: str, where: str) -> Mapping:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise MemoryBankFormatError(
            f"{where}: {key!r} must be an object keyed by date, got {type(obj).__name__}"
        )
    return obj


def _optional_text(obj: Any, key: str, where: str) -> str | None:
    if obj is None:
        return None
    if not isinstance(obj, str):
        raise MemoryBankFormatError(f"{where}: {key!r} must be a string, got {type(obj).__name__}")
    return obj


def parse_user(name: str, obj: Any, *, source: str = "memory") -> UserMemory:
    """Validate one user's memory object and return a :class:`UserMemory`.

    Raises
    ------
    MemoryBankFormatError
        Naming the source, the user and the place of the first problem.
    """
    where = _where(source, name)
    if not isinstance(obj, Mapping):
        raise MemoryBankFormatError(f"{where}: a user's memory must be an object, got {type(obj).__name__}")
    try:
        raw = copy.deepcopy(dict(obj))
    except RecursionError:
        raise MemoryBankFormatError(
            f"{where}: the user's memory is nested too deeply to copy (more than about "
            f"{sys.getrecursionlimit() // 2} levels); MemoryBank files are a few levels deep"
        ) from None
    history: dict[str, list[Turn]] = {}
    raw_history = _dated_mapping(obj.get("history"), "history", where)
    for date, turns in raw_history.items():
        if not isinstance(turns, list):
            raise MemoryBankFormatError(
                f"{where}: history[{date!r}] must be a list of turns, got {type(turns).__name__}"
            )
        history[str(date)] = [
            _parse_turn(turn, f"{where}: history[{date!r}][{i}]") for i, turn in enumerate(turns)
        ]
    summary = {
        str(date): _parse_summary_value(value, f"{where}: summary[{date!r}]")
        for date, value in _dated_mapping(obj.get("summary"), "summary", where).items()
    }
    personality: dict[str, str] = {}
    for date, value in _dated_mapping(obj.get("personality"), "personality", where).items():
        if not isinstance(value, str):
            raise MemoryBankFormatError(
                f"{where}: personality[{date!r}] must be a string, got {type(value).__name__}"
            )
        personality[str(date)] = value
    return UserMemory(
        name=name,
        history=history,
        summary=summary,
        personality=personality,
        overall_history=_optional_text(obj.get("overall_history"), "overall_history", where),
        overall_personality=_optional_text(obj.get("overall_personality"), "overall_personality", where),
        raw=raw,
    )


def _is_single_user(data: Mapping) -> bool:
    history = data.get("history")
    return isinstance(history, Mapping) and all(isinstance(v, list) for v in history.values())


def load_memory_file(path: str | os.PathLike) -> dict:
    """Read a MemoryBank memory JSON file and return the top-level object.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    MemoryBankFormatError
        When the file is not UTF-8 JSON, is nested too deeply for Python's JSON reader, or its
        top level is not an object.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"MemoryBank memory file not found: {p}")
    if p.is_dir():
        raise MemoryBankFormatError(f"{p} is a directory; expected a MemoryBank memory JSON file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryBankFormatError(f"{p}: not UTF-8 text ({exc})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MemoryBankFormatError(
            f"{p}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    except RecursionError:
        raise MemoryBankFormatError(
            f"{p}: JSON nested too deeply to read (more than about {sys.getrecursionlimit()} "
            f"levels); MemoryBank files are a few levels deep"
        ) from None
    if not isinstance(data, dict):
        raise MemoryBankFormatError(
            f"{p}: the top level must be an object keyed by user name, got {type(data).__name__}"
        )
    return data


def list_users(data: Mapping) -> list[str]:
    """User names in a loaded memory object (file order)."""
    if _is_single_user(data):
        return [str(data.get("name") or "user")]
    return [str(k) for k in data]


def check_user_name(user: Any, parameter: str = "user") -> None:
    """Raise ``TypeError`` naming ``parameter`` unless ``user`` is a ``str`` or ``None``."""
    if user is not None and not isinstance(user, str):
        raise TypeError(
            f"{parameter} must be a str (the user's key in the memory file) or None, "
            f"got {type(user).__name__} {user!r}; pass {parameter}={str(user)!r} for that key"
        )


def resolve_user(data: Mapping, user: str | None, *, source: str = "memory") -> str:
    """The exact key for ``user`` in ``data`` (see the module notes for the fallbacks)."""
    check_user_name(user)
    if _is_single_user(data):
        name = str(data.get("name") or "user")
        if user is not None and user.strip() != name.strip():
            raise UnknownUserError(user, [name], source)
        return name
    keys = [str(k) for k in data]
    if user is None:
        if len(keys) == 1:
            return keys[0]
        raise MemoryBankFormatError(
            f"{source} holds {len(keys)} users; name one with user=... "
            f"(users: {', '.join(repr(k) for k in keys) or '(none)'})"
        )
    if user in data:
        return user
    stripped = [k for k in keys if k.strip() == user.strip()]
    if len(stripped) == 1:
        return stripped[0]
    raise UnknownUserError(user, keys, source)


def read_user(data: Mapping | str | os.PathLike, user: str | None = None) -> UserMemory:
    """One user's validated memory from a loaded object or a file path.

    Parameters
    ----------
    data : mapping or path
        The file's top-level object, or the path of the file.
    user : str, optional
        The user's key; may be omitted when the file holds one user.

    Raises
    ------
    TypeError
        When ``user`` is neither a ``str`` nor ``None`` (JSON keys are always strings).
    """
    check_user_name(user)
    source = "memory"
    if not isinstance(data, Mapping):
        source = str(data)
        data = load_memory_file(data)
    key = resolve_user(data, user, source=source)
    obj = data if _is_single_user(data) else data[key]
    return parse_user(key, obj, source=source)


def save_memory_file(path: str | os.PathLike, memory: UserMemory) -> None:
    """Write ``memory`` back into the file at ``path``, keeping every other user as it is.

    Writes the whole file as MemoryBank does (``json.dump(..., ensure_ascii=False)``), through a
    temporary file and an atomic rename. Only called when a caller asks for it.
    """
    p = Path(path)
    if p.exists():
        data = load_memory_file(p)
    else:
        data = {}
    if _is_single_user(data):
        data = dict(memory.raw)
    else:
        data[memory.name] = memory.raw
    tmp = p.with_name(p.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, ensure_ascii=False)
    os.replace(tmp, p)
