"""The benchmarks' own scorers (mempursuit_eval.official) on hand-made cases worked out from
the official definitions (LongMemEval src/retrieval/eval_utils.py, LoCoMo
task_eval/evaluation.py), and the harness's official LongMemEval block on a hand-made file."""

import gzip
import json
import math

import pytest

from mempursuit_eval.official import (bleu1, lme_corpus_id, lme_evaluate_retrieval,
                                      lme_evaluate_turn2session, lme_metrics,
                                      locomo_answer_scores, locomo_f1_score, locomo_multi_f1,
                                      locomo_normalize, locomo_qa_score, lower_exact)

# Two evidence sessions (x: its 2nd user turn has the answer; y: its 1st) and two others.
CORPUS = ["noans_x_1", "answer_x_3", "s1_1", "s1_3", "s2_1", "answer_y_1", "noans_y_3"]
RANKED = ["s1_1", "answer_x_3", "s1_3", "noans_x_1", "s2_1", "answer_y_1", "noans_y_3"]
CORRECT = ["answer_x_3", "answer_y_1"]


def test_corpus_ids_follow_the_official_scheme():
    assert lme_corpus_id("answer_x", 2, True) == "answer_x_3"
    assert lme_corpus_id("answer_x", 0, False) == "noans_x_1"
    assert lme_corpus_id("sharegpt_7", 4, False) == "sharegpt_7_5"


def test_turn_level_by_hand():
    # k=2: {s1_1, answer_x_3}: one of two correct; DCG 0 + 1/log2(2) = 1 over ideal 1 + 1 = 2
    assert lme_evaluate_retrieval(RANKED, CORRECT, CORPUS, 2) == (1.0, 0.0, 0.5)
    ra, rl, nd = lme_evaluate_retrieval(RANKED, CORRECT, CORPUS, 6)
    assert (ra, rl) == (1.0, 1.0) and nd == pytest.approx((1 + 1 / math.log2(6)) / 2)


def test_turn_to_session_extends_to_k_distinct_sessions():
    # sessions in rank order: s1, answer_x, s1, noans_x, s2, answer_y: the 5th distinct session
    # (answer_y) is the 6th item, so recall_all@5 = 1 although 5 turns miss y
    assert lme_evaluate_turn2session(RANKED, CORRECT, CORPUS, 4) == (1.0, 0.0, 0.5)
    ra, rl, nd = lme_evaluate_turn2session(RANKED, CORRECT, CORPUS, 5)
    assert (ra, rl) == (1.0, 1.0) and nd == pytest.approx((1 + 1 / math.log2(6)) / 2)
    # our complete coverage of the first 5 turns: sessions {s1, x, s2}, gold {x, y} -> 0
    assert lme_metrics(RANKED, CORPUS, 5)["session_recall_all"] == 1.0


def test_ndcg_counts_repeats_and_ideal_over_the_whole_corpus():
    corpus = ["answer_a_1", "answer_a_3", "answer_a_5", "b_1"]
    ranked = ["answer_a_5", "b_1"]  # a ranking that ends early (the pool)
    # ideal @2: both of the 3 relevant first -> 2; actual: 1
    assert lme_evaluate_retrieval(ranked, corpus[:3], corpus, 2) == (1.0, 0.0, 0.5)
    # at the session level the three turns are one session 'answer_a': found
    assert lme_evaluate_turn2session(ranked, corpus[:3], corpus, 2)[:2] == (1.0, 1.0)


def test_locomo_normalisation_and_stemmed_f1():
    assert locomo_normalize("The cats, and the Dogs!") == "cats dogs"
    assert locomo_f1_score("The cats, and dogs", "cat dog") == 1.0  # Porter stems
    assert locomo_f1_score("running", "runs") == 1.0
    assert locomo_f1_score("in May 2023", "7 May 2023") == pytest.approx(2 / 3)
    assert locomo_f1_score("", "Paris") == 0.0


def test_locomo_categories():
    assert locomo_multi_f1("Paris, London", "London, Rome, Paris") == pytest.approx(2 / 3)
    assert locomo_qa_score("Paris, London", "London, Rome, Paris", 1) == pytest.approx(2 / 3)
    # open-domain: the gold answer's part before ';'
    assert locomo_qa_score("Yes", "yes; because she likes it", 3) == 1.0
    assert locomo_qa_score("Yes", "yes; because she likes it", 2) < 1.0
    assert locomo_qa_score("That is not mentioned.", "x", 5) == 1.0
    assert locomo_qa_score("No information available", "x", 5) == 1.0
    assert locomo_qa_score("Paris", "x", 5) == 0.0
    with pytest.raises(ValueError):
        locomo_qa_score("a", "b", 6)


def test_bleu1_and_lower_exact():
    # 3 of 3 unigrams match; brevity penalty exp(1 - 6/3)
    assert bleu1("the cat sat", "the cat sat on the mat") == pytest.approx(math.exp(-1))
    assert bleu1("dog", "the cat") == 0.0
    assert bleu1("", "the cat") == 0.0
    assert lower_exact(" Paris ", "paris") and not lower_exact("Paris, France", "Paris")
    s = locomo_answer_scores(None, "Paris", "single-hop")
    assert s == {"f1": 0.0, "bleu1": 0.0, "exact": 0.0}
    assert locomo_answer_scores("paris", "Paris", "single-hop") == {"f1": 1.0, "bleu1": 1.0,
                                                                    "exact": 1.0}


def _lme_file(path):
    def sess(texts, answer_at=()):
        out = []
        for i, t in enumerate(texts):
            out.append({"role": "user" if i % 2 == 0 else "assistant", "content": t,
                        **({"has_answer": i in answer_at} if True else {})})
        return out

    recs = []
    for qid, question in (("q1", "What colour is my bike?"), ("q2_abs", "Where is my boat?"),
                          ("q3", "Which city do I live in?")):
        recs.append({
            "question_id": qid, "question_type": "single-session-user", "question": question,
            "answer": "red", "question_date": "2023/05/30 (Tue) 10:00",
            "haystack_session_ids": [f"answer_{qid}_1", f"other_{qid}"],
            "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/02 (Tue) 09:00"],
            "haystack_sessions": [
                sess(["I bought a bike.", "Nice!", "My bike is red.", "Great colour.",
                      "I ride it daily."], answer_at=(2,) if qid != "q3" else ()),
                sess(["I like tea.", "Me too.", "I live in Paris.", "Lovely."])],
            "answer_session_ids": [f"answer_{qid}_1"],
        })
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(recs, f)


def test_user_turn_index_and_official_block(tmp_path):
    pytest.importorskip("onnxruntime", reason="needs the [embed] extra")
    from mempursuit_eval import run_eval
    from mempursuit_eval.datasets import load_dataset

    data = tmp_path / "longmemeval_s.json.gz"
    _lme_file(data)
    ds = load_dataset("longmemeval", str(data), units="user-turns")
    assert {u.speaker for u in ds.units} == {"user"} and len(ds.units) == 3 * 5
    q1 = ds.questions[0]
    assert [c for _, c in q1.meta["lme_corpus"]] == [
        "noans_q1_1_1", "answer_q1_1_3", "noans_q1_1_5", "other_q1_1", "other_q1_3"]
    assert q1.gold_turns == ("q1/0:answer_q1_1/2",)
    assert not ds.questions[2].meta["lme_has_target"]

    s = run_eval(dataset="longmemeval", data=str(data), units="user-turns", k=(1, 2),
                 categories=["all"], policies=("native", "mempursuit"), pool=200,
                 cache_dir=str(tmp_path / "cache"), progress=False, plots=False,
                 latency_sample=0, bootstrap=50, out=str(tmp_path / "run"))
    lme = s["official"]["longmemeval"]
    assert lme["n"] == 1 and lme["left_out"] == {"abstention": 1, "no_target": 1}
    assert lme["anchor"]["value"] == 0.862
    recs = [json.loads(x) for x in (tmp_path / "run" / "questions.jsonl").read_text().splitlines()]
    r1 = next(r for r in recs if r["qid"] == "q1")
    ids = dict(tuple(x) for x in q1.meta["lme_corpus"])
    want = lme_metrics([ids[u] for u in r1["pool"]], [c for _, c in q1.meta["lme_corpus"]], 2)
    assert r1["official"]["native"]["2"] == want
    assert lme["results"]["native"]["2"] == want  # one question kept
    md = (tmp_path / "run" / "summary.md").read_text()
    assert "Official LongMemEval retrieval metrics" in md and "0.862" in md
