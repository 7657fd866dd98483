"""The project's own LoCoMo-format dialogue (``tests/fixtures/dialogue.json``) for the tests.

Two invented conversations (``dlg-1``: Priya and Tomas, 7 sessions; ``dlg-2``: Marisol and
Kenji, 5 sessions) in LoCoMo's file layout: ``conversation`` with ``session_<n>`` turns and
``session_<n>_date_time``, ``observation`` (``session_<n>_observation``: speaker -> ``[[fact,
dia_id], ...]``), ``session_summary`` and ``qa`` with gold ``evidence`` dia_ids (categories
1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop). Facts recur in paraphrase across
sessions, so read policies meet redundant memories. Nothing here needs ``../shared/data``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "dialogue.json"

_DATE = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I)


def fixture_path() -> Path:
    """Path of the committed LoCoMo-format fixture."""
    return FIXTURE


def locomo_time(text: str) -> str:
    """``"1:56 pm on 8 May, 2023"`` -> ``"2023-05-08T13:56:00"``."""
    m = _DATE.match(text)
    if not m:
        raise ValueError(f"unexpected LoCoMo session time {text!r}")
    hh, mm, ampm, day, month, year = m.groups()
    mon = datetime.strptime(month[:3].title(), "%b").month
    hour = int(hh) % 12 + (12 if ampm.lower() == "pm" else 0)
    return datetime(int(year), mon, int(day), hour, int(mm)).isoformat()


def load_samples(path: str | Path | None = None) -> list[dict]:
    """Every sample of a LoCoMo-format file (default: the fixture)."""
    with open(path or FIXTURE, encoding="utf-8") as fh:
        return json.load(fh)


def conversation_from_sample(sample: dict) -> dict:
    """``sample_id``, ``turns`` (text/dia_id/session/speaker/created_at) and ``qa``."""
    conv = sample["conversation"]
    sessions = sorted(
        (int(k.split("_")[1]), k) for k in conv if re.fullmatch(r"session_\d+", k)
    )
    turns = []
    for n, key in sessions:
        when = locomo_time(conv[f"{key}_date_time"])
        for t in conv[key]:
            turns.append({
                "text": f"{t['speaker']}: {t['text']}",
                "dia_id": t["dia_id"],
                "session": n,
                "speaker": t["speaker"],
                "created_at": when,
            })
    return {"sample_id": sample["sample_id"], "turns": turns, "qa": sample["qa"]}


def fixture_conversation(index: int = 0, path: str | Path | None = None) -> dict:
    """One conversation of the fixture (or of ``path``), in ``conversation_from_sample`` shape."""
    return conversation_from_sample(load_samples(path)[index])
