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
anything it cannot read. It never writes to a file unless :func:`save_memory_file` is called,
which locks the file, merges with what other writers saved meanwhile and replaces it atomically
(see there); a file nested too deeply for Python to read is a :class:`MemoryBankFormatError`
too, and a user name that is not a ``str`` a ``TypeError``.

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
import errno
import json
import os
import stat
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: only the in-process lock
    fcntl = None

__all__ = [
    "MemoryBankFormatError",
    "UnknownUserError",
    "Turn",
    "UserMemory",
    "load_memory_file",
    "read_user",
    "list_users",
    "merge_user",
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
    base : dict or None
        What was last read from or written to the file for this user (the common ancestor for
        the merge in :func:`save_memory_file`); ``None`` when unknown.
    """

    name: str
    history: dict[str, list[Turn]] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    personality: dict[str, str] = field(default_factory=dict)
    overall_history: str | None = None
    overall_personality: str | None = None
    raw: dict = field(default_factory=dict)
    base: dict | None = field(default=None, repr=False, compare=False)

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
    _optional_text(obj.get("name"), "name", where)  # MemoryBank's own field: a string
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
        base=copy.deepcopy(raw),
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


# ---------------------------------------------------------------------------------------- writing
_MISSING = object()
_SECTIONS = ("history", "summary", "personality")
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


def _thread_lock(real: str) -> threading.Lock:
    with _THREAD_LOCKS_GUARD:
        return _THREAD_LOCKS.setdefault(real, threading.Lock())


@contextmanager
def _exclusive(real: str, *, required: bool = True):
    """Hold the in-process lock for ``real`` and an exclusive ``flock`` on ``<real>.lock``.

    The lock file is created (empty) on first use and never removed: removing it would let two
    writers lock two different files of the same name. With ``required=False`` a lock file that
    cannot be opened (a read-only folder) leaves only the in-process lock.
    """
    with _thread_lock(real):
        lock_path = real + ".lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            if not required:
                yield
                return
            raise type(exc)(
                exc.errno,
                f"cannot open the lock file {lock_path} beside the memory file ({exc.strerror}); "
                f"its folder must exist and be writable",
            ) from exc
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # releases the flock


def _turn_key(turn: Any) -> tuple:
    if isinstance(turn, Mapping):
        return (turn.get("query"), turn.get("response"))
    return tuple(turn)  # a validated [query, response] pair


def _without(items: list, remove: list) -> list:
    """``items`` minus ``remove`` as multisets of turns (by ``{query, response}``), in order."""
    left = Counter(_turn_key(t) for t in remove)
    out = []
    for item in items:
        key = _turn_key(item)
        if left[key] > 0:
            left[key] -= 1
        else:
            out.append(item)
    return out


def _section(obj: Mapping, key: str) -> dict:
    value = obj.get(key)
    return dict(value) if isinstance(value, Mapping) else {}


def merge_user(disk: Mapping, mine: Mapping, base: Mapping | None) -> dict:
    """Three-way merge of one user's memory object (see :func:`save_memory_file`).

    Parameters
    ----------
    disk : mapping
        The user's object as it is in the file now (other writers' entries included).
    mine : mapping
        This writer's object (``UserMemory.raw``).
    base : mapping or None
        What this writer last read or wrote for the user (``UserMemory.base``); ``None`` reads as
        an empty user (everything in ``mine`` counts as this writer's).
    """
    base = {} if base is None else base
    out: dict = {}
    for key in list(disk) + [k for k in mine if k not in disk]:
        if key in _SECTIONS:
            continue
        m, b = mine.get(key, _MISSING), base.get(key, _MISSING)
        value = m if m != b else disk.get(key, _MISSING)  # changed here: ours; else the file's
        if value is not _MISSING:
            out[key] = copy.deepcopy(value)
    # history: the file's turns, then the turns this writer added since its base that no other
    # writer added (identical {query, response}) since that base, per date
    disk_h, mine_h, base_h = (_section(o, "history") for o in (disk, mine, base))
    history = {date: list(turns) for date, turns in disk_h.items()}
    for date, turns in mine_h.items():
        ours = _without(turns, base_h.get(date, []))
        theirs = _without(disk_h.get(date, []), base_h.get(date, []))
        new = _without(ours, theirs)
        if new:
            history.setdefault(date, []).extend(new)
    # summary / personality: per date, ours where this writer set, replaced or removed it since
    # its base, else the file's
    merged_sections = {"history": history}
    for name in ("summary", "personality"):
        d, m, b = (_section(o, name) for o in (disk, mine, base))
        merged = dict(d)
        for date in list(m) + [x for x in b if x not in m]:
            mv, bv = m.get(date, _MISSING), b.get(date, _MISSING)
            if mv == bv:
                continue
            if mv is _MISSING:
                if d.get(date, _MISSING) == bv:  # removed here, untouched there
                    merged.pop(date, None)
            else:
                merged[date] = mv
        merged_sections[name] = merged
    for name, merged in merged_sections.items():
        if merged or any(name in o for o in (disk, mine)):
            out[name] = copy.deepcopy(merged)
    return out


def _new_file_mode(folder: str) -> int:
    """The mode a new file gets in ``folder`` under the process umask (read without changing it)."""
    probe = os.path.join(folder, f".mempursuit-mode-{os.getpid()}-{threading.get_ident()}-{time.time_ns()}")
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        return stat.S_IMODE(os.fstat(fd).st_mode)
    finally:
        os.close(fd)
        os.unlink(probe)


def _fsync_dir(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory descriptors
        return
    try:
        os.fsync(fd)
    except OSError as exc:  # pragma: no cover - file systems that cannot sync a folder
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _write_atomically(real: str, data: Any) -> None:
    folder = os.path.dirname(real) or "."
    try:
        mode = stat.S_IMODE(os.stat(real).st_mode)
    except FileNotFoundError:
        mode = _new_file_mode(folder)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(real)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(folder)


def save_memory_file(path: str | os.PathLike, memory: UserMemory) -> None:
    """Write ``memory`` into the file at ``path``, merged with what other writers put there.

    Safe under concurrency: several threads and processes may save users of the same file at
    once, each with its own :class:`UserMemory`, and no entry saved by any of them is lost.

    * **Lock.** The whole read-merge-write runs under an exclusive ``fcntl.flock`` on
      ``<file>.lock`` (next to the real file; created once, never removed) and, inside one
      process, a lock per resolved path. Writers that bypass :func:`save_memory_file` (MemoryBank
      itself) are not locked out.
    * **Merge.** Under the lock the file is read again. Other users are written back as they are
      on disk now. For this user, ``memory.base`` (what this object last read or wrote) is the
      common ancestor of ``memory.raw`` (ours) and the file's object (theirs):

      - ``history``: the file's turns in the file's order, then, per date, the turns we added
        since the base (multiset difference by ``{query, response}``, in our order) less those
        identical turns another writer added to the same date since the base, so a turn is
        never written twice by a re-save or a retry, while a turn said twice is kept twice; a new
        date goes after the file's dates. Turns are never removed from the file by a merge.
      - ``summary`` and ``personality``, per date, and every other key of the user (``name``,
        ``overall_history``, bookkeeping keys): ours where we set, replaced or removed it since
        the base (we win a conflict on the same date or key), otherwise the file's.
      - A user absent from the file (or a missing file) is written as ``memory.raw``.
    * **Write.** JSON as MemoryBank writes it (``ensure_ascii=False``) into a unique temporary
      file in the same folder (``tempfile.mkstemp``), flushed and ``fsync``-ed, given the old
      file's permission bits (a new file gets the umask default), then ``os.replace``-d onto the
      resolved path (``os.path.realpath``: a symlink stays a symlink and its target is written)
      and the folder is ``fsync``-ed. Readers see the old or the new file, never a part; a crash
      may leave a ``.<name>.*.tmp`` file behind. Owner, group and ACLs are not copied.

    On return ``memory`` holds what was written for the user (other writers' entries included)
    and that is its new base.

    Raises
    ------
    MemoryBankFormatError
        When the file on disk, this user's object there or ``memory.raw`` cannot be read (the
        file is then left as it is), or the file holds a single other user at its top level.
    OSError
        When the lock file or the temporary file cannot be created (the folder must be writable).
    """
    p = Path(path)
    real = os.path.realpath(p)
    with _exclusive(real):
        source = str(p)
        mine = parse_user(memory.name, memory.raw, source="the memory to save").raw
        data = load_memory_file(real) if os.path.exists(real) else {}
        single = _is_single_user(data)
        if single:
            name = str(data.get("name") or "user")
            if name.strip() != memory.name.strip():
                raise MemoryBankFormatError(
                    f"{source} holds the single user {name!r} at its top level; cannot save user "
                    f"{memory.name!r} into it (save to another file)"
                )
            disk = data
        else:
            disk = data.get(memory.name, _MISSING)
        if disk is _MISSING:
            merged = mine
        else:
            disk = parse_user(memory.name, disk, source=source).raw
            merged = merge_user(disk, mine, memory.base)
        if single:
            data = merged
        else:
            data[memory.name] = merged
        _write_atomically(real, data)
    saved = parse_user(memory.name, merged, source=source)
    memory.history, memory.summary, memory.personality = saved.history, saved.summary, saved.personality
    memory.overall_history, memory.overall_personality = saved.overall_history, saved.overall_personality
    memory.raw, memory.base = saved.raw, copy.deepcopy(saved.raw)
