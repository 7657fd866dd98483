"""Benchmark loaders: the LoCoMo loader on the project's LoCoMo-format fixture, and every loader
on the shared copies of LoCoMo, LongMemEval and BEAM (those tests check the published files
themselves and skip without ``../shared/data``)."""

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from mempursuit_eval.datasets import (
    DatasetNotFoundError,
    load_beam,
    load_dataset,
    load_locomo,
    load_longmemeval,
    resolve_data_path,
    select_questions,
)

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
LOCOMO = DATA / "locomo" / "locomo10.json"
LME_S = DATA / "longmemeval" / "longmemeval_s.json.gz"
LME_ORACLE = DATA / "longmemeval" / "longmemeval_oracle.json.gz"
BEAM = DATA / "beam" / "100K"

needs_data = pytest.mark.skipif(not LOCOMO.exists(), reason="benchmark data in ../shared/data")
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "dialogue.json"


def test_locomo_loader_on_the_fixture():
    ds = load_locomo(FIXTURE)
    assert len(ds.units) == 186 and len({u.uid for u in ds.units}) == 186
    assert ds.groups() == ["dlg-1", "dlg-2"] and len(ds.questions) == 41
    assert Counter(q.category for q in ds.questions) == {
        "single-hop": 15, "multi-hop": 15, "temporal": 9, "open-domain": 2}
    assert not ds.notes and all(q.gold_sessions and not q.unresolved_evidence for q in ds.questions)
    u = ds.units[0]
    assert u.uid == "dlg-1/D1:1" and u.session_id == "dlg-1/S1" and u.source_ids == ("dlg-1/D1:1",)
    assert u.timestamp == "2023-03-03T10:15:00" and u.text.startswith("Priya: ")
    assert ds.units[-1].uid == "dlg-2/D5:13" and ds.units[-1].timestamp == "2023-04-16T15:45:00"
    turns = {x.uid for x in ds.units}
    for q in ds.questions:
        assert set(q.gold_turns) <= turns
        assert q.gold_sessions == tuple(dict.fromkeys(t.rsplit(":", 1)[0].replace("/D", "/S")
                                                      for t in q.gold_turns))
    # a multi-hop question whose evidence spans three sessions
    q = next(q for q in ds.questions if q.qid == "dlg-2/q5")
    assert q.category == "multi-hop" and q.gold_sessions == ("dlg-2/S2", "dlg-2/S4", "dlg-2/S5")
    assert select_questions(ds, ["2"]) == [q for q in ds.questions if q.category == "temporal"]
    assert len(select_questions(ds)) == 41  # no adversarial questions to leave out


def test_locomo_fixture_observations_summaries_sessions():
    turns = {u.uid for u in load_locomo(FIXTURE).units}
    obs = load_locomo(FIXTURE, units="observations")
    assert len(obs.units) == 181 and sum(u.group == "dlg-1" for u in obs.units) == 124
    assert all(u.source_ids and set(u.source_ids) <= turns for u in obs.units)
    assert all(u.session_id.split("/S")[1] == s.split("/D")[1].split(":")[0]
               for u in obs.units for s in u.source_ids[:1])
    assert {u.speaker for u in obs.units} == {"Priya", "Tomas", "Marisol", "Kenji"}
    summ = load_locomo(FIXTURE, units="summaries")
    assert len(summ.units) == 12 and all(u.uid.endswith("/summary") for u in summ.units)
    sess = load_locomo(FIXTURE, units="sessions")
    assert len(sess.units) == 12 and sess.units[0].text.startswith("[10:15 am on 3 March, 2023]\nPriya: ")
    assert sum(len(u.source_ids) for u in sess.units) == len(turns)


@pytest.fixture(scope="module")
def locomo():
    return load_locomo(LOCOMO)


@needs_data
def test_locomo_turns_and_question_counts(locomo):
    assert len(locomo.units) == 5882
    assert len(locomo.questions) == 1986
    assert len(locomo.groups()) == 10
    cats = Counter(q.category for q in locomo.questions)
    assert cats == {"single-hop": 841, "adversarial": 446, "temporal": 321, "multi-hop": 282,
                    "open-domain": 96}
    default = select_questions(locomo)
    assert len(default) == 1540
    assert sum(1 for q in default if q.gold_sessions) == 1536
    assert len({u.uid for u in locomo.units}) == len(locomo.units)
    u = locomo.units[0]
    assert u.uid == "conv-26/D1:1" and u.session_id == "conv-26/S1"
    assert u.source_ids == ("conv-26/D1:1",) and u.timestamp == "2023-05-08T13:56:00"
    assert u.text.startswith("Caroline: ")
    photo = next(x for x in locomo.units if x.uid == "conv-26/D1:5")
    assert "[shares a photo: a photo of a dog" in photo.text


@needs_data
def test_locomo_evidence_normalisation(locomo):
    by_id = {q.qid: q for q in locomo.questions}
    # 'D8:6; D9:17' in one string: two turns, two sessions
    q = next(q for q in locomo.questions if q.group == "conv-26"
             and "conv-26/D8:6" in q.gold_turns and "conv-26/D9:17" in q.gold_turns)
    assert {"conv-26/S8", "conv-26/S9"} <= set(q.gold_sessions)
    # 'D:11:26' -> D11:26 and 'D30:05' -> D30:5
    assert any("conv-43/D11:26" in q.gold_turns for q in locomo.questions if q.group == "conv-43")
    assert any("conv-50/D30:5" in q.gold_turns for q in locomo.questions if q.group == "conv-50")
    # ids that match no turn are kept as unresolved, never silently dropped
    q58 = by_id["conv-42/q58"]
    assert q58.unresolved_evidence == ("D10:19",)
    assert "conv-42/S10" in q58.gold_sessions  # its session exists
    assert by_id["conv-42/q88"].unresolved_evidence == ("D",)
    assert any("match no turn" in n for n in locomo.notes)
    turns = {u.uid for u in locomo.units}
    for q in locomo.questions:
        assert set(q.gold_turns) <= turns


@needs_data
def test_locomo_observations_and_summaries():
    obs = load_locomo(LOCOMO, units="observations")
    turns = {u.uid for u in load_locomo(LOCOMO).units}
    assert len(obs.units) == 2541
    assert all(u.source_ids and set(u.source_ids) <= turns for u in obs.units)
    assert all(u.session_id.split("/S")[1] == s.split("/D")[1].split(":")[0]
               for u in obs.units for s in u.source_ids[:1])
    summ = load_locomo(LOCOMO, units="summaries")
    assert len(summ.units) == 272 and all(u.uid.endswith("/summary") for u in summ.units)
    sess = load_locomo(LOCOMO, units="sessions")
    assert len(sess.units) == 272 and sess.units[0].text.startswith("[1:56 pm on 8 May, 2023]")


@needs_data
def test_category_selection(locomo):
    assert len(select_questions(locomo, ["1", "temporal"])) == 282 + 321
    assert len(select_questions(locomo, ["all"])) == 1986
    assert len(select_questions(locomo, ["5"])) == 446
    assert [q.qid for q in select_questions(locomo, limit=3)] == [
        "conv-26/q0", "conv-26/q1", "conv-26/q2"]
    assert {q.group for q in select_questions(locomo, groups=["conv-30"])} == {"conv-30"}
    with pytest.raises(ValueError, match="unknown locomo category"):
        select_questions(locomo, ["nonsense"])
    with pytest.raises(ValueError, match="limit"):
        select_questions(locomo, limit=0)
    sub = locomo.subset(select_questions(locomo, limit=2))
    assert sub.groups() == ["conv-26"] and len(sub.questions) == 2


@needs_data
def test_longmemeval_oracle_and_plain_json(tmp_path):
    ds = load_longmemeval(LME_ORACLE)
    assert len(ds.questions) == 500 and ds.name == "longmemeval-oracle"
    cats = Counter(q.category for q in ds.questions)
    assert cats["abstention"] == 30
    assert len(select_questions(ds)) == 470
    q = ds.questions[0]
    assert q.group == q.qid and q.gold_sessions and q.date
    units = {u.uid: u for u in ds.units}
    assert all(t in units and units[t].session_id in q.gold_sessions for t in q.gold_turns)
    # an uncompressed .json with a subset reads the same way
    with gzip.open(LME_ORACLE, "rt") as f:
        raw = json.load(f)[:3]
    p = tmp_path / "longmemeval_oracle_small.json"
    p.write_text(json.dumps(raw))
    small = load_longmemeval(p)
    assert [x.qid for x in small.questions] == [x.qid for x in ds.questions[:3]]
    with pytest.raises(ValueError, match="no 'observations' units"):
        load_longmemeval(p, units="observations")


@pytest.mark.slow  # a real benchmark file or model
@needs_data
def test_longmemeval_s():
    ds = load_longmemeval(LME_S)
    assert len(ds.questions) == 499 and ds.name == "longmemeval"
    assert len(ds.units) == 246189
    assert len({u.uid for u in ds.units}) == len(ds.units)  # repeated session ids stay distinct
    assert sum(len(q.gold_turns) for q in ds.questions) > 0
    assert all(q.gold_sessions for q in ds.questions)


@needs_data
def test_beam_scale_folder_chat_and_root():
    ds = load_beam(BEAM)
    assert len(ds.units) == 5732 and len(ds.questions) == 400
    assert len(ds.groups()) == 20
    assert sum(1 for q in ds.questions if not q.gold_sessions) == 45
    assert len(select_questions(ds)) == 360  # abstention left out by default
    units = {u.uid: u for u in ds.units}
    for q in ds.questions:
        assert set(q.gold_turns) <= set(units)
        assert {units[t].session_id for t in q.gold_turns} == set(q.gold_sessions)
    q = next(q for q in ds.questions if q.qid == "3/contradiction_resolution/0")
    assert set(q.gold_turns) == {"3/m36", "3/m56"}
    assert units["3/m0"].timestamp is not None
    one = load_beam(BEAM / "3")
    assert one.groups() == ["3"] and len(one.questions) == 20
    root = load_beam(BEAM.parent)
    assert root.groups()[0] == "100K/1"
    assert load_dataset("beam", BEAM, units="sessions").units[0].session_id == "1/b1"


def test_missing_data_gives_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DatasetNotFoundError, match="--data"):
        resolve_data_path("locomo", None, cache_dir=tmp_path / "cache", download=False)
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        resolve_data_path("beam", tmp_path / "nope")
    with pytest.raises(ValueError, match="unknown dataset"):
        resolve_data_path("squad")


@needs_data
def test_data_folder_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MEMPURSUIT_DATA", str(DATA))
    assert resolve_data_path("locomo", download=False).resolve() == LOCOMO.resolve()


def test_the_working_directory_is_never_searched(monkeypatch, tmp_path):
    # an installed user in ~/x must not silently read ~/shared/data
    (tmp_path / "shared" / "data" / "locomo").mkdir(parents=True)
    (tmp_path / "shared" / "data" / "locomo" / "locomo10.json").write_text("[]")
    (tmp_path / "x").mkdir()
    monkeypatch.chdir(tmp_path / "x")
    monkeypatch.delenv("MEMPURSUIT_DATA", raising=False)
    with pytest.raises(DatasetNotFoundError, match="--data"):
        resolve_data_path("locomo", cache_dir=tmp_path / "cache", download=False)


def test_bad_files_raise(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"not": "locomo"}')
    with pytest.raises(ValueError, match="not LoCoMo"):
        load_locomo(p)
    with pytest.raises(ValueError, match="not LongMemEval"):
        load_longmemeval(p)
    p.write_text("{broken")
    with pytest.raises(ValueError, match="cannot read JSON"):
        load_locomo(p)
    with pytest.raises(ValueError, match="no BEAM chat.json"):
        load_beam(tmp_path)
