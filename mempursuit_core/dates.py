"""Calendar dates named in a query, matched against the pool's timestamps.

"What did Maria start on 3 June, 2023?" names a day; "Where did Joanna travel in July 2022?"
names a month. A memory written in that span (its ``"timestamps"`` signal) is more likely the
evidence. Only explicit dates with a year are read (English month names, day-month-year or
month-day-year, ``YYYY-MM-DD``); relative phrases ("last week") need the time of asking, which a
pool does not carry, and are left alone.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Sequence

import numpy as np

__all__ = ["query_dates", "date_match", "match_spans", "to_date", "epoch_utc"]

_NAMES = ["january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december"]
_MONTHS = {**{m: i for i, m in enumerate(_NAMES, 1)}, **{m[:3]: i for i, m in enumerate(_NAMES, 1)},
           "sept": 9}
_M = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DMY = re.compile(rf"\b{_DAY}\s+(?:of\s+)?({_M})\.?,?\s+(\d{{4}})\b", re.I)
_MDY = re.compile(rf"\b({_M})\.?\s+{_DAY},?\s+(\d{{4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MY = re.compile(rf"\b({_M})\.?,?\s+(?:of\s+)?(\d{{4}})\b", re.I)
_YEAR = re.compile(r"\d{4}")


def query_dates(text: str) -> list[tuple[dt.date, dt.date]]:
    """The day and month spans a text names, as ``(first day, last day)`` pairs.

    >>> query_dates("What did Nate do on 25 May, 2022, and in July 2022?")
    [(datetime.date(2022, 5, 25), datetime.date(2022, 5, 25)), (datetime.date(2022, 7, 1), datetime.date(2022, 7, 31))]
    """
    spans: list[tuple[dt.date, dt.date]] = []
    if not _YEAR.search(text):  # every form read here has a year: most queries stop here
        return spans
    used: list[tuple[int, int]] = []
    for rx, fields in ((_DMY, (2, 1, 0)), (_MDY, (2, 0, 1)), (_ISO, (0, 1, 2))):
        for m in rx.finditer(text):
            y, mo, d = (m.groups()[i] for i in fields)
            try:
                day = dt.date(int(y), _MONTHS[mo.lower()] if not mo.isdigit() else int(mo), int(d))
            except ValueError:  # 31 June, month 13
                continue
            spans.append((day, day))
            used.append(m.span())
    for m in _MY.finditer(text):
        if any(a <= m.start() < b for a, b in used):  # the month of a day already read
            continue
        first = dt.date(int(m.group(2)), _MONTHS[m.group(1).lower()], 1)
        nxt = dt.date(first.year + first.month // 12, first.month % 12 + 1, 1)
        spans.append((first, nxt - dt.timedelta(days=1)))
    return spans


def epoch_utc(t: Any) -> dt.datetime | None:
    """Seconds since the epoch as a UTC datetime; None for NaN, inf or out of the calendar."""
    try:
        return dt.datetime.fromtimestamp(float(t), tz=dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def to_date(t: Any) -> dt.date | None:
    """The calendar day of a timestamp: an ISO string (its first 10 characters), a
    ``date``/``datetime``, or seconds since the epoch (UTC); None when there is none."""
    if type(t) is str:  # the common case first: ISO strings
        try:
            return dt.date.fromisoformat(t[:10])
        except ValueError:
            pass
    if t is None or isinstance(t, bool):
        return None
    if isinstance(t, dt.datetime):
        return t.date()
    if isinstance(t, dt.date):
        return t
    if isinstance(t, (int, float, np.integer, np.floating)):
        stamp = epoch_utc(t)
        return None if stamp is None else stamp.date()
    try:
        return dt.date.fromisoformat(str(t).strip()[:10])
    except ValueError:
        return None


def date_match(query: str, timestamps: Sequence[Any], window: float = 7.0) -> np.ndarray | None:
    """How close each memory's day is to a span the query names.

    Parameters
    ----------
    query : str
    timestamps : sequence, length P
        One timestamp per memory (see :func:`to_date`); unreadable or missing ones score 0.
    window : float
        Days: 1 inside a named span, falling linearly to 0 at ``window`` days outside it.

    Returns
    -------
    ndarray of float64, shape (P,), in [0, 1]; or None when the query names no date or no
    memory is dated near one (nothing to add).
    """
    spans = query_dates(query)
    return match_spans(spans, timestamps, window) if spans else None


def match_spans(spans: Sequence[tuple[dt.date, dt.date]], timestamps: Sequence[Any],
                window: float = 7.0) -> np.ndarray | None:
    """:func:`date_match` for spans already read with :func:`query_dates`."""
    # memories of one session share a timestamp: read each distinct value once
    codes: dict = {}
    try:
        index = [codes.setdefault(t, len(codes)) for t in timestamps]
    except TypeError:  # a list or dict where a timestamp should be: unreadable
        codes = {}
        index = [codes.setdefault(t, len(codes)) if _hashable(t) else -1 for t in timestamps]
    index = np.asarray(index, dtype=np.intp)
    days = np.full(len(codes) + 1, np.nan)  # the last slot: unhashable, so unreadable
    for t, c in codes.items():
        d = to_date(t)
        if d is not None:
            days[c] = d.toordinal()
    day = days[index]
    gap = np.full(day.shape, np.inf)
    for a, b in spans:
        gap = np.fmin(gap, np.maximum(np.maximum(a.toordinal() - day, day - b.toordinal()), 0))
    with np.errstate(invalid="ignore"):
        if window > 0:
            out = np.clip(1.0 - gap / window, 0.0, None)
        else:
            out = (gap == 0).astype(np.float64)
    out = np.nan_to_num(out, nan=0.0)
    return out if out.any() else None


def _hashable(t: Any) -> bool:
    try:
        hash(t)
    except TypeError:
        return False
    return True
