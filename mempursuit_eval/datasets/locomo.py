"""LoCoMo (``locomo10.json``): one group per conversation, turns / observations / summaries /
sessions as units, gold evidence from the ``evidence`` dia ids."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ..base import MemoryUnit
from .base import Dataset, DatasetFormatError, Question
from .catalog import DATASETS, LOCOMO_CATEGORIES
from .checks import (FIX, bad, check_units, json_kind, keyed_records, need_field, need_type,
                     read_json, uniq)

__all__ = ["load_locomo", "LOCOMO_CATEGORIES"]

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
            raise bad(where, f"unexpected key {k!r} (expected session_<n>...; {FIX})")
        out.append((int(m.group(1)), k))
    return sorted(out)


def _locomo_turn(turn: Any, where: str) -> dict:
    """A checked LoCoMo turn: an object whose ``speaker`` / ``text`` / ``blip_caption`` are
    strings when present."""
    need_type(turn, dict, where, "an object with 'speaker' and 'text'")
    need_field(turn, "text", str, where, "a string: what was said")
    for key in ("speaker", "blip_caption", "dia_id"):
        need_field(turn, key, str, where, "a string", required=False)
    return turn


def _locomo_category(qa: dict, where: str) -> int:
    expected = ("an integer " + ", ".join(f"{n} ({c})" for n, c in LOCOMO_CATEGORIES.items()))
    value = qa.get("category")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if value is None:
        raise bad(where, f"'category' is missing (expected {expected}; {FIX})")
    if isinstance(value, bool) or not isinstance(value, int) or value not in LOCOMO_CATEGORIES:
        raise bad(where, f"'category' is {json_kind(qa.get('category'))}, expected {expected} "
                          f"({FIX})")
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
    check_units(units, DATASETS["locomo"].units, "LoCoMo")
    path = Path(path)
    raw = read_json(path)
    if not isinstance(raw, list) or not raw:
        raise DatasetFormatError(
            f"{path}: is not LoCoMo: the top level is {json_kind(raw) if raw != [] else 'an empty list'}"
            ", expected a list of conversations (objects with 'sample_id', 'conversation', 'qa'); "
            "pass the official locomo10.json")
    unit_list: list[MemoryUnit] = []
    questions: list[Question] = []
    notes: list[str] = []
    n_unresolved = 0
    for sid, sample, where in keyed_records(
            raw, path, "conversation", "sample_id",
            "an object with 'sample_id', 'conversation' and 'qa'", "a string such as 'conv-26'",
            "sample ids must be unique"):
        conv = need_field(sample, "conversation", dict, where,
                      "an object with session_<n> turn lists and session_<n>_date_time strings")
        sessions = []
        for k in conv:
            if m := re.fullmatch(r"session_(\d+)", k):
                need_field(conv, k, list, f"{where}: conversation", "a list of turns")
                sessions.append((int(m.group(1)), k))
            elif re.fullmatch(r"session_\d+_date_time", k):
                need_field(conv, k, str, f"{where}: conversation",
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
            obs = need_field(sample, "observation", dict, where,
                         "an object of session_<n>_observation objects", required=False) or {}
            for n, key in _numbered(obs, f"{where}: observation"):
                j = 0
                per_speaker = need_field(obs, key, dict, f"{where}: observation",
                                     "an object of speaker: [[fact, evidence], ...]",
                                     required=False) or {}
                for speaker, facts in per_speaker.items():
                    fwhere = f"{where}: observation: {key}: {speaker}"
                    need_type(facts, list, fwhere, "a list of [fact, evidence] pairs")
                    for f_index, fact in enumerate(facts):
                        need_type(fact, list, f"{fwhere}[{f_index}]", "a [fact, evidence] pair")
                        if not fact:
                            raise bad(f"{fwhere}[{f_index}]",
                                       f"is an empty list, expected [fact, evidence] ({FIX})")
                        text, ids = (fact[0], fact[1]) if len(fact) >= 2 else (fact[0], [])
                        src = [f"{sid}/{d}" for d in _locomo_ids(ids)]
                        j += 1
                        unit_list.append(MemoryUnit(
                            uid=f"{sid}/S{n}/obs{j}", text=str(text), group=sid,
                            session_id=f"{sid}/S{n}", source_ids=tuple(src),
                            timestamp=times.get(n), speaker=speaker))
        if units == "summaries":
            summ = need_field(sample, "session_summary", dict, where,
                          "an object of session_<n>_summary strings", required=False) or {}
            for n, key in _numbered(summ, f"{where}: session_summary"):
                if not summ[key]:
                    continue
                unit_list.append(MemoryUnit(
                    uid=f"{sid}/S{n}/summary", text=str(summ[key]), group=sid,
                    session_id=f"{sid}/S{n}", source_ids=tuple(session_turns.get(n, ())),
                    timestamp=times.get(n)))
        last_time = max((t for t in times.values() if t), default=None)
        for i, qa in enumerate(need_field(sample, "qa", list, where, "a list of questions; "
                                      "'qa': [] for a conversation asked nothing")):
            qwhere = f"{where}: qa[{i}]"
            need_type(qa, dict, qwhere, "an object with 'question', 'answer', 'evidence', "
                                         "'category'")
            qtext = need_field(qa, "question", str, qwhere, "a string")
            cat_num = _locomo_category(qa, qwhere)
            evidence = need_field(qa, "evidence", (list, str), qwhere,
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
            gold_sessions = uniq(f"{sid}/S{n}" for n in sess_nums)
            n_unresolved += len(unresolved)
            answer = qa.get("answer", qa.get("adversarial_answer", ""))
            questions.append(Question(
                qid=f"{sid}/q{i}", group=sid, text=qtext,
                category=LOCOMO_CATEGORIES.get(cat_num, str(cat_num)),
                gold_sessions=gold_sessions, gold_turns=uniq(resolved),
                answer=str(answer), date=last_time, unresolved_evidence=tuple(unresolved),
                meta={"category_number": cat_num, "adversarial": cat_num == 5},
            ))
    if n_unresolved:
        unmatched = [(q.qid, q.unresolved_evidence) for q in questions if q.unresolved_evidence]
        notes.append(f"LoCoMo: {n_unresolved} evidence id(s) in {len(unmatched)} question(s) "
                     "match no turn (kept as unresolved; their session still counts when it "
                     "exists): "
                     + "; ".join(f"{q} {list(u)}" for q, u in unmatched))
    if units in ("observations", "summaries") and not unit_list:
        raise ValueError(f"{path} has no {units} to build units from")
    cats = [LOCOMO_CATEGORIES[c] for c in sorted(LOCOMO_CATEGORIES)]
    return Dataset("locomo", unit_list, questions, units, str(path), cats, notes)
