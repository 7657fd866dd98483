"""The benchmarks' own scorers, re-implemented from their definitions, beside ours.

LongMemEval retrieval
    ``xiaowu0162/LongMemEval``, ``src/retrieval/eval_utils.py`` (commit 6a92d1a) and the
    protocol of ``src/retrieval/run_retrieval.py`` (commit b60a5b7): the index holds the user
    turns only; a turn's corpus id is ``<session id>_<turn number from 1>``, and in an evidence
    session (its id contains ``answer``) a user turn without ``has_answer`` gets ``answer``
    replaced by ``noans`` in its id, so the correct items are exactly the ids that contain
    ``answer``. At the turn level :func:`lme_evaluate_retrieval` gives ``recall_any@k``,
    ``recall_all@k`` and ``ndcg_any@k``; at the session level
    :func:`lme_evaluate_turn2session` strips the turn number and extends the ranked list until
    it holds ``k`` distinct (stripped) ids. The averages leave out abstention questions (id
    contains ``_abs``) and questions with no ``has_answer`` user turn.

    How this differs from our ``complete_coverage``: ours counts a gold session as found when
    any kept unit of it is kept, over exactly the ``K`` units a policy keeps; the official
    session ``recall_all@k`` looks at as many turns as it takes to see ``k`` distinct
    sessions (more than ``k`` turns), counts only the ``has_answer`` user turns as hits (the
    other turns of an evidence session carry a ``noans`` id, a different "session"), and its
    NDCG counts every relevant turn, repeats included, against an ideal of all relevant turns
    in the haystack.

LoCoMo QA
    ``snap-research/locomo``, ``task_eval/evaluation.py`` (commit 9228632),
    ``eval_question_answering``: answers are normalised (commas dropped, lower-cased,
    punctuation, ``a / an / the / and`` removed) and Porter-stemmed; categories 2-4 (temporal,
    open-domain, single-hop) score token F1 (open-domain against the gold answer's part before
    the first ``;``), category 1 (multi-hop) the multi-answer F1 (both sides split at commas,
    each gold part scored by its best predicted part, averaged), category 5 (adversarial) 1 when
    the answer contains ``no information available`` or ``not mentioned``. Beside it, what Mem0
    and A-Mem report (``mem0ai/mem0`` ``evaluation/metrics/utils.py`` @240dc10): BLEU-1 and
    exact match of the lower-cased, stripped strings.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from typing import Sequence

from mempursuit_core.install import install_line

__all__ = [
    "LME_SOURCE",
    "LOCOMO_SOURCE",
    "LME_ANCHOR",
    "lme_corpus_id",
    "lme_dcg",
    "lme_ndcg",
    "lme_evaluate_retrieval",
    "lme_evaluate_turn2session",
    "lme_metrics",
    "locomo_normalize",
    "locomo_f1_score",
    "locomo_multi_f1",
    "locomo_qa_score",
    "bleu1",
    "lower_exact",
    "locomo_answer_scores",
]

LME_SOURCE = ("xiaowu0162/LongMemEval src/retrieval/eval_utils.py @6a92d1a, protocol of "
              "src/retrieval/run_retrieval.py @b60a5b7")
LOCOMO_SOURCE = "snap-research/locomo task_eval/evaluation.py @9228632"
#: The LongMemEval paper's best retriever at K=10 (session recall_all@10), as quoted in our
#: issue 37; the paper's table was not re-checked here (no network access to it).
LME_ANCHOR = {"metric": "recall_all@10 (session)", "value": 0.862,
              "source": "LongMemEval paper (Wu et al., ICLR 2025), best retriever; "
                        "quoted from issue 37, not verified against the paper's table"}


# --------------------------------------------------------------------------------------------
# LongMemEval
# --------------------------------------------------------------------------------------------

def lme_corpus_id(session_id: str, turn_index: int, has_answer: bool) -> str:
    """The official corpus id of a user turn (``turn_index`` counts all turns from 0)."""
    cid = f"{session_id}_{turn_index + 1}"
    if "answer" in session_id and not has_answer:
        cid = cid.replace("answer", "noans")
    return cid


def lme_dcg(relevances: Sequence[float], k: int) -> float:
    """``rel_1 + sum_{i=2..k} rel_i / log2(i)`` (the official ``dcg``)."""
    rel = [float(r) for r in relevances][:k]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def lme_ndcg(ranked: Sequence[str], correct: set, corpus: Sequence[str], k: int) -> float:
    """The official ``ndcg``: relevance of each ranked id (repeats count again), over the DCG
    of every correct corpus entry ranked first."""
    actual = lme_dcg([1 if d in correct else 0 for d in ranked[:k]], k)
    ideal = lme_dcg(sorted((1 if d in correct else 0 for d in corpus), reverse=True), k)
    return 0.0 if ideal == 0 else actual / ideal


def lme_evaluate_retrieval(ranked: Sequence[str], correct: Sequence[str],
                           corpus: Sequence[str], k: int) -> tuple[float, float, float]:
    """``(recall_any, recall_all, ndcg_any)`` at ``k`` (the official ``evaluate_retrieval``).

    Parameters
    ----------
    ranked : sequence of str
        Corpus ids in ranked order (the official ``[corpus_ids[i] for i in rankings]``).
    correct : sequence of str
        The correct ids.
    corpus : sequence of str
        Every corpus id (for the ideal DCG).
    """
    recalled = set(ranked[:k])
    cset = set(correct)
    return (float(any(d in recalled for d in cset)), float(all(d in recalled for d in cset)),
            lme_ndcg(ranked, cset, corpus, k))


def _strip_turn(cid: str) -> str:
    return "_".join(cid.split("_")[:-1])


def lme_evaluate_turn2session(ranked: Sequence[str], correct: Sequence[str],
                              corpus: Sequence[str], k: int) -> tuple[float, float, float]:
    """Session-level ``(recall_any, recall_all, ndcg_any)`` from a turn ranking (the official
    ``evaluate_retrieval_turn2session``): ids lose their turn number, and ``k`` grows until the
    first ``k`` ranked items hold ``k`` distinct sessions (or the corpus is exhausted)."""
    correct_s = list({_strip_turn(c) for c in correct})
    ranked_s = [_strip_turn(c) for c in ranked]
    corpus_s = [_strip_turn(c) for c in corpus]
    eff = k
    while eff <= len(corpus_s) and len(set(ranked_s[:eff])) < k:
        eff += 1
    return lme_evaluate_retrieval(ranked_s, correct_s, corpus_s, eff)


def lme_metrics(ranked: Sequence[str], corpus: Sequence[str], k: int) -> dict:
    """Turn- and session-level official metrics at ``k`` for one question; correct ids are
    the corpus ids containing ``answer`` (as the official script builds them)."""
    correct = sorted({c for c in corpus if "answer" in c})
    ra, rl, nd = lme_evaluate_retrieval(ranked, correct, corpus, k)
    sa, sl, sn = lme_evaluate_turn2session(ranked, correct, corpus, k)
    return {"turn_recall_any": ra, "turn_recall_all": rl, "turn_ndcg_any": nd,
            "session_recall_any": sa, "session_recall_all": sl, "session_ndcg_any": sn}


# --------------------------------------------------------------------------------------------
# LoCoMo QA
# --------------------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCT = set(string.punctuation)
_STEMMER = None


def _stem(word: str) -> str:
    global _STEMMER
    if _STEMMER is None:
        try:
            from nltk.stem import PorterStemmer
        except ImportError:  # pragma: no cover - nltk comes with the [eval] extra
            raise ImportError("the official LoCoMo F1 stems with NLTK's Porter stemmer: "
                              f"{install_line('eval')}, or pip install nltk") from None
        _STEMMER = PorterStemmer()
    return _STEMMER.stem(word)


def locomo_normalize(s: str) -> str:
    """The official ``normalize_answer``: commas dropped, lower-cased, punctuation removed,
    ``a / an / the / and`` removed, whitespace collapsed."""
    s = str(s).replace(",", "").lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def locomo_f1_score(prediction: str, gold: str) -> float:
    """The official ``f1_score``: token F1 of the Porter-stemmed normalised answers."""
    p = [_stem(w) for w in locomo_normalize(prediction).split()]
    g = [_stem(w) for w in locomo_normalize(gold).split()]
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def locomo_multi_f1(prediction: str, gold: str) -> float:
    """The official multi-answer ``f1``: split both at commas; mean over gold parts of the best
    :func:`locomo_f1_score` against any predicted part."""
    preds = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(locomo_f1_score(p, g) for p in preds) for g in golds) / len(golds)


def locomo_qa_score(prediction: str, gold: str, category: int) -> float:
    """The official per-question QA score for a LoCoMo category number (1-5)."""
    gold = str(gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category in (2, 3, 4):
        return locomo_f1_score(prediction, gold)
    if category == 1:
        return locomo_multi_f1(prediction, gold)
    if category == 5:
        low = str(prediction).lower()
        return float("no information available" in low or "not mentioned" in low)
    raise ValueError(f"LoCoMo has categories 1-5, got {category!r}")


def bleu1(prediction: str, gold: str) -> float:
    """BLEU-1 as Mem0's and A-Mem's evaluation computes it (``evaluation/metrics/utils.py`` of
    ``mem0ai/mem0`` @240dc10, from A-Mem): NLTK's ``sentence_bleu`` with weights
    ``(1, 0, 0, 0)`` and smoothing ``method1`` on the lower-cased, word-tokenised strings; 0 for
    an empty prediction. One difference: they tokenise with ``nltk.word_tokenize``, which needs
    the downloadable Punkt model to split sentences first; here NLTK's Treebank word tokenizer
    runs on the whole string (the same tokens except at a sentence-final period inside the text).
    """
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    prediction, gold = str(prediction or "").strip(), str(gold or "").strip()
    if not prediction or not gold:
        return 0.0
    tok = NLTKWordTokenizer()
    return float(sentence_bleu([tok.tokenize(gold.lower())], tok.tokenize(prediction.lower()),
                               weights=(1, 0, 0, 0),
                               smoothing_function=SmoothingFunction().method1))


def lower_exact(prediction: str, gold: str) -> bool:
    """Exact match of the lower-cased, stripped strings."""
    return str(prediction).strip().lower() == str(gold).strip().lower()


#: LoCoMo's category names (our loader's) -> its numbers (the official scorer's).
LOCOMO_NUMBERS = {"multi-hop": 1, "temporal": 2, "open-domain": 3, "single-hop": 4,
                  "adversarial": 5}


def locomo_answer_scores(prediction: str | None, gold: str, category: str | int) -> dict:
    """``{"f1", "bleu1", "exact"}`` for one answer; a missing answer (``None``, a failed call)
    scores 0 on all three."""
    num = category if isinstance(category, int) else LOCOMO_NUMBERS[category]
    if prediction is None:
        return {"f1": 0.0, "bleu1": 0.0, "exact": 0.0}
    return {"f1": locomo_qa_score(prediction, gold, num), "bleu1": bleu1(prediction, gold),
            "exact": float(lower_exact(prediction, gold))}
