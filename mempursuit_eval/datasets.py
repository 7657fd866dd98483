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
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from .base import MemoryUnit

__all__ = [
    "Question",
    "Dataset",
    "DatasetNotFoundError",
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
        f"{dataset}: no local copy found (looked in ../shared/data/{spec['relative']} and "
        f"{target}) and {reason}. Get the official files from {spec['home']} and pass "
        f"--data PATH (Python: data=PATH)."
    )


def _read_json(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read JSON from {path}: {exc}") from exc


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


def _numbered(d: dict) -> list[tuple[int, str]]:
    """``[(n, key)]`` for keys like ``session_<n>_observation``, sorted by ``n``."""
    out = []
    for k in d:
        m = re.match(r"session_(\d+)", k)
        if not m:
            raise ValueError(f"unexpected LoCoMo key {k!r}")
        out.append((int(m.group(1)), k))
    return sorted(out)


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
    raw = _read_json(path)
    if not isinstance(raw, list) or not raw or "conversation" not in raw[0]:
        raise ValueError(f"{path} is not LoCoMo (expected a list of samples with 'conversation')")
    unit_list: list[MemoryUnit] = []
    questions: list[Question] = []
    notes: list[str] = []
    n_unresolved = 0
    for sample in raw:
        sid = str(sample["sample_id"])
        conv = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), k) for k in conv
            if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(conv[k], list)
        )
        turn_ids: set[str] = set()
        session_turns: dict[int, list[str]] = {}
        times: dict[int, str | None] = {}
        for n, key in sessions:
            times[n] = _locomo_time(conv.get(f"{key}_date_time"))
            session_turns[n] = []
            sess_texts = []
            for t_index, turn in enumerate(conv[key]):
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
            obs = sample.get("observation") or {}
            for n, key in _numbered(obs):
                j = 0
                for speaker, facts in (obs[key] or {}).items():
                    for fact in facts:
                        text, ids = (fact[0], fact[1]) if len(fact) >= 2 else (fact[0], [])
                        src = [f"{sid}/{d}" for d in _locomo_ids(ids)]
                        j += 1
                        unit_list.append(MemoryUnit(
                            uid=f"{sid}/S{n}/obs{j}", text=str(text), group=sid,
                            session_id=f"{sid}/S{n}", source_ids=tuple(src),
                            timestamp=times.get(n), speaker=speaker))
        if units == "summaries":
            summ = sample.get("session_summary") or {}
            for n, key in _numbered(summ):
                if not summ[key]:
                    continue
                unit_list.append(MemoryUnit(
                    uid=f"{sid}/S{n}/summary", text=str(summ[key]), group=sid,
                    session_id=f"{sid}/S{n}", source_ids=tuple(session_turns.get(n, ())),
                    timestamp=times.get(n)))
        last_time = max((t for t in times.values() if t), default=None)
        for i, qa in enumerate(sample.get("qa", [])):
            cat_num = int(qa.get("category", 0))
            evidence = qa.get("evidence") or []
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
                qid=f"{sid}/q{i}", group=sid, text=str(qa["question"]),
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
    raw = _read_json(path)
    if isinstance(raw, dict):  # a single record or {id: record}
        raw = [raw] if "question_id" in raw else list(raw.values())
    if not isinstance(raw, list) or not raw or "haystack_sessions" not in raw[0]:
        raise ValueError(f"{path} is not LongMemEval (expected records with 'haystack_sessions')")
    unit_list: list[MemoryUnit] = []
    questions: list[Question] = []
    notes: list[str] = []
    missing_gold = 0
    for rec in raw:
        qid = str(rec["question_id"])
        group = qid
        sids = [str(s) for s in rec["haystack_session_ids"]]
        dates = rec.get("haystack_dates") or [None] * len(sids)
        sessions = rec["haystack_sessions"]
        if not (len(sids) == len(sessions) == len(dates)):
            raise ValueError(f"{path}: question {qid} has {len(sids)} session ids, "
                             f"{len(sessions)} sessions and {len(dates)} dates")
        answer_sids = {str(s) for s in rec.get("answer_session_ids") or []}
        gold_turns: list[str] = []
        for pos, (sid, date, turns) in enumerate(zip(sids, dates, sessions)):
            ts = _lme_time(date)
            texts, tids = [], []
            for t_index, turn in enumerate(turns):
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
        questions.append(Question(
            qid=qid, group=group, text=str(rec["question"]),
            category="abstention" if abstention else str(rec.get("question_type", "")),
            gold_sessions=tuple(s for s in rec.get("answer_session_ids") or [] if s in present),
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
        raw = _read_json(chat_dir / "chat.json")
        if not isinstance(raw, list) or (raw and "turns" not in raw[0]):
            raise ValueError(f"{chat_dir / 'chat.json'}: unsupported BEAM chat format "
                             "(expected a list of batches with 'turns')")
        msg_session: dict[Any, str] = {}
        for b_index, batch in enumerate(raw):
            bno = batch.get("batch_number", b_index + 1)
            session = f"{group}/b{bno}"
            msgs = [m for turn in batch.get("turns", []) for m in
                    (turn if isinstance(turn, list) else [turn])]
            anchor = batch.get("time_anchor") or next(
                (m.get("time_anchor") for m in msgs if m.get("time_anchor")), None)
            ts = _beam_time(anchor)
            texts, mids = [], []
            for m in msgs:
                mid = f"{group}/m{m['id']}"
                if m["id"] in msg_session:
                    raise ValueError(f"{chat_dir / 'chat.json'}: message id {m['id']} repeats")
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
        probing = _read_json(qfile)
        for cat, items in probing.items():
            categories.setdefault(cat, None)
            for i, item in enumerate(items):
                ids = _flatten_ids(item.get("source_chat_ids"))
                resolved = [x for x in ids if x in msg_session]
                unresolved = [str(x) for x in ids if x not in msg_session]
                answer = next((item[f] for f in BEAM_ANSWER_FIELDS if item.get(f)), "")
                questions.append(Question(
                    qid=f"{group}/{cat}/{i}", group=group, text=str(item["question"]),
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
            raise ValueError(f"unknown group(s) {sorted(unknown)}")
        qs = [q for q in qs if q.group in g]
    if require_gold:
        qs = [q for q in qs if q.gold_sessions]
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        qs = qs[:limit]
    return qs
