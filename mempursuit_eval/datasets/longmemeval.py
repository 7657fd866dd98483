"""LongMemEval (``longmemeval_s*.json[.gz]`` / ``longmemeval_oracle.json[.gz]``): every question
searches its own haystack; gold evidence from ``answer_session_ids`` and ``has_answer`` turns."""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path

from ..base import MemoryUnit
from ..official import lme_corpus_id
from .base import Dataset, DatasetFormatError, Question
from .catalog import DATASETS
from .checks import FIX, bad, check_units, keyed_records, need_field, need_type, read_json

__all__ = ["load_longmemeval", "LME_CATEGORIES"]

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

    ``units="user-turns"`` builds LongMemEval's official retrieval index: the user turns only
    (gold turns: the user turns with ``has_answer``). Each question's ``meta["lme_corpus"]``
    then lists ``(uid, official corpus id)`` of its haystack in order and
    ``meta["lme_has_target"]`` says whether a user turn has the answer, for the official
    metrics (:mod:`mempursuit_eval.official`).
    """
    check_units(units, DATASETS["longmemeval"].units, "LongMemEval")
    official = units == "user-turns"
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
    for qid, rec, where in keyed_records(
            raw, path, "record", "question_id",
            "an object with 'question_id', 'question' and 'haystack_sessions'", "a string",
            "question ids must be unique; remove or rename one"):
        group = qid
        sids = [str(need_type(s, (str, int), f"{where}: haystack_session_ids[{i}]", "a string"))
                for i, s in enumerate(need_field(rec, "haystack_session_ids", list, where,
                                             "a list of session ids"))]
        sessions = need_field(rec, "haystack_sessions", list, where, "a list of sessions (lists of "
                                                                 "turns)")
        dates = need_field(rec, "haystack_dates", list, where, "a list of date strings",
                       required=False) or [None] * len(sids)
        if not (len(sids) == len(sessions) == len(dates)):
            raise DatasetFormatError(
                f"{where}: has {len(sids)} haystack_session_ids, {len(sessions)} "
                f"haystack_sessions and {len(dates)} haystack_dates; the three lists must have "
                f"the same length ({FIX})")
        qtext = need_field(rec, "question", str, where, "a string")
        qtype = need_field(rec, "question_type", str, where, "a string", required=False)
        answer_list = [str(need_type(s, (str, int), f"{where}: answer_session_ids[{i}]",
                                      "a string"))
                       for i, s in enumerate(need_field(rec, "answer_session_ids", list, where,
                                                    "a list of session ids", required=False)
                                             or [])]
        answer_sids = set(answer_list)
        gold_turns: list[str] = []
        corpus: list[tuple[str, str]] = []
        for pos, (sid, date, turns) in enumerate(zip(sids, dates, sessions)):
            swhere = f"{where}: haystack_sessions[{pos}]"
            need_type(turns, list, swhere, "a list of turns")
            if date is not None:
                need_type(date, str, f"{where}: haystack_dates[{pos}]", "a date string")
            ts = _lme_time(date)
            texts, tids = [], []
            for t_index, turn in enumerate(turns):
                twhere = f"{swhere}[{t_index}]"
                need_type(turn, dict, twhere, "an object with 'role' and 'content'")
                need_field(turn, "role", str, twhere, "a string", required=False)
                need_field(turn, "content", str, twhere, "a string", required=False)
                tid = f"{qid}/{pos}:{sid}/{t_index}"
                text = f"{turn.get('role', '')}: {turn.get('content', '')}"
                texts.append(text)
                tids.append(tid)
                is_user = turn.get("role") == "user"
                if official and not is_user:
                    continue
                if turn.get("has_answer") and sid in answer_sids:
                    gold_turns.append(tid)
                if official:
                    corpus.append((tid, lme_corpus_id(sid, t_index, bool(turn.get("has_answer")))))
                if units in ("turns", "user-turns"):
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
            need_field(rec, "question_date", str, where, "a date string")
        questions.append(Question(
            qid=qid, group=group, text=qtext,
            category="abstention" if abstention else str(qtype or ""),
            gold_sessions=tuple(s for s in answer_list if s in present),
            gold_turns=tuple(gold_turns), answer=str(rec.get("answer", "")),
            date=_lme_time(rec.get("question_date")),
            unresolved_evidence=tuple(s for s in answer_sids if s not in present),
            meta={"question_type": rec.get("question_type"), "abstention": abstention,
                  **({"lme_corpus": corpus,
                      "lme_has_target": any("answer" in c for _, c in corpus)}
                     if official else {})},
        ))
    if missing_gold:
        notes.append(f"LongMemEval: {missing_gold} answer session id(s) are not in their haystack")
    name = "longmemeval-oracle" if "oracle" in path.name else "longmemeval"
    return Dataset(name, unit_list, questions, units, str(path), list(LME_CATEGORIES), notes)
