"""Dates a query names, matched against the pool's timestamps (round 3's date channel)."""

import datetime as dt

import numpy as np
import pytest

from mempursuit_core import get_selector
from mempursuit_core.dates import date_match, query_dates, to_date

D = dt.date


@pytest.mark.parametrize("text, spans", [
    ("What did Nate do on 25 May, 2022?", [(D(2022, 5, 25), D(2022, 5, 25))]),
    ("the 3rd of June, 2023", [(D(2023, 6, 3), D(2023, 6, 3))]),
    ("on August 3, 2023 and on Sept 1st 2023", [(D(2023, 8, 3), D(2023, 8, 3)),
                                                 (D(2023, 9, 1), D(2023, 9, 1))]),
    ("logged 2024-02-29", [(D(2024, 2, 29), D(2024, 2, 29))]),
    ("Where did Joanna travel in July 2022?", [(D(2022, 7, 1), D(2022, 7, 31))]),
    ("in December, 2022", [(D(2022, 12, 1), D(2022, 12, 31))]),
    ("February 2024", [(D(2024, 2, 1), D(2024, 2, 29))]),
    # an impossible day falls back to its month; a date without a year, a bare year and
    # relative phrases name no span
    ("on 31 June 2023", [(D(2023, 6, 1), D(2023, 6, 30))]),
    ("on 3 June, last week, in 2023, may I ask?", []),
])
def test_query_dates(text, spans):
    assert query_dates(text) == spans


def test_to_date_reads_what_frameworks_store():
    assert to_date("2023-05-08T13:56:00") == D(2023, 5, 8)
    assert to_date(" 2023-05-08 ") == D(2023, 5, 8)
    assert to_date(dt.datetime(2023, 5, 8, 23, 59)) == D(2023, 5, 8)
    assert to_date(D(2023, 5, 8)) == D(2023, 5, 8)
    assert to_date(1683504000) == D(2023, 5, 8)  # seconds since the epoch, UTC
    for bad in (None, "", "yesterday", True, float("nan"), float("inf"), 1e300):
        assert to_date(bad) is None


def test_date_match_window():
    stamps = ["2023-06-03T10:00", "2023-06-06", "2023-06-10", "2023-07-01", None, "n/a"]
    m = date_match("What did Maria start on 3 June, 2023?", stamps, window=7)
    np.testing.assert_allclose(m, [1.0, 4 / 7, 0.0, 0.0, 0.0, 0.0])
    month = date_match("in June 2023", stamps, window=7)
    np.testing.assert_allclose(month, [1.0, 1.0, 1.0, 6 / 7, 0.0, 0.0])
    exact = date_match("on 6 June 2023", stamps, window=0)
    np.testing.assert_allclose(exact, [0, 1, 0, 0, 0, 0])
    assert date_match("no date here", stamps) is None
    assert date_match("on 1 May 1999", stamps) is None  # nothing near: nothing to add


def _pool(rng, P=30, d=24):
    q = rng.standard_normal(d)
    M = rng.standard_normal((P, d)) + 0.3 * q
    return q, M


def test_a_named_date_lifts_the_memories_written_then(rng):
    q, M = _pool(rng)
    P = len(M)
    stamps = ["2023-01-01"] * P
    plain = get_selector("centered-fusion", dates=0).select(q, M, P, signals={"timestamps": stamps})
    target = int(plain.order[-1])  # the least relevant memory
    stamps[target] = "2023-06-03"
    signals = {"timestamps": stamps, "query_text": "what happened on 3 June 2023?"}
    lifted = get_selector("centered-fusion", dates=100).select(q, M, 1, signals=signals)
    assert lifted.order.tolist() == [target]
    default = get_selector("centered-fusion").select(q, M, P, signals=signals).order
    assert default.tolist().index(target) < P - 1
    # no date in the query, or no timestamps: the round-2 order exactly
    undated = {"timestamps": stamps, "query_text": "what happened?"}
    for sig in (undated, {"query_text": signals["query_text"]}, None):
        np.testing.assert_array_equal(
            get_selector("centered-fusion").select(q, M, P, signals=sig).order,
            get_selector("centered-fusion", dates=0).select(q, M, P, signals=sig).order)


def test_date_channel_checks_its_signal(rng):
    q, M = _pool(rng)
    for stamps in (["2023-06-03"] * 3, ["1999-01-01"] * 3):  # near the date or not
        with pytest.raises(ValueError, match="timestamps"):
            get_selector("centered-fusion").select(
                q, M, 5, signals={"timestamps": stamps, "query_text": "on 3 June 2023"})
    for bad in ({"dates": -1}, {"date_window": float("nan")}, {"adjacent": float("inf")}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            get_selector("centered-fusion", **bad)


@pytest.mark.slow  # a real benchmark file or model
def test_no_longmemeval_question_names_a_date():
    """docs/results.md says the date channel never fires on LongMemEval-S (today's default and
    the round-2 default order its pools the same way); this checks that claim on the benchmark
    file."""
    import gzip
    import json
    import os
    from pathlib import Path

    root = Path(os.environ.get("MEMPURSUIT_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    path = root / "longmemeval" / "longmemeval_s.json.gz"
    if not path.exists():
        pytest.skip(f"LongMemEval-S not found at {path} (set MEMPURSUIT_DATA)")
    with gzip.open(path, "rt") as f:
        named = [q["question_id"] for q in json.load(f) if query_dates(q["question"])]
    assert named == []
