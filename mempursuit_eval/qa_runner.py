"""End-to-end QA over the selections of a run: answer with each policy's context, then judge."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Sequence

from .base import MemoryUnit
from .progress import Progress
from .datasets import Question
from .qa import VERDICT_KINDS, ChatCache, ChatClient, build_answer_prompt, build_judge_prompt, \
    read_judgement, split_answer

__all__ = ["run_qa"]


def run_qa(qa, questions: list[Question], records: list[dict],
           units: dict[str, MemoryUnit], cache_root: Path | None, *, ks: Sequence[int],
           progress: bool = True, dataset: str | None = None) -> dict:
    """Fill ``record["qa"][policy][K] = {"answer", "correct", "judge"}`` for every question,
    policy and K in ``qa.k`` (default: every K of ``ks``). The memories shown are the policy's
    selection, oldest first. Returns a description of the QA setup and call counts.

    Parameters
    ----------
    qa : QAConfig
        The answerer, the judge and how to call them.
    questions, records : lists of the same length
        The run's questions and their records (:func:`mempursuit_eval.stages.score`).
    units : dict
        The dataset's units by id.
    cache_root : Path, optional
        Replies are cached in ``cache_root / "qa-cache.sqlite"`` (none without it).
    ks : sequence of int
        The run's K values.
    """
    ks = list(qa.k or ks)
    cache = ChatCache(cache_root / "qa-cache.sqlite" if cache_root is not None else None)
    calls = dict(api_key_env=qa.api_key_env, cache=cache, max_retries=qa.retries,
                 timeout=qa.timeout, concurrency=qa.concurrency, max_tokens=qa.max_tokens)
    answerer = ChatClient(qa.answerer_url, qa.model, **calls)
    judge = ChatClient(qa.judge_url or qa.answerer_url, qa.judge_model or qa.model, **calls)
    jobs: list[tuple[int, str, int, str]] = []  # (record index, policy, K, prompt)
    for ri, (q, rec) in enumerate(zip(questions, records)):
        pool = rec["pool"]
        for policy, sel in rec["selections"].items():
            for k in ks:
                by_k = sel.get("orders_by_k")
                order = by_k[str(k)] if by_k else sel["order"][:k]
                mems = [(units[pool[j]].timestamp, units[pool[j]].text) for j in order]
                prompt = build_answer_prompt(q.text, mems, reference_date=q.date)
                jobs.append((ri, policy, k, prompt))
    try:
        with Progress(progress, len({j[3] for j in jobs}), "QA: answering") as bar:
            replies = answerer.map([j[3] for j in jobs], progress=bar.update)
        split = [split_answer(r) for r in replies]
        answers = [a for a, _ in split]
        jprompts = [build_judge_prompt(questions[ri].text, questions[ri].answer, a,
                                       category=questions[ri].category)
                    for (ri, _, _, _), a in zip(jobs, answers)]
        with Progress(progress, len(set(jprompts)), "QA: judging") as bar:
            verdicts = judge.map(jprompts, progress=bar.update)
    finally:
        cache.close()
    kinds = dict.fromkeys(VERDICT_KINDS, 0)
    unparsed_by: dict[str, dict[str, int]] = {}
    unmarked = 0
    for (ri, policy, k, _), ans, (_, marked), verdict in zip(jobs, answers, split, verdicts):
        label, kind = read_judgement(verdict)
        kinds[kind] += 1
        unmarked += not marked
        by_k = unparsed_by.setdefault(policy, {})
        by_k[str(k)] = by_k.get(str(k), 0) + (label is None)
        records[ri].setdefault("qa", {}).setdefault(policy, {})[str(k)] = {
            "answer": ans, "correct": bool(label), "judge": verdict.strip()[-400:],
            "verdict": kind, **({} if marked else {"no_answer_marker": True}),
            **({"unparsed": True} if label is None else {}),
        }
    unparsed = kinds["ambiguous"] + kinds["none"]
    if unparsed:
        print(f"QA: {unparsed} of {len(jobs)} judge replies had no single CORRECT/WRONG label "
              f"({kinds['ambiguous']} with both, {kinds['none']} with neither): counted as wrong "
              "and reported in summary.json / summary.md", file=sys.stderr)
    info: dict[str, Any] = {
        "answerer_url": answerer.url, "model": answerer.model,
        "judge_url": judge.url, "judge_model": judge.model, "k": ks,
        "prompts": "MemPursuit paper appendix A.4.1 (LoCoMo answer + judge, from Mem0's evaluation)",
        "calls": answerer.calls + judge.calls, "cache_hits": answerer.cache_hits + judge.cache_hits,
        "prompt_tokens": answerer.prompt_tokens + judge.prompt_tokens,
        "completion_tokens": answerer.completion_tokens + judge.completion_tokens,
        "unparsed_judgements": unparsed, "verdicts": kinds, "unparsed_by": unparsed_by,
        "answers_without_marker": unmarked, "judged": len(jobs),
    }
    if dataset == "beam":
        info["note"] = ("BEAM's official rubric grader is not reproduced; accuracy here is the "
                        "binary LoCoMo judge")
    return info
