"""Record checks shared by every loader and by the custom format.

Reading a (gzipped) JSON file with a one-line error, and checking a record's fields: a wrong
type reads ``<where>: '<key>' is <what was found>, expected <what> (fix or remove that
record)``, a missing required field ``<where>: '<key>' is missing (expected <what>; fix or
remove that record)``, whichever format the record comes from. ``where`` names the file and the
record (e.g. ``locomo10.json: conversation 3 (sample_id conv-30): qa[5]``); ``error`` is the
exception class raised (:class:`~.base.DatasetFormatError` or a subclass).
"""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any, Iterable, Iterator

from .base import DatasetFormatError

__all__ = ["JSON_ERRORS", "json_problem", "read_json", "json_kind", "FIX", "bad",
           "wrong_type", "need_type", "need_field", "check_units", "uniq", "keyed_records"]

#: What reading a (possibly gzipped) JSON file can raise for a bad file.
JSON_ERRORS = (OSError, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError,
               RecursionError)


def json_problem(exc: BaseException) -> str:
    """What is wrong with a JSON text, in words, for one of :data:`JSON_ERRORS` (the line and
    column of a syntax error)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    if isinstance(exc, RecursionError):
        return "nested too deeply to read (lists / objects inside each other thousands of levels)"
    if isinstance(exc, (EOFError, zlib.error, gzip.BadGzipFile)):
        return f"the gzip file is truncated or damaged ({exc})"
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    return str(exc)


def read_json(path: Path) -> Any:
    """The JSON value in ``path`` (gzip when it ends in ``.gz``); a file that cannot be read or
    parsed is a ``ValueError`` naming the file, the problem (with line and column) and the fix."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except JSON_ERRORS as exc:
        raise ValueError(f"cannot read JSON from {path}: {json_problem(exc)} (fix the file, or "
                         "download it again if it is a benchmark's)") from None


_JSON_KIND = {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
              int: "a number", float: "a number", type(None): "null"}


def json_kind(value: Any) -> str:
    """``value`` in JSON words: ``a list``, ``a string 'abc'``, ..."""
    name = _JSON_KIND.get(type(value), type(value).__name__)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = repr(value)
        name += " " + (text if len(text) <= 40 else text[:37] + "...")
    return name


FIX = "fix or remove that record"


def bad(where: str, what: str, error: type[Exception] = DatasetFormatError) -> Exception:
    """``error("<where>: <what>")``, to raise."""
    return error(f"{where}: {what}")


def wrong_type(value: Any, where: str, expected: str,
               error: type[Exception] = DatasetFormatError) -> Exception:
    """The error for ``value`` found at ``where`` instead of ``expected``, to raise."""
    return error(f"{where} is {json_kind(value)}, expected {expected} ({FIX})")


def need_type(value: Any, types: type | tuple[type, ...], where: str, expected: str, *,
              error: type[Exception] = DatasetFormatError) -> Any:
    """``value`` if it is one of ``types`` (never a bool for number types), else the error."""
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in
                                        (types if isinstance(types, tuple) else (types,))):
        raise wrong_type(value, where, expected, error)
    return value


def need_field(rec: dict, key: str, types: type | tuple[type, ...], where: str, expected: str, *,
               required: bool = True, default: Any = None,
               error: type[Exception] = DatasetFormatError) -> Any:
    """``rec[key]`` checked against ``types``; a missing (or null) field is ``default``, or the
    error when ``required``."""
    if key not in rec or rec[key] is None:
        if required:
            raise bad(where, f"{key!r} is missing (expected {expected}; {FIX})", error)
        return default
    return need_type(rec[key], types, f"{where}: {key!r}", expected, error=error)


def keyed_records(raw: list, path: Path, record: str, key: str, expected: str,
                  key_expected: str, unique: str) -> Iterator[tuple[str, dict, str]]:
    """``(id, rec, where)`` for each record of a file's top-level list ``raw``: an object whose
    ``key`` (a string or an integer, as ``str``) no earlier record has. ``where`` names the file,
    the record (``<record> <index> (<key> <id>)``); ``expected`` is what a record should be,
    ``key_expected`` its id, ``unique`` how to fix a repeated id."""
    seen: dict[str, int] = {}
    for index, rec in enumerate(raw):
        where = f"{path}: {record} {index}"
        need_type(rec, dict, where, expected)
        rid = str(need_field(rec, key, (str, int), where, key_expected))
        if rid in seen:
            raise bad(where, f"{key} {rid!r} repeats {record} {seen[rid]} ({unique})")
        seen[rid] = index
        yield rid, rec, f"{where} ({key} {rid})"


def check_units(kind: str, allowed: Iterable[str], dataset: str) -> str:
    """``kind`` if the loader of ``dataset`` builds such units, else a ``ValueError``."""
    allowed = tuple(allowed)
    if kind not in allowed:
        raise ValueError(f"{dataset} has no {kind!r} units; choose one of {', '.join(allowed)}")
    return kind


def uniq(items: Iterable[str]) -> tuple[str, ...]:
    """``items`` without repeats, in first-seen order."""
    return tuple(dict.fromkeys(items))
