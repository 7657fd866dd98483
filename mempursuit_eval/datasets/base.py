"""What every loader returns (:class:`Question`, :class:`Dataset`), the errors, and downloads."""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..base import MemoryUnit

__all__ = ["Question", "Dataset", "DatasetNotFoundError", "DatasetFormatError",
           "default_cache_dir", "DATA_ENV"]


class DatasetNotFoundError(FileNotFoundError):
    """The dataset is not on disk and could not be downloaded; the message says where to get it."""


class DatasetFormatError(ValueError):
    """A data file with a missing field or a value of the wrong type.

    The message is one line: the file, the record (list index and id, e.g.
    ``locomo10.json: conversation 3 (sample_id conv-30): qa[5]``), the field, what was found,
    what is expected, and the fix. Indices are 0-based positions in the file's JSON lists.
    """


@dataclass(frozen=True)
class Question:
    """One benchmark question with its gold evidence.

    Attributes
    ----------
    qid : str
        Unique within the dataset.
    group : str
        The unit group (store scope) the question searches.
    text : str
        The question as asked (what the store embeds as the query).
    category : str
        Benchmark category (LoCoMo: ``multi-hop``, ``temporal``, ...; LongMemEval: question type;
        BEAM: ability).
    gold_sessions : tuple of str
        Session ids holding the evidence (empty: the question has no gold evidence and is left
        out of the retrieval metrics).
    gold_turns : tuple of str
        Turn / message ids holding the evidence (may be empty when only sessions are known).
    answer : str
        Reference answer (for end-to-end QA).
    date : str or None
        ISO-8601 time the question is asked, if the benchmark gives one.
    unresolved_evidence : tuple of str
        Evidence ids from the file that match no turn (typos in the source data).
    meta : dict
        Benchmark-specific extras (original category number / type, ...).
    """

    qid: str
    group: str
    text: str
    category: str
    gold_sessions: tuple[str, ...] = ()
    gold_turns: tuple[str, ...] = ()
    answer: str = ""
    date: str | None = None
    unresolved_evidence: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass
class Dataset:
    """Units to store and questions to ask.

    Attributes
    ----------
    name : str
    units : list of MemoryUnit
    questions : list of Question
    unit_kind : str
    source : str
        The path it was read from.
    categories : list of str
        Every category present in the file, in a stable order.
    notes : list of str
        Anything the loader had to repair or could not resolve (never silent).
    """

    name: str
    units: list[MemoryUnit]
    questions: list[Question]
    unit_kind: str
    source: str
    categories: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def groups(self) -> list[str]:
        seen: dict[str, None] = {}
        for u in self.units:
            seen.setdefault(u.group, None)
        return list(seen)

    def subset(self, questions: Sequence[Question]) -> "Dataset":
        """The questions given, with only the units of the groups they search."""
        groups = {q.group for q in questions}
        return Dataset(self.name, [u for u in self.units if u.group in groups], list(questions),
                       self.unit_kind, self.source, list(self.categories), list(self.notes))


def default_cache_dir() -> Path:
    """``$MEMPURSUIT_CACHE``, else ``~/.cache/mempursuit``."""
    env = os.environ.get("MEMPURSUIT_CACHE")
    if env:
        return Path(env).expanduser()
    return Path.home() / ".cache" / "mempursuit"


def _download(url: str, dest: Path, timeout: float = 60.0) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as resp:
            shutil.copyfileobj(resp, out)
        os.replace(tmp, dest)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


#: A folder with the benchmark files laid out as ``<dataset's relative path>``.
DATA_ENV = "MEMPURSUIT_DATA"
