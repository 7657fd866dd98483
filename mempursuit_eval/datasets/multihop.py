"""What the multi-hop document loaders share (HotpotQA, 2WikiMultihopQA, MuSiQue): reading the
files, and turning questions with their titled passages into memory units and gold evidence.

Units (``units=``):

* ``"paragraphs"`` (default): one unit per passage, its text ``"Title: text"`` (HotpotQA's and
  2WikiMultihopQA's sentences stripped and joined with one space), its
  :attr:`~mempursuit_eval.base.MemoryUnit.title` the passage's title. The unit is its own
  session and its own source: ``session_id = source_ids[0] = uid``.
* ``"sentences"``: one unit per sentence, ``"Title: sentence"``; its session is the paragraph
  it comes from (the paragraph's uid), its source the sentence (``"<paragraph uid>/<i>"``).

Settings (``setting=``):

* ``"pooled"`` (the open setting): every question's passages, deduplicated by (title, text),
  in ONE group (one shared store) that every question searches.
* ``"distractor"``: each question's own passages as its own group (named by the question id).

Gold evidence: ``gold_sessions`` are the question's own gold paragraphs (their uids: a title
that occurs with two different texts gives two paragraphs, ``"Title #1"`` and ``"Title #2"``,
and each question's gold is the version in its own context); ``gold_turns`` the same paragraphs
with paragraph units, the supporting sentences with sentence units. So with paragraph units
the session and turn levels are both the paragraph level (complete coverage = every gold
paragraph kept = recall_all@K), and with sentence units the session level asks for at least one
sentence of each gold paragraph and the turn level for every supporting sentence. Evidence that
names no passage of the question (a title not in its context, a sentence index past the
paragraph's end) is kept in ``Question.unresolved_evidence`` and counted in ``Dataset.notes``.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ..base import MemoryUnit
from .base import Dataset, DatasetFormatError, DatasetNotFoundError, Question
from .checks import FIX, JSON_ERRORS, bad, check_units, json_problem, need_field, need_type

__all__ = ["Passage", "Item", "SETTINGS", "UNITS", "read_records", "build_dataset",
           "data_files", "split_name"]

#: ``setting=``: one shared store, or each question's own passages.
SETTINGS = ("pooled", "distractor")
#: The unit kinds these loaders build (the first is the default).
UNITS = ("paragraphs", "sentences")
#: File names read first from a folder, in this order (the rest alphabetically).
SPLIT_ORDER = ("train", "dev", "validation", "test")
_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")


@dataclass(frozen=True)
class Passage:
    """One titled passage of a question's context (or of a corpus)."""

    title: str
    text: str
    sentences: tuple[str, ...] | None = None  # None: the format gives no sentences


@dataclass
class Item:
    """One question, normalised from any of the formats.

    ``gold`` holds indices into ``passages``; ``gold_sentences`` (passage index, sentence
    index) pairs; ``gold_titles`` supporting titles to resolve against a corpus (questions
    without a context).
    """

    qid: str
    question: str
    answer: str
    category: str
    passages: list[Passage]
    gold: list[int]
    gold_sentences: list[tuple[int, int]]
    split: str
    where: str
    meta: dict = field(default_factory=dict)
    unresolved: list[str] = field(default_factory=list)
    gold_titles: list[str] = field(default_factory=list)


def split_name(path: Path) -> str:
    """A file's split: its name without the data suffixes (``dev.jsonl`` -> ``dev``)."""
    name = path.name
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def data_files(path: str | os.PathLike, dataset: str) -> list[Path]:
    """The files to read: ``path`` itself, or a folder's ``.jsonl`` / ``.json`` (``.gz``) files,
    ``train``, ``dev``, ``validation``, ``test`` first and the rest by name."""
    if path is None:
        raise ValueError(f"{dataset} needs --data PATH (a .jsonl / .json file or a folder of them)")
    p = Path(path).expanduser()
    if not p.exists():
        raise DatasetNotFoundError(f"{dataset}: {p} does not exist")
    if not p.is_dir():
        return [p]
    files = [f for f in p.iterdir() if f.is_file() and f.name.lower().endswith(_SUFFIXES)
             and not f.name.startswith(".")]
    if not files:
        raise DatasetNotFoundError(f"{dataset}: {p} holds no .jsonl or .json file")
    rank = {s: i for i, s in enumerate(SPLIT_ORDER)}
    return sorted(files, key=lambda f: (rank.get(split_name(f), len(rank)), f.name))


def read_records(path: Path) -> Iterator[tuple[Any, str]]:
    """``(record, where)`` for every record of a ``.jsonl`` file (one JSON value a line, blank
    lines skipped; ``where`` = ``"<file>: line <n>"``) or a ``.json`` file holding a list
    (``"<file>: record <i>"``). A file that cannot be parsed is a :class:`DatasetFormatError`
    naming the file, the line and the problem."""
    path = Path(path)
    opener = gzip.open if path.name.lower().endswith(".gz") else open
    jsonl = path.name.lower().endswith((".jsonl", ".jsonl.gz"))
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            if jsonl:
                for n, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        yield json.loads(line), f"{path}: line {n}"
                    except json.JSONDecodeError as exc:
                        raise DatasetFormatError(
                            f"{path}: line {n}: not valid JSON at column {exc.colno}: {exc.msg} "
                            f"(one JSON object a line; {FIX})") from None
                return
            data = json.load(f)
    except JSON_ERRORS as exc:
        raise DatasetFormatError(f"{path}: {json_problem(exc)} (fix the file, or download it "
                                 "again)") from None
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if not isinstance(data, list):
        raise DatasetFormatError(f"{path}: the file holds {type(data).__name__}, expected a list "
                                 "of records (or one JSON object a line in a .jsonl file)")
    for i, rec in enumerate(data):
        yield rec, f"{path}: record {i}"


def record_id(rec: Any, where: str, keys: Sequence[str] = ("id", "_id")) -> tuple[str, str]:
    """The record's id (the first of ``keys`` present) and ``where`` with it."""
    if not isinstance(rec, dict):
        raise bad(where, f"is {type(rec).__name__}, expected an object ({FIX})")
    for key in keys:
        if rec.get(key) is not None:
            rid = need_type(rec[key], (str, int), f"{where}: {key!r}", "a string")
            return str(rid), f"{where} (id {str(rid)!r})"
    raise bad(where, f"{keys[0]!r} is missing (expected the question's id; {FIX})")


def text_field(rec: dict, key: str, where: str, *, required: bool = True) -> str:
    """A string field (a number is read as its text; a list of strings, e.g. answer aliases,
    as its first)."""
    value = need_field(rec, key, (str, int, float, list), where, "a string", required=required,
                       default="")
    if isinstance(value, list):
        value = value[0] if value and isinstance(value[0], str) else ""
    return str(value)


def joined(sentences: Sequence[str]) -> str:
    """Sentences stripped and joined with one space (HotpotQA's start with a space)."""
    return " ".join(s.strip() for s in sentences if s.strip())


# --------------------------------------------------------------------------------------------
# From items to a Dataset
# --------------------------------------------------------------------------------------------

def _uids(keys: Sequence[tuple[str, str]], prefix: str = "") -> dict[tuple[str, str], str]:
    """A readable uid per (title, text): ``prefix + title``, or ``prefix + "title #k"`` (k in
    first-seen order) when the title comes with several texts."""
    texts: dict[str, list[str]] = {}
    for title, text in keys:
        versions = texts.setdefault(title, [])
        if text not in versions:
            versions.append(text)
    return {(t, x): prefix + (t if len(v) == 1 else f"{t} #{v.index(x) + 1}")
            for t, v in texts.items() for x in v}


def _units_of(p: Passage, uid: str, group: str, kind: str, where: str) -> list[MemoryUnit]:
    if kind == "paragraphs":
        return [MemoryUnit(uid=uid, text=f"{p.title}: {p.text}", group=group, session_id=uid,
                           source_ids=(uid,), title=p.title)]
    if p.sentences is None:
        raise ValueError(f"{where}: passage {p.title!r} has no sentences (this format gives "
                         "paragraphs only); use --units paragraphs")
    return [MemoryUnit(uid=f"{uid}/{i}", text=f"{p.title}: {s.strip()}", group=group,
                       session_id=uid, source_ids=(f"{uid}/{i}",), title=p.title)
            for i, s in enumerate(p.sentences)]


def build_dataset(name: str, items: Sequence[Item], *, units: str, setting: str, source: str,
                  categories: Sequence[str] = (), corpus: Sequence[Passage] | None = None,
                  notes: Sequence[str] = ()) -> Dataset:
    """The :class:`Dataset` of ``items`` (see the module docstring).

    Parameters
    ----------
    name : str
        The dataset's name (``hotpotqa``, ``hotpotqa-distractor``, ...).
    items : sequence of Item
    units : {"paragraphs", "sentences"}
    setting : {"pooled", "distractor"}
    source : str
        What was read (for reports).
    categories : sequence of str
        Categories first in reports, in this order (the others follow as met).
    corpus : sequence of Passage, optional
        A separate corpus (a retrieval release's ``{title, text}`` file): the pooled store is
        the corpus, and gold titles resolve against it.
    """
    kind = check_units(units, UNITS, name)
    if setting not in SETTINGS:
        raise ValueError(f"{name}: setting must be one of {', '.join(SETTINGS)}, got {setting!r}")
    notes = list(notes)
    seen_q: dict[str, str] = {}
    for it in items:
        if it.qid in seen_q:
            raise DatasetFormatError(f"{it.where}: duplicate question id {it.qid!r} (first at "
                                     f"{seen_q[it.qid]}); question ids must be distinct ({FIX})")
        seen_q[it.qid] = it.where
    all_units: list[MemoryUnit] = []
    questions: list[Question] = []
    unresolved_n = 0
    if setting == "pooled":
        group = name.split("-")[0]
        pool = list(corpus) if corpus is not None else [p for it in items for p in it.passages]
        keys = [(p.title, p.text) for p in pool]
        uid_of = _uids(keys)
        first: dict[tuple[str, str], Passage] = {}
        for p in pool:
            first.setdefault((p.title, p.text), p)
        for key, p in first.items():
            all_units += _units_of(p, uid_of[key], group, kind, source)
        repeats = len(keys) - len(first)
        if repeats:
            where_repeated = "in the corpus" if corpus is not None else "across questions"
            notes.append(f"{repeats} passage(s) occur more than once ({where_repeated}); each is "
                         f"stored once ({len(first)} distinct (title, text) passages)")
        versions: dict[str, int] = {}
        for t, _ in first:
            versions[t] = versions.get(t, 0) + 1
        conflicts = sorted(t for t, n in versions.items() if n > 1)
        if conflicts:
            named = ", ".join(map(repr, conflicts[:5])) + (" ..." if len(conflicts) > 5 else "")
            notes.append(
                f"{len(conflicts)} title(s) come with different texts ({named}): every version "
                "is kept as its own "
                "paragraph ('Title #1', 'Title #2', ...) and a question's gold is the version in "
                "its own context")
        by_title: dict[str, list[tuple[str, str]]] = {}
        for key in first:
            by_title.setdefault(key[0], []).append(key)
        if corpus is not None:
            outside = {(p.title, p.text) for it in items for p in it.passages} - set(first)
            if outside:
                notes.append(f"{len(outside)} passage(s) of the questions' contexts are not in "
                             "the corpus and are not stored (the corpus is the store)")
    else:
        uid_of = {}
    for it in items:
        unresolved = list(it.unresolved)
        if setting == "pooled":
            group = name.split("-")[0]
            puid = {i: uid_of[(p.title, p.text)] for i, p in enumerate(it.passages)
                    if (p.title, p.text) in uid_of}
            gold_p = []
            for i in it.gold:
                if i in puid:
                    gold_p.append(puid[i])
                else:
                    unresolved.append(it.passages[i].title)
            for t in it.gold_titles:  # titles to resolve against the corpus
                found = by_title.get(t)
                if found:
                    gold_p += [uid_of[k] for k in found]
                else:
                    unresolved.append(t)
        else:
            if not it.passages:
                raise ValueError(f"{it.where}: no context passages; the distractor setting "
                                 "searches each question's own passages (use the pooled setting "
                                 "with a corpus)")
            group = it.qid
            local = _uids([(p.title, p.text) for p in it.passages], prefix=f"{it.qid}/")
            done: set[str] = set()
            for p in it.passages:
                u = local[(p.title, p.text)]
                if u not in done:
                    done.add(u)
                    all_units += _units_of(p, u, group, kind, it.where)
            puid = {i: local[(p.title, p.text)] for i, p in enumerate(it.passages)}
            gold_p = [puid[i] for i in it.gold]
            unresolved += it.gold_titles
        gold_p = list(dict.fromkeys(gold_p))
        if kind == "paragraphs":
            gold_t = list(gold_p)
        else:
            gold_t = []
            for i, s in it.gold_sentences:
                if i in puid:
                    gold_t.append(f"{puid[i]}/{s}")
            gold_t = list(dict.fromkeys(gold_t))
        unresolved_n += len(unresolved)
        questions.append(Question(
            qid=it.qid, group=group, text=it.question, category=it.category,
            gold_sessions=tuple(gold_p), gold_turns=tuple(gold_t), answer=it.answer,
            unresolved_evidence=tuple(unresolved),
            meta={"split": it.split, **it.meta}))
    if unresolved_n:
        notes.append(f"{unresolved_n} supporting fact(s) name no passage of their question "
                     "(kept in unresolved_evidence; questions without any resolved gold are not "
                     "scored)")
    cats = list(dict.fromkeys([c for c in categories if any(q.category == c for q in questions)]
                              + [q.category for q in questions]))
    return Dataset(name, all_units, questions, kind, source, cats, notes)


def load_files(name: str, path: str | os.PathLike | None, parse: Callable[[Any, str, str], Item],
               *, units: str | None, setting: str, categories: Sequence[str] = (),
               corpus: Callable[[Any, str], Passage] | None = None) -> Dataset:
    """Read every file of ``path`` (:func:`data_files`), each record through ``parse(record,
    where, split)``, and build the dataset. With ``corpus``, files whose name contains
    ``corpus`` are read as passages through ``corpus(record, where)``."""
    files = data_files(path, name)
    items: list[Item] = []
    passages: list[Passage] | None = None
    for f in files:
        if corpus is not None and "corpus" in f.name.lower():
            passages = (passages or []) + [corpus(rec, where) for rec, where in read_records(f)]
            continue
        split = split_name(f)
        items += [parse(rec, where, split) for rec, where in read_records(f)]
    if not items:
        raise DatasetFormatError(f"{path}: no questions found")
    p = Path(path).expanduser()
    return build_dataset(name, items, units=units or UNITS[0], setting=setting, source=str(p),
                         categories=categories, corpus=passages)
