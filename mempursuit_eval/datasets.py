"""Benchmark loaders: LoCoMo, LongMemEval (``_s`` / ``_oracle``) and BEAM, as memory units + questions.

Each loader returns a :class:`Dataset`: the :class:`~mempursuit_eval.base.MemoryUnit` list a
store is built from (every unit keeps its session id, its source turn / message ids and its
timestamp) and the :class:`Question` records with their gold evidence.

Unit kinds (``units=``):

* ``"turns"`` (default): one unit per dialogue turn / chat message.
* ``"observations"``: LoCoMo only, the dataset's LLM-extracted facts, each with its source turn(s).
* ``"summaries"``: LoCoMo only, one session summary per session (its source ids are every turn of
  that session, so turn-level recall equals session-level recall for this kind).
* ``"sessions"``: one unit per whole session (all turns joined; the embedder truncates).

Gold evidence: LoCoMo ``evidence`` dia_ids (session = the ``D<n>`` prefix); LongMemEval
``answer_session_ids`` and the turns marked ``has_answer``; BEAM ``source_chat_ids`` (session =
the batch holding the message). Evidence ids that do not resolve to a turn are never dropped
silently: they are kept in ``Question.unresolved_evidence`` and counted in ``Dataset.notes``.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import tempfile
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from .base import MemoryUnit

__all__ = [
    "Question",
    "Dataset",
    "DatasetNotFoundError",
    "DatasetFormatError",
    "DATASETS",
    "UNIT_KINDS",
    "load_dataset",
    "select_questions",
    "load_locomo",
    "load_longmemeval",
    "load_beam",
    "resolve_data_path",
    "default_cache_dir",
]

UNIT_KINDS = ("turns", "observations", "summaries", "sessions")

LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                     5: "adversarial"}


class DatasetNotFoundError(FileNotFoundError):
    """The dataset is not on disk and could not be downloaded; the message says where to get it."""


class DatasetFormatError(ValueError):
    """A benchmark file with a missing field or a value of the wrong type.

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


# --------------------------------------------------------------------------------------------
# Locating the files
# --------------------------------------------------------------------------------------------

#: Relative location inside a ``shared/data`` folder and the official download.
DATASETS: dict[str, dict[str, Any]] = {
    "locomo": {
        "relative": "locomo/locomo10.json",
        "urls": {"locomo10.json":
                 "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"},
        "home": "https://github.com/snap-research/locomo",
    },
    "longmemeval": {
        "relative": "longmemeval/longmemeval_s.json.gz",
        "urls": {
            "longmemeval_s_cleaned.json": "https://huggingface.co/datasets/xiaowu0162/"
                                          "longmemeval-cleaned/resolve/main/longmemeval_s_cleaned.json",
        },
        "home": "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned",
    },
    "longmemeval-oracle": {
        "relative": "longmemeval/longmemeval_oracle.json.gz",
        "urls": {
            "longmemeval_oracle.json": "https://huggingface.co/datasets/xiaowu0162/"
                                       "longmemeval-cleaned/resolve/main/longmemeval_oracle.json",
        },
        "home": "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned",
    },
    "beam": {
        "relative": "beam/100K",
        # The 100K scale of the official repository, chat by chat (20 chats, two files each).
        "urls": {
            f"100K/{i}/{f}": "https://raw.githubusercontent.com/mohammadtavakoli78/BEAM/main/"
                             f"chats/100K/{i}/{f}"
            for i in range(1, 21)
            for f in ("chat.json", "probing_questions/probing_questions.json")
        },
        "home": "https://github.com/mohammadtavakoli78/BEAM (folder chats/<scale>)",
        "root": "100K",
    },
}


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


def resolve_data_path(dataset: str, data: str | os.PathLike | None = None, *,
                      cache_dir: str | os.PathLike | None = None, download: bool = True) -> Path:
    """Where to read ``dataset`` from.

    Order: ``data`` if given (must exist); ``$MEMPURSUIT_DATA/<relative>`` when that variable
    names a folder laid out like the benchmarks' copies (``locomo/locomo10.json``, ...); a
    previous download in ``<cache_dir>/data/<dataset>``; else download the official files
    there (``download=True``). The current directory is never searched.

    Raises
    ------
    DatasetNotFoundError
        With the official location and the ``--data`` hint when nothing is found and the
        download fails (e.g. offline).
    """
    key = dataset.lower()
    if key not in DATASETS:
        raise ValueError(f"unknown dataset {dataset!r}; known: {', '.join(DATASETS)}")
    spec = DATASETS[key]
    if data is not None:
        p = Path(data).expanduser()
        if not p.exists():
            raise DatasetNotFoundError(f"{dataset}: {p} does not exist")
        return p
    if os.environ.get(DATA_ENV):
        p = Path(os.environ[DATA_ENV]).expanduser() / spec["relative"]
        if p.exists():
            return p
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    target = cache / "data" / key
    first = next(iter(spec["urls"]))
    local = target / spec.get("root", first)
    if (target / ".complete").exists() and local.exists():
        return local
    if download:
        try:
            for rel, url in spec["urls"].items():
                dest = target / rel
                if not dest.exists():
                    _download(url, dest)
            (target / ".complete").write_text("ok\n")
            return local
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = f"download failed ({exc})"
    else:
        reason = "downloads are off"
    raise DatasetNotFoundError(
        f"{dataset}: no local copy found (looked in ${DATA_ENV}/{spec['relative']} and "
        f"{target}) and {reason}. Get the official files from {spec['home']} and pass "
        f"--data PATH (Python: data=PATH)."
    )


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


#: What reading a (possibly gzipped) JSON file can raise for a bad file.
JSON_ERRORS = (OSError, EOFError, zlib.error, json.JSONDecodeError, UnicodeDecodeError,
               RecursionError)


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


def _kind(value: Any) -> str:
    """``value`` in JSON words: ``a list``, ``a string 'abc'``, ..."""
    name = _JSON_KIND.get(type(value), type(value).__name__)
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        text = repr(value)
        name += " " + (text if len(text) <= 40 else text[:37] + "...")
    return name


_FIX = "fix or remove that record"


def _bad(where: str, what: str) -> DatasetFormatError:
    return DatasetFormatError(f"{where}: {what}")


def _need_type(value: Any, types: type | tuple[type, ...], where: str, expected: str) -> Any:
    """``value`` if it is one of ``types`` (never a bool for number types), else the error."""
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in
                                        (types if isinstance(types, tuple) else (types,))):
        raise DatasetFormatError(f"{where} is {_kind(value)}, expected {expected} ({_FIX})")
    return value


def _field(rec: dict, key: str, types: type | tuple[type, ...], where: str, expected: str, *,
           required: bool = True, default: Any = None) -> Any:
    """``rec[key]`` checked against ``types``; a missing (or null) required field is an error."""
    if key not in rec or rec[key] is None:
        if required:
            raise _bad(where, f"{key!r} is missing (expected {expected}; {_FIX})")
        return default
    return _need_type(rec[key], types, f"{where}: {key!r}", expected)


def _check_units(kind: str, allowed: Iterable[str], dataset: str) -> str:
    allowed = tuple(allowed)
    if kind not in allowed:
        raise ValueError(f"{dataset} has no {kind!r} units; choose one of {', '.join(allowed)}")
    return kind


def _uniq(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


# --------------------------------------------------------------------------------------------
# LoCoMo
# --------------------------------------------------------------------------------------------

_LOCOMO_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$",
                          re.I)
_DIA = re.compile(r"D:?(\d+):0*(\d+)")


def _locomo_time(text: str | None) -> str | None:
    if not text:
        return None
    m = _LOCOMO_DATE.match(text)
    if not m:
        return None
    hh, mm, ampm, day, month, year = m.groups()
    try:
        mon = datetime.strptime(month[:3].title(), "%b").month
    except ValueError:
        return None
    h = int(hh) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), mon, int(day), h, int(mm)).isoformat()


def _locomo_ids(raw: Any) -> list[str]:
    """Normalise LoCoMo evidence strings (``'D8:6; D9:17'``, ``'D:11:26'``, ``'D30:05'``)."""
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    out: list[str] = []
    for item in items:
        found = _DIA.findall(str(item))
        out.extend(f"D{s}:{t}" for s, t in found)
    return out


def _numbered(d: dict, where: str = "LoCoMo") -> list[tuple[int, str]]:
    """``[(n, key)]`` for keys like ``session_<n>_observation``, sorted by ``n``."""
    out = []
    for k in d:
        m = re.match(r"session_(\d+)", k)
        if not m:
            raise _bad(where, f"unexpected key {k!r} (expected session_<n>...; {_FIX})")
        out.append((int(m.group(1)), k))
    return sorted(out)


def _locomo_turn(turn: Any, where: str) -> dict:
    """A checked LoCoMo turn: an object whose ``speaker`` / ``text`` / ``blip_caption`` are
    strings when present."""
    _need_type(turn, dict, where, "an object with 'speaker' and 'text'")
    _field(turn, "text", str, where, "a string: what was said")
    for key in ("speaker", "blip_caption", "dia_id"):
        _field(turn, key, str, where, "a string", required=False)
    return turn


def _locomo_category(qa: dict, where: str) -> int:
    expected = ("an integer " + ", ".join(f"{n} ({c})" for n, c in LOCOMO_CATEGORIES.items()))
    value = qa.get("category")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if value is None:
        raise _bad(where, f"'category' is missing (expected {expected}; {_FIX})")
    if isinstance(value, bool) or not isinstance(value, int) or value not in LOCOMO_CATEGORIES:
        raise _bad(where, f"'category' is {_kind(qa.get('category'))}, expected {expected} "
                          f"({_FIX})")
    return value


def _locomo_turn_text(turn: dict) -> str:
    text = f"{turn.get('speaker', '')}: {turn.get('text', '')}".strip()
    cap = turn.get("blip_caption")
    if cap:
        text += f" [shares a photo: {cap}]"
    return text


def load_locomo(path: str | os.PathLike, *, units: str = "turns") -> Dataset:
    """LoCoMo (``locomo10.json``): one group per conversation (``sample_id``).

    Turn units read ``"<speaker>: <text>"`` plus ``" [shares a photo: <caption>]"`` when the turn
    has an image caption. Session ids are ``"<sample_id>/S<n>"``; turn ids
    ``"<sample_id>/D<n>:<m>"``. Categories: 1 multi-hop, 2 temporal, 3 open-domain,
    4 single-hop, 5 adversarial (the answer of category 5 is its ``adversarial_answer``).
    """
    _check_units(units, UNIT_KINDS, "LoCoMo")
    path = Path(path)
    raw = read_json(path)
    if not isinstance(raw, list) or not raw:
        raise DatasetFormatError(
            f"{path}: is not LoCoMo: the top level is {_kind(raw) if raw != [] else 'an empty list'}"
            ", expected a list of conversations (objects with 'sample_id', 'conversation', 'qa'); "
            "pass the official locomo10.json")
    unit_list: list[MemoryUnit] = []
    questions: list[Question] = []
    notes: list[str] = []
    n_unresolved = 0
    seen_sids: dict[str, int] = {}
    for c_index, sample in enumerate(raw):
        where = f"{path}: conversation {c_index}"
        _need_type(sample, dict, where, "an object with 'sample_id', 'conversation' and 'qa'")
        sid = str(_field(sample, "sample_id", (str, int), where, "a string such as 'conv-26'"))
        if sid in seen_sids:
            raise _bad(where, f"sample_id {sid!r} repeats conversation {seen_sids[sid]} "
                              "(sample ids must be unique)")
        seen_sids[sid] = c_index
        where = f"{where} (sample_id {sid})"
        conv = _field(sample, "conversation", dict, where,
                      "an object with session_<n> turn lists and session_<n>_date_time strings")
        sessions = []
        for k in conv:
            if m := re.fullmatch(r"session_(\d+)", k):
                _field(conv, k, list, f"{where}: conversation", "a list of turns")
                sessions.append((int(m.group(1)), k))
            elif re.fullmatch(r"session_\d+_date_time", k):
                _field(conv, k, str, f"{where}: conversation",
                       "a string such as '1:56 pm on 8 May, 2023'", required=False)
        sessions.sort()
        turn_ids: set[str] = set()
        session_turns: dict[int, list[str]] = {}
        times: dict[int, str | None] = {}
        for n, key in sessions:
            times[n] = _locomo_time(conv.get(f"{key}_date_time"))
            session_turns[n] = []
            sess_texts = []
            for t_index, turn in enumerate(conv[key]):
                _locomo_turn(turn, f"{where}: {key}[{t_index}]")
                dia = (_locomo_ids(turn.get("dia_id")) or [f"D{n}:{t_index + 1}"])[0]
                tid = f"{sid}/{dia}"
                turn_ids.add(tid)
                session_turns[n].append(tid)
                text = _locomo_turn_text(turn)
                sess_texts.append(text)
                if units == "turns":
                    unit_list.append(MemoryUnit(
                        uid=tid, text=text, group=sid, session_id=f"{sid}/S{n}",
                        source_ids=(tid,), timestamp=times[n], speaker=turn.get("speaker")))
            if units == "sessions":
                date = conv.get(f"{key}_date_time")
                head = f"[{date}]\n" if date else ""
                unit_list.append(MemoryUnit(
                    uid=f"{sid}/S{n}", text=head + "\n".join(sess_texts), group=sid,
                    session_id=f"{sid}/S{n}", source_ids=tuple(session_turns[n]),
                    timestamp=times[n]))
        if units == "observations":
            obs = _field(sample, "observation", dict, where,
                         "an object of session_<n>_observation objects", required=False) or {}
            for n, key in _numbered(obs, f"{where}: observation"):
                j = 0
                per_speaker = _field(obs, key, dict, f"{where}: observation",
                                     "an object of speaker: [[fact, evidence], ...]",
                                     required=False) or {}
                for speaker, facts in per_speaker.items():
                    fwhere = f"{where}: observation: {key}: {speaker}"
                    _need_type(facts, list, fwhere, "a list of [fact, evidence] pairs")
                    for f_index, fact in enumerate(facts):
                        _need_type(fact, list, f"{fwhere}[{f_index}]", "a [fact, evidence] pair")
                        if not fact:
                            raise _bad(f"{fwhere}[{f_index}]",
                                       f"is an empty list, expected [fact, evidence] ({_FIX})")
                        text, ids = (fact[0], fact[1]) if len(fact) >= 2 else (fact[0], [])
                        src = [f"{sid}/{d}" for d in _locomo_ids(ids)]
                        j += 1
                        unit_list.append(MemoryUnit(
                            uid=f"{sid}/S{n}/obs{j}", text=str(text), group=sid,
                            session_id=f"{sid}/S{n}", source_ids=tuple(src),
                            timestamp=times.get(n), speaker=speaker))
        if units == "summaries":
            summ = _field(sample, "session_summary", dict, where,
                          "an object of session_<n>_summary strings", required=False) or {}
            for n, key in _numbered(summ, f"{where}: session_summary"):
                if not summ[key]:
                    continue
                unit_list.append(MemoryUnit(
                    uid=f"{sid}/S{n}/summary", text=str(summ[key]), group=sid,
                    session_id=f"{sid}/S{n}", source_ids=tuple(session_turns.get(n, ())),
                    timestamp=times.get(n)))
        last_time = max((t for t in times.values() if t), default=None)
        for i, qa in enumerate(_field(sample, "qa", list, where, "a list of questions; "
                                      "'qa': [] for a conversation asked nothing")):
            qwhere = f"{where}: qa[{i}]"
            _need_type(qa, dict, qwhere, "an object with 'question', 'answer', 'evidence', "
                                         "'category'")
            qtext = _field(qa, "question", str, qwhere, "a string")
            cat_num = _locomo_category(qa, qwhere)
            evidence = _field(qa, "evidence", (list, str), qwhere,
                              "a list of dia ids such as ['D1:3']", required=False) or []
            if isinstance(evidence, str):
                evidence = [evidence]
            resolved, unresolved = [], []
            for ev in evidence:
                ids = _locomo_ids(ev)
                if not ids:
                    unresolved.append(str(ev))
                for d in ids:
                    tid = f"{sid}/{d}"
                    if tid in turn_ids:
                        resolved.append(tid)
                    else:
                        unresolved.append(d)
            # A turn id missing from the conversation still names its session (D<n>) when that
            # session exists.
            sess_nums = [int(_DIA.match(t.rsplit("/", 1)[1]).group(1)) for t in resolved]
            sess_nums += [int(m.group(1)) for u in unresolved
                          if (m := re.fullmatch(r"D(\d+):\d+", u)) and int(m.group(1)) in session_turns]
            gold_sessions = _uniq(f"{sid}/S{n}" for n in sess_nums)
            n_unresolved += len(unresolved)
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            questions.append(Question(
                qid=f"{sid}/q{i}", group=sid, text=qtext,
                category=LOCOMO_CATEGORIES.get(cat_num, str(cat_num)),
                gold_sessions=gold_sessions, gold_turns=_uniq(resolved),
                answer=str(answer), date=last_time, unresolved_evidence=tuple(unresolved),
                meta={"category_number": cat_num, "adversarial": cat_num == 5},
            ))
    if n_unresolved:
        bad = [(q.qid, q.unresolved_evidence) for q in questions if q.unresolved_evidence]
        notes.append(f"LoCoMo: {n_unresolved} evidence id(s) in {len(bad)} question(s) match no "
                     f"turn (kept as unresolved; their session still counts when it exists): "
                     + "; ".join(f"{q} {list(u)}" for q, u in bad))
    if units in ("observations", "summaries") and not unit_list:
        raise ValueError(f"{path} has no {units} to build units from")
    cats = [LOCOMO_CATEGORIES[c] for c in sorted(LOCOMO_CATEGORIES)]
    return Dataset("locomo", unit_list, questions, units, str(path), cats, notes)


# --------------------------------------------------------------------------------------------
# LongMemEval
# --------------------------------------------------------------------------------------------

_LME_DATE = re.compile(r"^\s*(\d{4})/(\d{2})/(\d{2})(?:\s*\([A-Za-z]+\))?\s*(?:(\d{1,2}):(\d{2}))?")


def _lme_time(text: str | None) -> str | None:
    if not text:
        return None
    m = _LME_DATE.match(str(text))
    if not m:
        return None
    y, mo, d, hh, mm = m.groups()
    return datetime(int(y), int(mo), int(d), int(hh or 0), int(mm or 0)).isoformat()


LME_CATEGORIES = ["single-session-user", "single-session-assistant", "single-session-preference",
                  "multi-session", "temporal-reasoning", "knowledge-update", "abstention"]


def load_longmemeval(path: str | os.PathLike, *, units: str = "turns") -> Dataset:
    """LongMemEval (``longmemeval_s*.json[.gz]`` or ``longmemeval_oracle.json[.gz]``).

    Every question searches its own haystack: group = ``question_id``. A unit's session id is
    the haystack session id; uids and turn ids also carry the session's position in the
    haystack (some haystacks list a session id twice). Turn units read ``"<role>: <content>"``.
    Questions whose id ends in ``_abs`` get category ``abstention`` (their type is in
    ``meta["question_type"]``); the evidence of those is not an answer, so they are left out
    by default.
    """
    _check_units(units, ("turns", "sessions"), "LongMemEval")
    path = Path(path)
    raw = read_json(path)
    if isinstance(raw, dict):
        raise DatasetFormatError(
            f"{path}: is not LongMemEval: the top level is an object, expected a list of records "
            "with 'question_id', 'question' and 'haystack_sessions' (the official files are "
            "lists; put a single record in [ ])")
    if (not isinstance(raw, list) or not raw or not isinstance(raw[0], dict)
            or "haystack_sessions" not in raw[0]):
        raise DatasetFormatError(
            f"{path}: is not LongMemEval: expected a list of records with 'question_id', "
            "'question' and 'haystack_sessions'; pass the official longmemeval_s / _oracle file")
    unit_list: list[MemoryUnit] = []
    questions: list[Question] = []
    notes: list[str] = []
    missing_gold = 0
    seen_qids: dict[str, int] = {}
    for r_index, rec in enumerate(raw):
        where = f"{path}: record {r_index}"
        _need_type(rec, dict, where, "an object with 'question_id', 'question' and "
                                     "'haystack_sessions'")
        qid = str(_field(rec, "question_id", (str, int), where, "a string"))
        if qid in seen_qids:
            raise _bad(where, f"question_id {qid!r} repeats record {seen_qids[qid]} (question ids "
                              "must be unique; remove or rename one)")
        seen_qids[qid] = r_index
        where = f"{where} (question_id {qid})"
        group = qid
        sids = [str(_need_type(s, (str, int), f"{where}: haystack_session_ids[{i}]", "a string"))
                for i, s in enumerate(_field(rec, "haystack_session_ids", list, where,
                                             "a list of session ids"))]
        sessions = _field(rec, "haystack_sessions", list, where, "a list of sessions (lists of "
                                                                 "turns)")
        dates = _field(rec, "haystack_dates", list, where, "a list of date strings",
                       required=False) or [None] * len(sids)
        if not (len(sids) == len(sessions) == len(dates)):
            raise DatasetFormatError(
                f"{where}: has {len(sids)} haystack_session_ids, {len(sessions)} "
                f"haystack_sessions and {len(dates)} haystack_dates; the three lists must have "
                f"the same length ({_FIX})")
        qtext = _field(rec, "question", str, where, "a string")
        qtype = _field(rec, "question_type", str, where, "a string", required=False)
        answer_list = [str(_need_type(s, (str, int), f"{where}: answer_session_ids[{i}]",
                                      "a string"))
                       for i, s in enumerate(_field(rec, "answer_session_ids", list, where,
                                                    "a list of session ids", required=False)
                                             or [])]
        answer_sids = set(answer_list)
        gold_turns: list[str] = []
        for pos, (sid, date, turns) in enumerate(zip(sids, dates, sessions)):
            swhere = f"{where}: haystack_sessions[{pos}]"
            _need_type(turns, list, swhere, "a list of turns")
            if date is not None:
                _need_type(date, str, f"{where}: haystack_dates[{pos}]", "a date string")
            ts = _lme_time(date)
            texts, tids = [], []
            for t_index, turn in enumerate(turns):
                twhere = f"{swhere}[{t_index}]"
                _need_type(turn, dict, twhere, "an object with 'role' and 'content'")
                _field(turn, "role", str, twhere, "a string", required=False)
                _field(turn, "content", str, twhere, "a string", required=False)
                tid = f"{qid}/{pos}:{sid}/{t_index}"
                text = f"{turn.get('role', '')}: {turn.get('content', '')}"
                texts.append(text)
                tids.append(tid)
                if turn.get("has_answer") and sid in answer_sids:
                    gold_turns.append(tid)
                if units == "turns":
                    unit_list.append(MemoryUnit(uid=tid, text=text, group=group, session_id=sid,
                                                source_ids=(tid,), timestamp=ts,
                                                speaker=turn.get("role")))
            if units == "sessions":
                head = f"[{date}]\n" if date else ""
                unit_list.append(MemoryUnit(uid=f"{qid}/{pos}:{sid}", text=head + "\n".join(texts),
                                            group=group, session_id=sid, source_ids=tuple(tids),
                                            timestamp=ts))
        present = [s for s in answer_sids if s in set(sids)]
        missing_gold += len(answer_sids) - len(present)
        abstention = qid.endswith("_abs")
        if rec.get("question_date") is not None:
            _field(rec, "question_date", str, where, "a date string")
        questions.append(Question(
            qid=qid, group=group, text=qtext,
            category="abstention" if abstention else str(qtype or ""),
            gold_sessions=tuple(s for s in answer_list if s in present),
            gold_turns=tuple(gold_turns), answer=str(rec.get("answer", "")),
            date=_lme_time(rec.get("question_date")),
            unresolved_evidence=tuple(s for s in answer_sids if s not in present),
            meta={"question_type": rec.get("question_type"), "abstention": abstention},
        ))
    if missing_gold:
        notes.append(f"LongMemEval: {missing_gold} answer session id(s) are not in their haystack")
    name = "longmemeval-oracle" if "oracle" in path.name else "longmemeval"
    return Dataset(name, unit_list, questions, units, str(path), list(LME_CATEGORIES), notes)


# --------------------------------------------------------------------------------------------
# BEAM
# --------------------------------------------------------------------------------------------

BEAM_ANSWER_FIELDS = ("answer", "ideal_answer", "ideal_response", "ideal_summary",
                      "expected_compliance")


def _beam_time(text: str | None) -> str | None:
    if not text:
        return None
    for fmt in ("%B-%d-%Y", "%b-%d-%Y", "%B %d, %Y", "%Y-%m-%d"):
        try:
            return datetime.strptime(str(text).strip(), fmt).isoformat()
        except ValueError:
            continue
    return None


def _flatten_ids(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, dict):
        return [i for v in x.values() for i in _flatten_ids(v)]
    if isinstance(x, (list, tuple)):
        return [i for v in x for i in _flatten_ids(v)]
    return [x]


def _beam_chats(path: Path) -> list[Path]:
    if path.is_file():
        path = path.parent
    chats = sorted({p.parent for p in path.rglob("chat.json")},
                   key=lambda p: [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", str(p))])
    if not chats:
        raise ValueError(f"no BEAM chat.json under {path} (expected <scale>/<chat>/chat.json)")
    return chats


def load_beam(path: str | os.PathLike, *, units: str = "turns") -> Dataset:
    """BEAM: every ``chat.json`` under ``path`` (a scale folder such as ``100K``, one chat, or a
    folder of scales) with its ``probing_questions/probing_questions.json``.

    Group = the chat folder relative to ``path`` (e.g. ``"100K/3"`` or ``"3"``). A session is
    one ``batch`` of the chat (``"<group>/b<batch_number>"``); message ids are
    ``"<group>/m<id>"``. Units read ``"<role>: <content>"``; the batch's time anchor (first
    message that has one) is the timestamp. Categories are the probing question types.
    """
    _check_units(units, ("turns", "sessions"), "BEAM")
    root = Path(path)
    chats = _beam_chats(root)
    base = root if root.is_dir() else root.parent
    unit_list: list[MemoryUnit] = []
    questions: list[Question] = []
    notes: list[str] = []
    categories: dict[str, None] = {}
    for chat_dir in chats:
        group = chat_dir.relative_to(base).as_posix() if chat_dir != base else chat_dir.name
        chat_file = chat_dir / "chat.json"
        raw = read_json(chat_file)
        if not isinstance(raw, list) or (raw and not (isinstance(raw[0], dict)
                                                      and "turns" in raw[0])):
            raise DatasetFormatError(f"{chat_file}: unsupported BEAM chat format (expected a "
                                     "list of batches with 'turns'); pass a BEAM chats/<scale> "
                                     "folder")
        msg_session: dict[Any, str] = {}
        for b_index, batch in enumerate(raw):
            bwhere = f"{chat_file}: batch {b_index}"
            _need_type(batch, dict, bwhere, "an object with 'turns'")
            bno = _field(batch, "batch_number", (int, str), bwhere, "a number",
                         required=False, default=b_index + 1)
            session = f"{group}/b{bno}"
            msgs, mwheres = [], []
            for t_index, turn in enumerate(_field(batch, "turns", list, bwhere,
                                                  "a list of turns", required=False) or []):
                for m_index, m in enumerate(turn if isinstance(turn, list) else [turn]):
                    mw = f"{bwhere}: turns[{t_index}]" + (f"[{m_index}]"
                                                          if isinstance(turn, list) else "")
                    _need_type(m, dict, mw, "a message object with 'id', 'role' and 'content'")
                    _field(m, "id", (int, str), mw, "a message id (number)")
                    for key in ("role", "content", "time_anchor"):
                        _field(m, key, str, mw, "a string", required=False)
                    msgs.append(m)
                    mwheres.append(mw)
            anchor = batch.get("time_anchor") or next(
                (m.get("time_anchor") for m in msgs if m.get("time_anchor")), None)
            if not isinstance(anchor, (str, type(None))):
                raise DatasetFormatError(f"{bwhere}: 'time_anchor' is {_kind(anchor)}, expected "
                                         f"a date string ({_FIX})")
            ts = _beam_time(anchor)
            texts, mids = [], []
            for m, mw in zip(msgs, mwheres):
                mid = f"{group}/m{m['id']}"
                if m["id"] in msg_session:
                    raise DatasetFormatError(f"{mw}: message id {m['id']!r} repeats (ids must "
                                             "be unique within a chat)")
                msg_session[m["id"]] = session
                text = f"{m.get('role', '')}: {m.get('content', '')}"
                texts.append(text)
                mids.append(mid)
                if units == "turns":
                    unit_list.append(MemoryUnit(uid=mid, text=text, group=group,
                                                session_id=session, source_ids=(mid,),
                                                timestamp=ts, speaker=m.get("role")))
            if units == "sessions":
                unit_list.append(MemoryUnit(uid=session, text="\n".join(texts), group=group,
                                            session_id=session, source_ids=tuple(mids),
                                            timestamp=ts))
        qfile = chat_dir / "probing_questions" / "probing_questions.json"
        if not qfile.exists():
            notes.append(f"BEAM: {group} has no probing_questions.json; its chat is stored but "
                         "asked nothing")
            continue
        probing = read_json(qfile)
        _need_type(probing, dict, str(qfile), "an object of question type: [questions]")
        for cat, items in probing.items():
            _need_type(items, list, f"{qfile}: {cat!r}", "a list of questions")
            categories.setdefault(cat, None)
            for i, item in enumerate(items):
                qwhere = f"{qfile}: {cat}[{i}]"
                _need_type(item, dict, qwhere, "an object with 'question'")
                qtext = _field(item, "question", str, qwhere, "a string")
                _field(item, "source_chat_ids", (list, dict, int), qwhere,
                       "a list of message ids (numbers), or an object of such lists",
                       required=False)
                ids = _flatten_ids(item.get("source_chat_ids"))
                resolved = [x for x in ids if x in msg_session]
                unresolved = [str(x) for x in ids if x not in msg_session]
                answer = next((item[f] for f in BEAM_ANSWER_FIELDS if item.get(f)), "")
                questions.append(Question(
                    qid=f"{group}/{cat}/{i}", group=group, text=qtext,
                    category=cat,
                    gold_sessions=_uniq(msg_session[x] for x in resolved),
                    gold_turns=_uniq(f"{group}/m{x}" for x in resolved),
                    answer=answer if isinstance(answer, str) else json.dumps(answer),
                    unresolved_evidence=tuple(unresolved),
                    meta={"difficulty": item.get("difficulty")},
                ))
                if unresolved:
                    notes.append(f"BEAM: {group}/{cat}/{i} cites message ids {unresolved} that "
                                 "are not in the chat")
    return Dataset("beam", unit_list, questions, units, str(root), list(categories), notes)


# --------------------------------------------------------------------------------------------

#: Loaders that live in other modules, as ``"module:function"`` (imported on first use, like
#: the stores in :mod:`mempursuit_eval.backends`; the custom format builds on this module).
EXTERNAL_LOADERS = {"custom": "mempursuit_eval.custom:load_custom"}  # docs/eval-custom-data.md


def _external(key: str):
    import importlib

    module, _, attr = EXTERNAL_LOADERS[key].partition(":")
    return getattr(importlib.import_module(module), attr)


def _load_custom(path, *, units: str = "turns") -> Dataset:
    return _external("custom")(path, units=units)


_LOADERS = {"locomo": load_locomo, "longmemeval": load_longmemeval,
            "longmemeval-oracle": load_longmemeval, "beam": load_beam, "custom": _load_custom}
#: Datasets read from the file given (``--data``), never searched for or downloaded.
PATH_ONLY = {"custom"}

#: Categories evaluated unless asked otherwise: the ones whose evidence answers the question.
DEFAULT_EXCLUDED = {"locomo": {"adversarial"}, "longmemeval": {"abstention"},
                    "longmemeval-oracle": {"abstention"}, "beam": {"abstention"}}


def load_dataset(name: str, path: str | os.PathLike | None = None, *, units: str = "turns",
                 cache_dir: str | os.PathLike | None = None, download: bool = True) -> Dataset:
    """Load ``locomo``, ``longmemeval`` (``_s``; ``longmemeval-oracle`` for the oracle file when no
    path is given) or ``beam`` from ``path`` (see :func:`resolve_data_path` for the default), or
    ``custom`` from the file ``path`` (:mod:`mempursuit_eval.custom`)."""
    key = name.lower()
    if key not in _LOADERS:
        raise ValueError(f"unknown dataset {name!r}; known: locomo, longmemeval, "
                         "longmemeval-oracle, beam, custom")
    if key in PATH_ONLY:
        return _LOADERS[key](path, units=units)
    p = resolve_data_path(key, path, cache_dir=cache_dir, download=download)
    return _LOADERS[key](p, units=units)


def select_questions(ds: Dataset, categories: Sequence[str] | None = None,
                     limit: int | None = None, groups: Sequence[str] | None = None,
                     require_gold: bool = False) -> list[Question]:
    """Questions in the given categories (names, or LoCoMo numbers), groups and order, at most
    ``limit``. ``categories=None`` uses the dataset's default (all but the ones without
    answering evidence: LoCoMo adversarial, LongMemEval / BEAM abstention)."""
    qs = ds.questions
    if categories is None:
        excluded = getattr(ds, "default_excluded", None) or DEFAULT_EXCLUDED.get(ds.name, set())
        qs = [q for q in qs if q.category not in excluded]
    else:
        wanted = set()
        known = set(ds.categories) | {q.category for q in qs}
        for c in categories:
            c = str(c).strip()
            if ds.name == "locomo" and c.isdigit() and int(c) in LOCOMO_CATEGORIES:
                c = LOCOMO_CATEGORIES[int(c)]
            if c == "all":
                wanted |= known
                continue
            if c not in known:
                raise ValueError(f"unknown {ds.name} category {c!r}; known: {', '.join(sorted(known))}")
            wanted.add(c)
        qs = [q for q in qs if q.category in wanted]
    if groups is not None:
        g = set(groups)
        unknown = g - set(ds.groups()) - {q.group for q in ds.questions}
        if unknown:
            known = ds.groups()
            raise ValueError(f"unknown group(s) {sorted(unknown)}; {ds.name} has "
                             f"{', '.join(known[:10])}" + (" ..." if len(known) > 10 else ""))
        qs = [q for q in qs if q.group in g]
    if require_gold:
        qs = [q for q in qs if q.gold_sessions]
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        qs = qs[:limit]
    return qs
