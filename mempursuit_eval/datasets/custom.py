"""Your own data for ``mempursuit eval --dataset custom --data FILE`` (see docs/eval-custom-data.md).

FILE is ``.json``, ``.json.gz`` or ``.jsonl`` (``.jsonl.gz``):

* ``.json``: one object ``{"memories": [...], "questions": [...]}`` plus optional top-level
  ``"name"``, ``"units"`` (a label for the kind of memories), ``"categories"`` (their order in
  reports) and ``"default_excluded"`` (categories left out unless ``--categories`` asks).
* ``.jsonl``: one record per line, each ``{"memory": {...}}``, ``{"question": {...}}`` or
  ``{"meta": {...}}`` (the optional top-level fields); blank lines are skipped.

A memory is ``{"id", "text", "group"?, "session"?, "timestamp"?, "speaker"?, "title"?,
"sources"?, "meta"?}`` (``title``: the document's title, handed to policies as the ``titles``
signal); a question is ``{"id", "question", "gold", "group"?, "category"?, "answer"?,
"date"?, "gold_sessions"?, "gold_sources"?, "unresolved"?, "meta"?}`` where ``gold`` lists the
ids of the memories holding the evidence (``[]``: the question is asked but not scored).

Groups scope the search: a question searches only its group's memories; without ``group`` a
record is in the group ``"default"``. A memory without ``session`` is its own session, so the
session-level metrics then count memories. A memory's ``sources`` (default: its own id) are the
evidence ids it covers; a question's turn-level gold is the union of its gold memories'
sources, its session-level gold the sessions of its gold memories, unless ``gold_sources`` /
``gold_sessions`` give them (the converter writes them only where they differ).

Anything malformed raises :class:`CustomDataError` (a ``ValueError``) in one line naming the
file, the record (index and id) and the field.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..base import MemoryUnit
from .base import Dataset, DatasetFormatError, DatasetNotFoundError, Question
from .checks import JSON_ERRORS, json_problem, need_field, need_type, wrong_type

__all__ = ["CustomDataError", "CustomDataset", "load_custom", "attach_units", "write_custom",
           "dataset_to_records", "check_output_path", "DEFAULT_GROUP", "FORMAT"]

DEFAULT_GROUP = "default"
FORMAT = "mempursuit-custom/1"

MEMORY_FIELDS = {"id", "text", "group", "session", "timestamp", "speaker", "title", "sources",
                 "meta"}
QUESTION_FIELDS = {"id", "question", "gold", "group", "category", "answer", "date",
                   "gold_sessions", "gold_sources", "unresolved", "meta"}
META_FIELDS = {"format", "name", "units", "categories", "default_excluded", "notes"}
DEFAULT_CATEGORY = "default"


class CustomDataError(DatasetFormatError):
    """A custom data file is malformed; the message names the file, the record and the field
    (a wrong type or a missing field in the words of every loader: :mod:`.checks`)."""


@dataclass
class CustomDataset(Dataset):
    """A :class:`Dataset` read from a custom file.

    ``default_excluded``: categories :func:`~mempursuit_eval.datasets.select_questions` leaves
    out by default. ``pending``: for a questions-only file, the questions still waiting for
    their memories (:func:`attach_units`); ``questions`` is then empty.
    """

    default_excluded: set = field(default_factory=set)
    pending: list = field(default_factory=list)

    def subset(self, questions: Sequence[Question]) -> "CustomDataset":
        base = super().subset(questions)
        return CustomDataset(base.name, base.units, base.questions, base.unit_kind, base.source,
                             base.categories, base.notes, set(self.default_excluded))


@dataclass
class _RawQuestion:
    index: int
    qid: str
    group: str
    text: str
    category: str
    gold: tuple[str, ...]
    answer: str
    date: str | None
    gold_sessions: tuple[str, ...] | None
    gold_sources: tuple[str, ...] | None
    unresolved: tuple[str, ...]
    meta: dict


class _Reader:
    """The shared record checks (:mod:`.checks`) for one file, raising :class:`CustomDataError`."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, msg: str) -> CustomDataError:
        return CustomDataError(f"{self.path}: {where}: {msg}")

    @staticmethod
    def where(kind: str, index: int, rec: Any, line: int | None = None) -> str:
        rid = rec.get("id") if isinstance(rec, dict) else None
        at = f"line {line}, " if line is not None else ""
        return f"{at}{kind} #{index}" + (f" (id {rid!r})" if isinstance(rid, (str, int)) else "")

    def field(self, rec: dict, key: str, types, where: str, expected: str, *,
              required: bool = False) -> Any:
        return need_field(rec, key, types, f"{self.path}: {where}", expected, required=required,
                          error=CustomDataError)

    def string(self, rec: dict, key: str, where: str, *, required: bool = False,
               nonempty: bool = False) -> str | None:
        v = self.field(rec, key, str, where, "a non-empty string" if nonempty else "a string",
                       required=required)
        if v is not None and nonempty and not v.strip():
            raise self.fail(where, f"field {key!r} is empty")
        return v

    def strings(self, rec: dict, key: str, where: str, *, required: bool = False
                ) -> tuple[str, ...] | None:
        v = self.field(rec, key, list, where, "a list of strings", required=required)
        if v is None:
            return None
        for j, x in enumerate(v):
            if not isinstance(x, str) or not x:
                raise wrong_type(x, f"{self.path}: {where}: {key!r}[{j}]", "a non-empty string",
                                 CustomDataError)
        return tuple(dict.fromkeys(v))

    def time(self, rec: dict, key: str, where: str) -> str | None:
        v = self.string(rec, key, where)
        if v is None:
            return None
        try:
            datetime.fromisoformat(v)
        except ValueError:
            raise self.fail(where, f"field {key!r} is not an ISO-8601 time: {v!r}") from None
        return v

    def unknown(self, rec: dict, allowed: set, where: str) -> None:
        extra = sorted(set(rec) - allowed)
        if extra:
            raise self.fail(where, f"unknown field(s) {extra} (allowed: {sorted(allowed)}; put "
                                   "your own under 'meta')")

    def meta(self, rec: dict, where: str) -> dict:
        return dict(self.field(rec, "meta", dict, where, "an object") or {})


def _open_text(path: Path):
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def _is_jsonl(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(".jsonl") or name.endswith(".jsonl.gz")


def _read_records(path: Path) -> tuple[dict, list[tuple[Any, int | None]] | None,
                                       list[tuple[Any, int | None]]]:
    """(top-level fields, memories or None when absent, questions), each with its line number."""
    if _is_jsonl(path):
        meta: dict = {}
        memories: list = []
        questions: list = []
        saw_memories = False
        meta_line: int | None = None
        try:
            with _open_text(path) as f:
                for lineno, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except (json.JSONDecodeError, RecursionError) as exc:
                        raise CustomDataError(f"{path}: line {lineno}: "
                                              f"{json_problem(exc).replace('line 1 column', 'column')}"
                                              " (one JSON object per line)") from None
                    if not isinstance(rec, dict) or len(rec) != 1 or \
                            next(iter(rec)) not in ("memory", "question", "meta"):
                        raise CustomDataError(
                            f"{path}: line {lineno}: expected one of {{\"memory\": {{...}}}}, "
                            f"{{\"question\": {{...}}}} or {{\"meta\": {{...}}}}")
                    kind, body = next(iter(rec.items()))
                    if kind == "memory":
                        saw_memories = True
                        memories.append((body, lineno))
                    elif kind == "question":
                        questions.append((body, lineno))
                    else:
                        if not isinstance(body, dict):
                            raise CustomDataError(f"{path}: line {lineno}: 'meta' must be an object")
                        if meta_line is not None:
                            raise CustomDataError(
                                f"{path}: line {lineno}: a second 'meta' record (the first is on "
                                f"line {meta_line}); merge them into one")
                        meta_line = lineno
                        meta.update(body)
        except (OSError, UnicodeDecodeError, EOFError, zlib.error) as exc:
            raise CustomDataError(f"{path}: cannot read: {json_problem(exc)}") from None
        return meta, (memories if saw_memories else None), questions
    try:
        with _open_text(path) as f:
            raw = json.load(f)
    except JSON_ERRORS as exc:
        raise CustomDataError(f"{path}: {json_problem(exc)} (fix the file)") from None
    if not isinstance(raw, dict):
        raise CustomDataError(f"{path}: expected one JSON object with 'memories' and 'questions', "
                              f"got {type(raw).__name__}")
    extra = sorted(set(raw) - META_FIELDS - {"memories", "questions"})
    if extra:
        raise CustomDataError(f"{path}: unknown top-level field(s) {extra} (allowed: memories, "
                              f"questions, {', '.join(sorted(META_FIELDS))})")
    meta = {k: v for k, v in raw.items() if k in META_FIELDS}
    memories = raw.get("memories")
    if memories is not None and not isinstance(memories, list):
        raise CustomDataError(f"{path}: 'memories' must be a list, got {type(memories).__name__}")
    if "questions" not in raw:
        raise CustomDataError(f"{path}: missing top-level field 'questions'")
    questions = raw["questions"]
    if not isinstance(questions, list):
        raise CustomDataError(f"{path}: 'questions' must be a list, got {type(questions).__name__}")
    return (meta, None if memories is None else [(m, None) for m in memories],
            [(q, None) for q in questions])


def _parse_meta(r: _Reader, meta: dict) -> dict:
    extra = sorted(set(meta) - META_FIELDS)
    if extra:
        raise r.fail("meta", f"unknown field(s) {extra} (allowed: {sorted(META_FIELDS)})")
    if meta.get("format") not in (None, FORMAT):
        raise r.fail("meta", f"field 'format' is {meta['format']!r}; this reader knows {FORMAT!r}")
    out = {"name": r.string(meta, "name", "meta"), "units": r.string(meta, "units", "meta"),
           "categories": r.strings(meta, "categories", "meta") or (),
           "default_excluded": r.strings(meta, "default_excluded", "meta") or (),
           "notes": r.strings(meta, "notes", "meta") or ()}
    return out


def _record_id(r: _Reader, kind: str, i: int, rec: Any, line: int | None, fields,
               need: tuple[str, ...], seen: dict[str, int]) -> tuple[str, str]:
    """Where record ``i`` is (for messages) and its id, checked: an object with known fields
    and a new, non-empty id."""
    where = r.where(kind, i, rec, line)
    need_type(rec, dict, f"{r.path}: {where}", f"an object with {' and '.join(map(repr, need))}",
              error=CustomDataError)
    r.unknown(rec, fields, where)
    rid = r.string(rec, "id", where, required=True, nonempty=True)
    if rid in seen:
        raise r.fail(where, f"field 'id': duplicate id {rid!r} (first at {kind} #{seen[rid]})")
    seen[rid] = i
    return where, rid


def _parse_memories(r: _Reader, records: list[tuple[Any, int | None]]) -> list[MemoryUnit]:
    units: list[MemoryUnit] = []
    seen: dict[str, int] = {}
    for i, (rec, line) in enumerate(records):
        where, uid = _record_id(r, "memory", i, rec, line, MEMORY_FIELDS,
                                 ("id", "text"), seen)
        text = r.string(rec, "text", where, required=True, nonempty=True)
        group = r.string(rec, "group", where, nonempty=True) or DEFAULT_GROUP
        session = r.string(rec, "session", where, nonempty=True) or uid
        sources = r.strings(rec, "sources", where)
        if sources is not None and not sources:
            raise r.fail(where, "field 'sources' is empty (leave it out: the default is the id)")
        r.meta(rec, where)
        units.append(MemoryUnit(uid=uid, text=text, group=group, session_id=session,
                                source_ids=sources if sources is not None else (uid,),
                                timestamp=r.time(rec, "timestamp", where),
                                speaker=r.string(rec, "speaker", where),
                                title=r.string(rec, "title", where)))
    return units


def _parse_questions(r: _Reader, records: list[tuple[Any, int | None]]) -> list[_RawQuestion]:
    out: list[_RawQuestion] = []
    seen: dict[str, int] = {}
    for i, (rec, line) in enumerate(records):
        where, qid = _record_id(r, "question", i, rec, line, QUESTION_FIELDS,
                                 ("id", "question", "gold"), seen)
        gold = r.strings(rec, "gold", where, required=True)
        answer = r.string(rec, "answer", where) or ""
        out.append(_RawQuestion(
            index=i, qid=qid,
            group=r.string(rec, "group", where, nonempty=True) or DEFAULT_GROUP,
            text=r.string(rec, "question", where, required=True, nonempty=True),
            category=r.string(rec, "category", where, nonempty=True) or DEFAULT_CATEGORY,
            gold=gold, answer=answer, date=r.time(rec, "date", where),
            gold_sessions=r.strings(rec, "gold_sessions", where),
            gold_sources=r.strings(rec, "gold_sources", where),
            unresolved=r.strings(rec, "unresolved", where) or (),
            meta=r.meta(rec, where),
        ))
    return out


def _resolve(source: str, raw: Sequence[_RawQuestion], units: Sequence[MemoryUnit],
             what: str = "memory", notes: list[str] | None = None) -> list[Question]:
    """Questions with their gold sessions / sources resolved against ``units``."""
    by_id = {u.uid: u for u in units}
    sessions: dict[str, set[str]] = {}
    sources: dict[str, set[str]] = {}
    for u in units:
        sessions.setdefault(u.group, set()).add(u.session_id)
        sources.setdefault(u.group, set()).update(u.source_ids)
    out = []
    uncovered: list[tuple[str, str]] = []
    for q in raw:
        where = f"{source}: question #{q.index} (id {q.qid!r})"
        if q.group not in sessions:
            raise CustomDataError(f"{where}: field 'group': no {what} is in group {q.group!r}")
        gold_units = []
        for gid in q.gold:
            u = by_id.get(gid)
            if u is None:
                raise CustomDataError(f"{where}: field 'gold': unknown {what} id {gid!r}")
            if u.group != q.group:
                raise CustomDataError(f"{where}: field 'gold': {what} {gid!r} is in group "
                                      f"{u.group!r}, the question in group {q.group!r}")
            gold_units.append(u)
        if q.gold_sessions is not None:
            gold_sessions = q.gold_sessions
            uncovered += [(q.qid, s) for s in gold_sessions if s not in sessions[q.group]]
        else:
            gold_sessions = tuple(dict.fromkeys(u.session_id for u in gold_units))
        if q.gold_sources is not None:
            gold_turns = q.gold_sources
            uncovered += [(q.qid, s) for s in gold_turns if s not in sources[q.group]]
        else:
            gold_turns = tuple(dict.fromkeys(s for u in gold_units for s in u.source_ids))
        out.append(Question(qid=q.qid, group=q.group, text=q.text, category=q.category,
                            gold_sessions=gold_sessions, gold_turns=gold_turns, answer=q.answer,
                            date=q.date, unresolved_evidence=q.unresolved,
                            meta={**q.meta, "gold": list(q.gold)}))
    if notes is not None and uncovered:
        notes.append(f"custom: {len(uncovered)} explicit gold session / source id(s) are in no "
                     f"{what} of their group (kept: that evidence cannot be retrieved): "
                     + "; ".join(f"{q} {s!r}" for q, s in uncovered[:20])
                     + (" ..." if len(uncovered) > 20 else ""))
    return out


def load_custom(path: str | os.PathLike, *, units: str | None = "turns",
                questions_only: bool = False) -> CustomDataset:
    """Read a custom data file (see the module docstring).

    Parameters
    ----------
    path : path
    units : str
        Accepted for the loader signature; a custom file's memories are its units, so only the
        default ``"turns"`` (or ``"memories"``) is allowed.
    questions_only : bool
        Accept a file without memories (``--mem0-config``: the memories come from the store);
        the questions then wait in ``pending`` for :func:`attach_units`.

    Raises
    ------
    DatasetNotFoundError
        ``path`` does not exist.
    CustomDataError
        Anything malformed (one line: file, record index and id, field).
    """
    if path is None:
        raise CustomDataError("--dataset custom needs --data FILE (.json, .jsonl or .json.gz; "
                              "see docs/eval-custom-data.md)")
    p = Path(path).expanduser()
    if not p.exists():
        raise DatasetNotFoundError(f"custom: {p} does not exist")
    if p.is_dir():
        raise CustomDataError(f"{p}: is a folder; --dataset custom reads one .json, .jsonl or "
                              ".json.gz file")
    if units not in (None, "turns", "memories"):
        raise CustomDataError(f"{p}: a custom file's memories are its units; --units {units} "
                              "does not apply")
    r = _Reader(p)
    meta_raw, mem_records, q_records = _read_records(p)
    meta = _parse_meta(r, meta_raw)
    raw_questions = _parse_questions(r, q_records)
    if not raw_questions:
        raise CustomDataError(f"{p}: no questions")
    name = "custom"
    kind = meta["units"] or "memories"
    notes = list(meta["notes"])
    excluded = set(meta["default_excluded"])
    cats = list(dict.fromkeys(list(meta["categories"]) + [q.category for q in raw_questions]))
    if mem_records is None:
        if not questions_only:
            raise CustomDataError(
                f"{p}: missing top-level field 'memories' (a questions-only file needs "
                "--framework mem0 --mem0-config CONFIG.json, whose store holds the memories)")
        return CustomDataset(name, [], [], kind, str(p), cats, notes, excluded,
                             pending=raw_questions)
    if questions_only:
        raise CustomDataError(f"{p}: has a 'memories' list, but with --mem0-config the memories "
                              "are the store's; drop one of the two")
    unit_list = _parse_memories(r, mem_records)
    if not unit_list:
        raise CustomDataError(f"{p}: 'memories' is empty")
    questions = _resolve(str(p), raw_questions, unit_list, notes=notes)
    return CustomDataset(name, unit_list, questions, kind, str(p), cats, notes, excluded)


def attach_units(ds: CustomDataset, units: Sequence[MemoryUnit], *, what: str = "memory"
                 ) -> CustomDataset:
    """A questions-only dataset completed with ``units`` (e.g. a Mem0 store's memories): gold
    ids are checked against them exactly as for a full file."""
    if not ds.pending:
        raise ValueError("attach_units() needs a questions-only dataset")
    units = list(units)
    notes = list(ds.notes)
    questions = _resolve(ds.source, ds.pending, units, what, notes=notes)
    return CustomDataset(ds.name, units, questions, ds.unit_kind, ds.source, list(ds.categories),
                         notes, set(ds.default_excluded))


# --------------------------------------------------------------------------------------------
# Writing (the converter)
# --------------------------------------------------------------------------------------------

def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def dataset_to_records(ds: Dataset, *, default_excluded: Iterable[str] = ()
                       ) -> tuple[dict, list[dict], list[dict]]:
    """(top-level fields, memory records, question records) that :func:`load_custom` reads back
    as ``ds``: same units (ids, texts, groups, sessions, sources, timestamps, speakers) and the
    same questions (gold memories, gold sessions, gold turns, categories, answers, dates).

    A question's ``gold`` is every unit of its group that covers one of its gold turns (for
    turn units: the gold turns themselves); ``gold_sessions`` / ``gold_sources`` are written
    only where they differ from what ``gold`` implies.
    """
    memories = []
    by_group: dict[str, list[MemoryUnit]] = {}
    for u in ds.units:
        by_group.setdefault(u.group, []).append(u)
        memories.append(_drop_none({
            "id": u.uid, "text": u.text, "group": u.group,
            "session": u.session_id if u.session_id != u.uid else None,
            "timestamp": u.timestamp, "speaker": u.speaker, "title": u.title,
            "sources": list(u.source_ids) if tuple(u.source_ids) != (u.uid,) else None,
        }))
    # which units cover a source id, per group
    covering: dict[str, dict[str, list[str]]] = {}
    for g, us in by_group.items():
        idx: dict[str, list[str]] = {}
        for u in us:
            for s in u.source_ids:
                idx.setdefault(s, []).append(u.uid)
        covering[g] = idx
    units_by_id = {u.uid: u for u in ds.units}
    questions = []
    for q in ds.questions:
        idx = covering.get(q.group, {})
        gold = list(dict.fromkeys(uid for t in q.gold_turns for uid in idx.get(t, [])))
        gold_units = [units_by_id[x] for x in gold]
        implied_sessions = tuple(dict.fromkeys(u.session_id for u in gold_units))
        implied_sources = tuple(dict.fromkeys(s for u in gold_units for s in u.source_ids))
        rec = {"id": q.qid, "question": q.text, "gold": gold, "group": q.group,
               "category": q.category, "answer": q.answer or None, "date": q.date}
        if tuple(q.gold_sessions) != implied_sessions:
            rec["gold_sessions"] = list(q.gold_sessions)
        if tuple(q.gold_turns) != implied_sources:
            rec["gold_sources"] = list(q.gold_turns)
        if q.unresolved_evidence:
            rec["unresolved"] = list(q.unresolved_evidence)
        qmeta = {k: v for k, v in (q.meta or {}).items() if k != "gold"}
        if qmeta:
            rec["meta"] = json.loads(json.dumps(qmeta, default=str))
        questions.append(_drop_none(rec))
    meta = _drop_none({"format": FORMAT, "name": ds.name, "units": ds.unit_kind,
                       "categories": list(ds.categories) or None,
                       "default_excluded": sorted(default_excluded) or None,
                       "notes": list(ds.notes) or None})
    return meta, memories, questions


def check_output_path(out: str | os.PathLike) -> Path:
    """``out`` as a Path; ValueError unless it ends in .json, .json.gz, .jsonl or .jsonl.gz."""
    out = Path(out).expanduser()
    if not out.name.lower().endswith((".json", ".json.gz", ".jsonl", ".jsonl.gz")):
        raise ValueError(f"{out}: the output must end in .json, .json.gz, .jsonl or .jsonl.gz")
    return out


def write_custom(ds: Dataset, out: str | os.PathLike, *, default_excluded: Iterable[str] = ()
                 ) -> Path:
    """Write ``ds`` in the custom format to ``out`` (``.json``, ``.json.gz``, ``.jsonl`` or
    ``.jsonl.gz``), atomically; returns the path."""
    out = check_output_path(out)
    meta, memories, questions = dataset_to_records(ds, default_excluded=default_excluded)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.part")
    opener = gzip.open if out.suffix == ".gz" else open
    try:
        with opener(tmp, "wt", encoding="utf-8") as f:
            if _is_jsonl(out):
                f.write(json.dumps({"meta": meta}, ensure_ascii=False) + "\n")
                for m in memories:
                    f.write(json.dumps({"memory": m}, ensure_ascii=False) + "\n")
                for q in questions:
                    f.write(json.dumps({"question": q}, ensure_ascii=False) + "\n")
            else:
                json.dump({**meta, "memories": memories, "questions": questions}, f,
                          ensure_ascii=False)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return out
