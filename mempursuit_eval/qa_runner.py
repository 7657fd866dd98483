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

    A request that gets no usable reply (endpoint down, timeout, malformed reply, empty answer,
    HTTP error: :data:`mempursuit_eval.qa.FAILURE_KINDS`) never stops the run: the answer is
    ``None`` with ``"failed": True`` (judge accuracy: wrong; answer scores: 0), a failed verdict
    gives ``"judge_failed": True`` (wrong); the kinds are counted in ``failures`` and on stderr,
    and nothing is cached for them, so a rerun asks again. Without the judge (``qa.judge``
    False) ``correct`` is ``None`` and no accuracy is reported.

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
    judging = getattr(qa, "judge", True)
    cache = ChatCache(cache_root / "qa-cache.sqlite" if cache_root is not None else None,
                      log=getattr(qa, "reply_log", None))
    if cache.bad_log_lines:
        print(f"QA: {cache.bad_log_lines} line(s) of the reply log {cache.log} did not parse "
              "(a line cut by a kill?): skipped, those replies are asked again", file=sys.stderr)
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
            replies = answerer.map([j[3] for j in jobs], progress=bar.update, tolerate=True)
        split = [split_answer(r) if r is not None else (None, True) for r in replies]
        answers = [a for a, _ in split]
        verdicts: list[str | None] = [None] * len(jobs)
        if judging:
            todo = [i for i, a in enumerate(answers) if a is not None]
            jprompts = [build_judge_prompt(questions[jobs[i][0]].text, questions[jobs[i][0]].answer,
                                           answers[i], category=questions[jobs[i][0]].category)
                        for i in todo]
            with Progress(progress, len(set(jprompts)), "QA: judging") as bar:
                got = judge.map(jprompts, progress=bar.update, tolerate=True)
            for i, v in zip(todo, got):
                verdicts[i] = v
    finally:
        cache.close()
    kinds = dict.fromkeys(VERDICT_KINDS, 0)
    unparsed_by: dict[str, dict[str, int]] = {}
    unmarked = 0
    for (ri, policy, k, _), ans, (_, marked), reply, verdict in zip(jobs, answers, split, replies,
                                                                   verdicts):
        entry: dict[str, Any] = {"answer": ans}
        if ans is None:  # the answerer gave no usable reply: scored as failed
            entry.update(correct=False if judging else None, failed=True)
        elif not judging:
            entry.update(correct=None)
            unmarked += not marked
        elif verdict is None:  # the judge gave no usable reply: scored wrong, counted
            entry.update(correct=False, judge_failed=True)
            unmarked += not marked
        else:
            label, kind = read_judgement(verdict)
            kinds[kind] += 1
            unmarked += not marked
            by_k = unparsed_by.setdefault(policy, {})
            by_k[str(k)] = by_k.get(str(k), 0) + (label is None)
            entry.update(correct=bool(label), judge=verdict.strip()[-400:], verdict=kind,
                         **({"unparsed": True} if label is None else {}))
        if ans is not None and not marked:
            entry["no_answer_marker"] = True
        records[ri].setdefault("qa", {}).setdefault(policy, {})[str(k)] = entry
    unparsed = kinds["ambiguous"] + kinds["none"]
    if unparsed:
        print(f"QA: {unparsed} of {len(jobs)} judge replies had no single CORRECT/WRONG label "
              f"({kinds['ambiguous']} with both, {kinds['none']} with neither): counted as wrong "
              "and reported in summary.json / summary.md", file=sys.stderr)
    failures = {"answer": dict(answerer.failures), "judge": dict(judge.failures)}
    for who, client in (("answerer", answerer), ("judge", judge)):
        if client.failures:
            print(f"QA: {sum(client.failures.values())} {who} request(s) got no usable reply "
                  f"({', '.join(f'{n} {k}' for k, n in sorted(client.failures.items()))}); "
                  f"e.g. {next(iter(client.last_errors.values()))}. Scored as failed (wrong, "
                  "F1 0), not cached (a rerun asks again); reported in summary.json / summary.md",
                  file=sys.stderr)
    info: dict[str, Any] = {
        "answerer_url": answerer.url, "model": answerer.model,
        "judge_url": judge.url if judging else None,
        "judge_model": judge.model if judging else None, "judged_by_llm": judging, "k": ks,
        "prompts": "MemPursuit paper appendix A.4.1 (LoCoMo answer + judge, from Mem0's evaluation)",
        "calls": answerer.calls + judge.calls, "cache_hits": answerer.cache_hits + judge.cache_hits,
        "prompt_tokens": answerer.prompt_tokens + judge.prompt_tokens,
        "completion_tokens": answerer.completion_tokens + judge.completion_tokens,
        "unparsed_judgements": unparsed, "verdicts": kinds, "unparsed_by": unparsed_by,
        "answers_without_marker": unmarked,
        "judged": sum(v is not None for v in verdicts),
        "failures": failures, "answers": len(answers),
        "failed_answers": sum(a is None for a in answers),
        "failed_judgements": sum(judging and a is not None and v is None
                                 for a, v in zip(answers, verdicts)),
        "reply_log": ({"path": str(cache.log), "read": cache.loaded,
                       "bad_lines": cache.bad_log_lines} if cache.log is not None else None),
    }
    if dataset == "beam":
        info["note"] = ("BEAM's official rubric grader is not reproduced; accuracy here is the "
                        "binary LoCoMo judge")
    return info
