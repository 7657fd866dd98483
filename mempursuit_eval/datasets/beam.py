"""BEAM (``chats/<scale>/<chat>/chat.json`` + ``probing_questions``): one group per chat, one
session per batch; gold evidence from ``source_chat_ids``."""

from __future__ import annotations

import json
import os
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ..base import MemoryUnit
from .base import Dataset, DatasetFormatError, Question
from .catalog import DATASETS
from .checks import FIX, check_units, json_kind, need_field, need_type, read_json, uniq

__all__ = ["load_beam", "BEAM_ANSWER_FIELDS"]

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
    check_units(units, DATASETS["beam"].units, "BEAM")
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
            need_type(batch, dict, bwhere, "an object with 'turns'")
            bno = need_field(batch, "batch_number", (int, str), bwhere, "a number",
                         required=False, default=b_index + 1)
            session = f"{group}/b{bno}"
            msgs, mwheres = [], []
            for t_index, turn in enumerate(need_field(batch, "turns", list, bwhere,
                                                  "a list of turns", required=False) or []):
                for m_index, m in enumerate(turn if isinstance(turn, list) else [turn]):
                    mw = f"{bwhere}: turns[{t_index}]" + (f"[{m_index}]"
                                                          if isinstance(turn, list) else "")
                    need_type(m, dict, mw, "a message object with 'id', 'role' and 'content'")
                    need_field(m, "id", (int, str), mw, "a message id (number)")
                    for key in ("role", "content", "time_anchor"):
                        need_field(m, key, str, mw, "a string", required=False)
                    msgs.append(m)
                    mwheres.append(mw)
            anchor = batch.get("time_anchor") or next(
                (m.get("time_anchor") for m in msgs if m.get("time_anchor")), None)
            if not isinstance(anchor, (str, type(None))):
                raise DatasetFormatError(f"{bwhere}: 'time_anchor' is {json_kind(anchor)}, expected "
                                         f"a date string ({FIX})")
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
        need_type(probing, dict, str(qfile), "an object of question type: [questions]")
        for cat, items in probing.items():
            need_type(items, list, f"{qfile}: {cat!r}", "a list of questions")
            categories.setdefault(cat, None)
            for i, item in enumerate(items):
                qwhere = f"{qfile}: {cat}[{i}]"
                need_type(item, dict, qwhere, "an object with 'question'")
                qtext = need_field(item, "question", str, qwhere, "a string")
                need_field(item, "source_chat_ids", (list, dict, int), qwhere,
                       "a list of message ids (numbers), or an object of such lists",
                       required=False)
                ids = _flatten_ids(item.get("source_chat_ids"))
                resolved = [x for x in ids if x in msg_session]
                unresolved = [str(x) for x in ids if x not in msg_session]
                answer = next((item[f] for f in BEAM_ANSWER_FIELDS if item.get(f)), "")
                questions.append(Question(
                    qid=f"{group}/{cat}/{i}", group=group, text=qtext,
                    category=cat,
                    gold_sessions=uniq(msg_session[x] for x in resolved),
                    gold_turns=uniq(f"{group}/m{x}" for x in resolved),
                    answer=answer if isinstance(answer, str) else json.dumps(answer),
                    unresolved_evidence=tuple(unresolved),
                    meta={"difficulty": item.get("difficulty")},
                ))
                if unresolved:
                    notes.append(f"BEAM: {group}/{cat}/{i} cites message ids {unresolved} that "
                                 "are not in the chat")
    return Dataset("beam", unit_list, questions, units, str(root), list(categories), notes)
