"""The multi-hop document sets in the harness: HotpotQA (pooled and distractor settings,
paragraph and sentence units), 2WikiMultihopQA and MuSiQue, the ``titles`` signal, the pool
ceiling, the converter and the command line, on small invented fixtures in ``tests/fixtures``."""

import json
import shutil
from pathlib import Path

import pytest

from eval_samples import HashEmbedder, locomo_file
from mempursuit_eval.datasets import (DatasetFormatError, DatasetNotFoundError, load_dataset,
                                      resolve_data_path, select_questions)
from mempursuit_eval.metrics import pool_metrics
from mempursuit_eval.store import PlainStore
from mempursuit_core.cli import main as cli_main

FIX = Path(__file__).parent / "fixtures"
HOTPOT = FIX / "hotpotqa_small.jsonl"
TWOWIKI = FIX / "twowiki_small.json"
TWOWIKI_CORPUS = FIX / "twowiki_corpus"
MUSIQUE = FIX / "musique_small.jsonl"


def _records(path=HOTPOT):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


# ------------------------------------------------------------------ HotpotQA


def test_pooled_paragraphs_one_store_deduplicated_with_both_versions_of_a_title():
    ds = load_dataset("hotpotqa", HOTPOT)
    assert ds.name == "hotpotqa" and ds.unit_kind == "paragraphs"
    assert ds.groups() == ["hotpotqa"] and len(ds.questions) == 5
    assert {q.group for q in ds.questions} == {"hotpotqa"}
    # 20 context paragraphs, 6 repeated across questions (stored once), 14 distinct
    assert len(ds.units) == 14 and len({u.uid for u in ds.units}) == 14
    by_uid = {u.uid: u for u in ds.units}
    mira = by_uid["Mira Tolvane"]  # in hq1's and hq2's contexts: one unit
    assert mira.text.startswith("Mira Tolvane: Mira Tolvane (1894-1960) was a composer and "
                                "organist. She was born in Kessport")  # stripped, one space
    assert mira.title == "Mira Tolvane" and mira.session_id == "Mira Tolvane"
    assert mira.source_ids == ("Mira Tolvane",) and mira.speaker is None
    # the title conflict: both texts kept, each question's gold is its own version
    anvel = [u for u in ds.units if u.title == "Anvel River"]
    assert sorted(u.uid for u in anvel) == ["Anvel River #1", "Anvel River #2"]
    assert anvel[0].text != anvel[1].text
    q = {x.qid: x for x in ds.questions}
    assert q["hq2"].gold_sessions == ("Anvel River #1", "Dorra River")
    assert q["hq2"].gold_turns == q["hq2"].gold_sessions  # paragraph level twice
    assert any("'Anvel River'" in n and "different texts" in n for n in ds.notes)
    assert any(n.startswith("6 passage(s) occur more than once") for n in ds.notes)
    assert [x.category for x in ds.questions] == ["bridge", "comparison", "bridge",
                                                  "comparison", "bridge"]
    assert ds.categories == ["bridge", "comparison"]
    assert q["hq1"].answer == "Kessport" and q["hq1"].meta["split"] == "hotpotqa_small"
    assert q["hq1"].meta["level"] == "hard" and not q["hq1"].unresolved_evidence


def test_distractor_setting_gives_each_question_its_own_paragraphs():
    ds = load_dataset("hotpotqa-distractor", HOTPOT)
    assert ds.groups() == ["hq1", "hq2", "hq3", "hq4", "hq5"]
    assert len(ds.units) == 20 and all(
        sum(u.group == g for u in ds.units) == 4 for g in ds.groups())
    q = {x.qid: x for x in ds.questions}
    assert q["hq3"].group == "hq3"
    assert q["hq3"].gold_sessions == ("hq3/Velsa Quartet", "hq3/Oren Halwick")
    # hq3's own "Anvel River" is its (only) version there: no suffix inside a question
    assert "hq3/Anvel River" in {u.uid for u in ds.units}
    assert not ds.notes


def test_sentence_units_and_their_gold():
    ds = load_dataset("hotpotqa", HOTPOT, units="sentences")
    assert ds.unit_kind == "sentences"
    by_uid = {u.uid: u for u in ds.units}
    s = by_uid["Mira Tolvane/1"]
    assert s.text == "Mira Tolvane: She was born in Kessport, a fishing town on the northern coast."
    assert s.session_id == "Mira Tolvane" and s.source_ids == ("Mira Tolvane/1",)
    assert s.title == "Mira Tolvane"
    q = {x.qid: x for x in ds.questions}
    assert q["hq1"].gold_sessions == ("The Glass Lantern", "Mira Tolvane")
    assert q["hq1"].gold_turns == ("The Glass Lantern/1", "Mira Tolvane/1")
    assert q["hq2"].gold_turns == ("Anvel River #1/0", "Dorra River/0")
    # every paragraph's sentences, each once: 14 distinct paragraphs
    assert len({u.session_id for u in ds.units}) == 14
    assert len(ds.units) == 25


def test_a_supporting_fact_outside_the_context_is_kept_unresolved(tmp_path):
    recs = _records()
    recs[0]["supporting_facts"]["title"].append("Nowhere")
    recs[0]["supporting_facts"]["sent_id"].append(0)
    recs[1]["supporting_facts"]["sent_id"][0] = 9  # past the paragraph's end
    ds = load_dataset("hotpotqa", _write_jsonl(tmp_path / "x.jsonl", recs), units="sentences")
    q = {x.qid: x for x in ds.questions}
    assert q["hq1"].unresolved_evidence == ("Nowhere#0",)
    assert q["hq2"].unresolved_evidence == ("Anvel River#9",)
    assert q["hq2"].gold_turns == ("Dorra River/0",)
    assert any(n.startswith("2 supporting fact(s) name no passage") for n in ds.notes)


def test_a_folder_reads_every_split_and_the_split_selects_questions(tmp_path):
    recs = _records()
    _write_jsonl(tmp_path / "test.jsonl", recs[3:])
    _write_jsonl(tmp_path / "train.jsonl", recs[:2])
    _write_jsonl(tmp_path / "dev.jsonl", recs[2:3])
    ds = load_dataset("hotpotqa", tmp_path)
    assert [q.meta["split"] for q in ds.questions] == ["train", "train", "dev", "test", "test"]
    assert len(ds.units) == 14  # one store over every file
    assert [q.qid for q in select_questions(ds, splits=["train", "dev"])] == ["hq1", "hq2", "hq3"]
    assert [q.qid for q in select_questions(ds, splits=["test"])] == ["hq4", "hq5"]
    with pytest.raises(ValueError, match=r"unknown hotpotqa split\(s\) \['val'\]; the data read "
                                         r"has train, dev, test"):
        select_questions(ds, splits=["val"])
    (tmp_path / "dialogue").mkdir()
    locomo = load_dataset("locomo", locomo_file(tmp_path / "dialogue"))
    with pytest.raises(ValueError, match="locomo has no splits"):
        select_questions(locomo, splits=["train"])
    # the same id in two files
    _write_jsonl(tmp_path / "test.jsonl", recs[3:] + recs[:1])
    with pytest.raises(DatasetFormatError, match=r"test.jsonl: line 3 \(id 'hq1'\): duplicate "
                                                 r"question id 'hq1' \(first at .*train.jsonl: "
                                                 r"line 1 \(id 'hq1'\)\)"):
        load_dataset("hotpotqa", tmp_path)


def test_the_official_list_layout_reads_the_same():
    recs = _records()
    official = [{"_id": r["id"], "question": r["question"], "answer": r["answer"],
                 "type": r["type"], "level": r["level"],
                 "supporting_facts": [list(x) for x in zip(r["supporting_facts"]["title"],
                                                           r["supporting_facts"]["sent_id"])],
                 "context": [[t, s] for t, s in zip(r["context"]["title"],
                                                    r["context"]["sentences"])]}
                for r in recs]
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "hotpotqa_small.json"
        p.write_text(json.dumps(official))
        a, b = load_dataset("hotpotqa", p), load_dataset("hotpotqa", HOTPOT)
    assert a.units == b.units and a.questions == b.questions


@pytest.mark.parametrize("edit, expected", [
    (lambda r: r.pop("question"), r"line 2 \(id 'hq2'\): 'question' is missing"),
    (lambda r: r.pop("id"), r"line 2: 'id' is missing \(expected the question's id"),
    (lambda r: r.__setitem__("type", 3), r"line 2 \(id 'hq2'\): 'type' is a number 3, "
                                         r"expected a string"),
    (lambda r: r["context"]["sentences"].pop(), r"line 2 \(id 'hq2'\): 'context' has 4 titles "
                                                r"and 3 sentence lists"),
    (lambda r: r["context"]["sentences"][1].__setitem__(0, None),
     r"line 2 \(id 'hq2'\): 'context'\['sentences'\]\[1\]\[0\] is null, expected a string"),
    (lambda r: r["supporting_facts"]["sent_id"].__setitem__(0, "0"),
     r"line 2 \(id 'hq2'\): 'supporting_facts': sent_id 0 is a string '0', expected an integer"),
    (lambda r: r.pop("context"), r"line 2 \(id 'hq2'\): 'context' is missing"),
])
def test_bad_records_are_one_line_naming_file_record_and_field(tmp_path, edit, expected):
    recs = _records()
    edit(recs[1])
    path = _write_jsonl(tmp_path / "bad.jsonl", recs)
    with pytest.raises(DatasetFormatError) as info:
        load_dataset("hotpotqa", path)
    msg = str(info.value)
    assert len(msg.splitlines()) == 1 and msg.startswith(f"{path}: ")
    assert __import__("re").search(expected, msg), msg


def test_a_broken_line_and_a_wrong_unit_kind_are_one_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(HOTPOT.read_text() + '{"id": "hq9", \n')
    with pytest.raises(DatasetFormatError, match=r"bad.jsonl: line 6: not valid JSON at column"):
        load_dataset("hotpotqa", path)
    with pytest.raises(ValueError, match="hotpotqa has no 'turns' units; choose one of "
                                         "paragraphs, sentences"):
        load_dataset("hotpotqa", HOTPOT, units="turns")
    with pytest.raises(DatasetNotFoundError, match="holds no .jsonl or .json file"):
        load_dataset("hotpotqa", tmp_path / "..")  # a folder without data files


# ------------------------------------------------------------------ 2WikiMultihopQA, MuSiQue


def test_2wiki_with_contexts_and_types():
    ds = load_dataset("2wikimultihopqa", TWOWIKI)
    assert ds.categories == ["compositional", "comparison", "inference", "bridge_comparison"]
    assert ds.groups() == ["2wikimultihopqa"] and len(ds.units) == 8
    q = {x.qid: x for x in ds.questions}
    assert q["2w1"].gold_sessions == ("Marlow Bay", "Edda Kranz")
    assert len(q["2w4"].gold_sessions) == 4 and q["2w4"].meta["n_gold"] == 4
    s = load_dataset("2wikimultihopqa", TWOWIKI, units="sentences")
    assert {x.qid: x for x in s.questions}["2w1"].gold_turns == ("Marlow Bay/0", "Edda Kranz/1")
    d = load_dataset("2wikimultihopqa-distractor", TWOWIKI)
    assert len(d.groups()) == 4 and len(d.units) == 16


def test_2wiki_questions_with_a_separate_corpus():
    ds = load_dataset("2wikimultihopqa", TWOWIKI_CORPUS)
    # the corpus is the store; gold titles resolve against it; no type: hop counts
    assert len(ds.units) == 8 and ds.source.endswith("twowiki_corpus")
    assert ds.categories == ["2-hop", "4-hop"]
    q = {x.qid: x for x in ds.questions}
    assert q["2w3"].gold_sessions == ("Marlow Bay", "Anna Kranz")
    assert q["2w1"].meta["split"] == "dev"
    with pytest.raises(ValueError, match="has no sentences"):
        load_dataset("2wikimultihopqa", TWOWIKI_CORPUS, units="sentences")
    with pytest.raises(ValueError, match="no context passages; the distractor setting"):
        load_dataset("2wikimultihopqa-distractor", TWOWIKI_CORPUS)


def test_musique_gold_from_is_supporting_and_hop_categories():
    ds = load_dataset("musique", MUSIQUE)
    assert ds.categories == ["2-hop", "3-hop", "4-hop", "unanswerable"]
    q = {x.qid: x for x in ds.questions}
    assert q["2hop__1"].gold_sessions == ("Rivet Records", "Sola Imre")
    assert q["4hop1__3"].category == "4-hop" and len(q["4hop1__3"].gold_sessions) == 4
    assert len(q["3hop1__2"].meta["decomposition"]) == 3
    assert q["2hop__4"].category == "unanswerable" and q["2hop__4"].meta["answerable"] is False
    # unanswerable questions are left out unless asked for
    assert [x.qid for x in select_questions(ds)] == ["2hop__1", "3hop1__2", "4hop1__3"]
    assert len(select_questions(ds, ["all"])) == 4
    assert all(u.title for u in ds.units)
    with pytest.raises(ValueError, match="MuSiQue gives paragraphs, not sentences"):
        load_dataset("musique", MUSIQUE, units="sentences")
    d = load_dataset("musique-distractor", MUSIQUE)
    assert {x.qid: x for x in d.questions}["2hop__1"].gold_sessions == (
        "2hop__1/Rivet Records", "2hop__1/Sola Imre")


def test_musique_bad_paragraph_is_one_line(tmp_path):
    recs = _records(MUSIQUE)
    recs[2]["paragraphs"][1]["is_supporting"] = "yes"
    path = _write_jsonl(tmp_path / "m.jsonl", recs)
    with pytest.raises(DatasetFormatError, match=r"m.jsonl: line 3 \(id '4hop1__3'\): "
                                                 r"'paragraphs'\[1\]: 'is_supporting' is a "
                                                 r"string 'yes', expected true or false"):
        load_dataset("musique", path)


def test_sets_without_a_download_say_where_to_get_them(tmp_path, monkeypatch):
    monkeypatch.delenv("MEMPURSUIT_DATA", raising=False)
    with pytest.raises(DatasetNotFoundError, match=r"musique: no local copy found .* Get the "
                                                   r"files from https://github.com/StonyBrookNLP"):
        resolve_data_path("musique", cache_dir=tmp_path)
    monkeypatch.setenv("MEMPURSUIT_DATA", str(tmp_path))
    (tmp_path / "hotpotqa").mkdir()
    shutil.copy(HOTPOT, tmp_path / "hotpotqa" / "dev.jsonl")
    assert resolve_data_path("hotpotqa", cache_dir=tmp_path / "c") == tmp_path / "hotpotqa"


# ------------------------------------------------------------------ titles, ceiling, convert


def _pool(units, group, query, size=50):
    store = PlainStore("hybrid")
    store.build(units, embedder=HashEmbedder())
    return store.pool(group, query, size)


def test_the_plain_store_hands_titles_only_for_titled_units(tmp_path):
    ds = load_dataset("hotpotqa", HOTPOT)
    pool = _pool(ds.units, "hotpotqa", "Which river is longer?")
    titles = pool.signals["titles"]
    by_uid = {u.uid: u for u in ds.units}
    assert len(titles) == len(pool.items) == 14
    assert titles == [by_uid[u].title for u in pool.items]  # pool order
    assert "Anvel River" in titles and titles.count("Anvel River") == 2
    locomo = load_dataset("locomo", locomo_file(tmp_path))
    lp = _pool(locomo.units, "conv-1", "What is the dog's name?")
    assert "titles" not in lp.signals
    # exactly the keys a dialogue pool had before titles existed
    assert sorted(lp.signals) == sorted([
        "dense", "bm25", "lexical", "query_text", "sparse", "query_sparse", "sparse_terms",
        "timestamps", "session_ids", "speakers", "positions", "texts"])


def test_pool_metrics_is_the_ceiling_of_the_whole_pool():
    m = pool_metrics(["a", "b", "c"], ["a", "b", "c"], ["a", "d"], ["a", "d"])
    assert m == {"session_recall": 0.5, "complete_coverage": 0.0, "turn_recall": 0.5,
                 "turn_coverage": 0.0}
    assert pool_metrics(["a", "d"], [], ["a", "d"], [])["complete_coverage"] == 1.0


def test_convert_writes_the_custom_format_with_titles_and_splits(tmp_path, capsys):
    out = tmp_path / "hotpot.jsonl"
    rc = cli_main(["convert", "--dataset", "hotpotqa", "--data", str(HOTPOT), "--units",
                   "sentences", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    assert "25 memories, 5 questions in 1 group(s)" in capsys.readouterr().out
    back = load_dataset("custom", out)
    ds = load_dataset("hotpotqa", HOTPOT, units="sentences")
    assert back.units == ds.units and back.questions == ds.questions
    assert back.units[0].title == "The Glass Lantern"
    assert [q.meta["split"] for q in back.questions] == ["hotpotqa_small"] * 5
    for name, path in (("musique", MUSIQUE), ("2wikimultihopqa", TWOWIKI)):
        rc = cli_main(["convert", "--dataset", name, "--data", str(path), "--out",
                       str(tmp_path / f"{name}.json")])
        assert rc == 0
        conv = load_dataset("custom", tmp_path / f"{name}.json")
        orig = load_dataset(name, path)
        assert conv.units == orig.units and conv.questions == orig.questions


def test_the_command_line_runs_hotpotqa_end_to_end(tmp_path, capsys):
    pytest.importorskip("onnxruntime", reason='needs pip install -e ".[embed]"')
    out = tmp_path / "run"
    rc = cli_main(["eval", "--dataset", "hotpotqa", "--data", str(HOTPOT), "--out", str(out),
                   "--k", "2", "4", "--policies", "native", "centered-fusion", "mmr",
                   "--native-order", "hybrid", "--bootstrap", "10", "--latency-sample", "0",
                   "--no-plots", "--no-cache", "--embed-threads", "1", "--quiet"])
    assert rc == 0, capsys.readouterr().err
    s = json.loads((out / "summary.json").read_text())
    assert s["dataset"] == "hotpotqa" and s["units"] == "paragraphs"
    assert s["n_questions"] == 5 and s["n_scored"] == 5 and s["mean_pool_size"] == 14
    assert s["categories"] == ["bridge", "comparison"]
    # the whole store is the pool here: the ceiling is complete
    assert s["pool_ceiling"]["overall"]["complete_coverage"] == 100.0
    o = s["results"]["native"]["4"]["overall"]
    for m in ("session_recall", "complete_coverage", "session_recall_any", "session_ndcg_any"):
        assert 0.0 <= o[m] <= 100.0
    assert o["turn_coverage"] == o["complete_coverage"]  # paragraph units: one level
    md = (out / "summary.md").read_text()
    assert "pool ceiling (all of P kept" in md and "'Anvel River'" in md
    rec = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    assert rec[1]["gold_sessions"] == ["Anvel River #1", "Dorra River"]
    assert rec[1]["pool_metrics"]["complete_coverage"] == 1.0
    # split selection and a bad split, as one line
    rc = cli_main(["eval", "--dataset", "hotpotqa-distractor", "--data", str(HOTPOT),
                   "--split", "nope", "--no-cache", "--quiet", "--out", str(tmp_path / "r2")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == ("mempursuit eval: unknown hotpotqa-distractor split(s) ['nope']; "
                               "the data read has hotpotqa_small")


SHARED_HOTPOT = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "hotpotqa"


@pytest.mark.skipif(not SHARED_HOTPOT.exists(), reason="benchmark data in ../shared/data")
def test_the_shared_hotpotqa_copy():
    """../shared's 1,100 questions (300 / 300 / 500): one store of 10,787 distinct paragraphs
    (172 shared by two questions, two titles with two texts), two gold paragraphs each."""
    ds = load_dataset("hotpotqa", SHARED_HOTPOT)
    assert len(ds.questions) == 1100 and len(ds.units) == 10787
    assert [len(select_questions(ds, splits=[s])) for s in ("train", "dev", "test")] == [
        300, 300, 500]
    assert all(len(q.gold_sessions) == 2 and not q.unresolved_evidence for q in ds.questions)
    assert any("'Harry Morgan', 'Pyotr Ilyich Tchaikovsky'" in n for n in ds.notes)
    assert ds.categories == ["bridge", "comparison"]


def test_questions_of_other_splits_are_not_counted_as_left_out(tmp_path):
    from mempursuit_eval.runner import EvalConfig
    from mempursuit_eval.stages import load_data

    recs = _records()
    _write_jsonl(tmp_path / "test.jsonl", recs[3:])
    _write_jsonl(tmp_path / "train.jsonl", recs[:3])
    for split, selected in (("test", 2), ("train", 3)):
        cfg = EvalConfig(dataset="hotpotqa", data=str(tmp_path), split=[split])
        data = load_data(cfg, tmp_path / "cache")
        assert len(data.questions) == selected
        assert data.left_out == {}  # the other split's questions were not asked for
    cfg = EvalConfig(dataset="hotpotqa", data=str(tmp_path), split=["test"],
                     categories=["bridge"])
    data = load_data(cfg, tmp_path / "cache")
    assert sum(data.left_out.values()) == 2 - len(data.questions)


def test_2wiki_supporting_facts_as_a_list_of_titles(tmp_path):
    """The retrieval releases (GFM-RAG, HippoRAG) give the gold paragraphs' titles only."""
    (tmp_path / "corpus.json").write_text(
        (TWOWIKI_CORPUS / "corpus.json").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "dev.json").write_text(json.dumps([
        {"_id": "t1", "question": "Where did the director of Marlow Bay die?", "answer": "Velden",
         "supporting_facts": ["Marlow Bay", "Edda Kranz"]},
        {"_id": "t2", "question": "Who directed The Pale Road?", "answer": "Juri Sandt",
         "supporting_facts": [["The Pale Road", 0], "Juri Sandt"]}]), encoding="utf-8")
    ds = load_dataset("2wikimultihopqa", tmp_path)
    q = {x.qid: x for x in ds.questions}
    assert q["t1"].gold_sessions == ("Marlow Bay", "Edda Kranz")
    assert q["t2"].gold_sessions == ("The Pale Road", "Juri Sandt")
    assert ds.categories == ["2-hop"]
    (tmp_path / "dev.json").write_text(json.dumps([
        {"_id": "t3", "question": "?", "supporting_facts": [7]}]), encoding="utf-8")
    with pytest.raises(ValueError, match=r"expected \[title, sent_id\] or a title"):
        load_dataset("2wikimultihopqa", tmp_path)
