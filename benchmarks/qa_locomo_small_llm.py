"""End-to-end QA on a fixed, stratified LoCoMo sample through a small local LLM.

    python benchmarks/qa_locomo_small_llm.py --gguf MODEL.gguf [--n 160] [--threads 1]
    python benchmarks/qa_locomo_small_llm.py --answerer-url http://HOST/v1 --model NAME

Native vs ``centered-fusion`` at K=10 on the built-in ``plain`` store (dialogue turns, packaged
MiniLM int8 embedder, pool 200), once with the dense and once with the hybrid native order.
The same model answers (the paper's LoCoMo answer prompt) and judges (its judge prompt). With
``--gguf`` the script starts llama.cpp's OpenAI-compatible server (``llama-cpp-python[server]``)
on 127.0.0.1 at ``--threads`` threads, niced, and stops it at the end. Requests go one at a
time, so llama.cpp reuses the long fixed answer-prompt prefix from the previous request. (Not
its ``--cache true`` RAM cache: with Qwen's 152k vocabulary each saved state carries its logits,
and the server grew to 22 GB and was killed for memory here.)

The sample (fixed before any result was seen): LoCoMo categories 1-4; each category's questions,
in file order, are shuffled by ``random.Random(f"{seed}:{category}")``; the sample is the first
``n`` of their round-robin interleave (single-hop, multi-hop, temporal, open-domain, repeat).
So a sample of size n is a prefix of any larger one: a longer rerun reuses every cached reply.

Replies are kept in a committed JSON-lines reply cache (``--reply-cache``, default
``benchmarks/results/qa_cache/<model>.jsonl``, keyed like the SQLite cache by
``ChatClient._key``): read at start, appended as each reply arrives, so a run stopped at any
question resumes on another machine; ``--import-cache`` copies an existing ``qa-cache.sqlite``
into it and ``--cache-only`` rescores from it without a server. A request without a usable reply
(server down, timeout, malformed or empty reply) is counted by kind and scored as failed.

Reported per native order and policy: the official LoCoMo answer scores (``mempursuit_eval.
official``: stemmed F1, BLEU-1, EM; primary) with the sign test and Wilcoxon signed-rank test
on per-question F1 against native, overall and per category, coverage beside;
judge accuracy (secondary; ``--no-judge`` skips it) with McNemar's exact p against native,
session coverage beside it, exact match and token F1 of the answer against the gold answer, and
the judge's agreement with "F1 >= 0.5" and with exact match; unparsed verdicts, answers without
the ``ANSWER:`` marker, calls, tokens and seconds per call. Writes
``benchmarks/results/qa_locomo_small_llm.json`` and prints the table.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import string
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORDER = ("single-hop", "multi-hop", "temporal", "open-domain")
CATS = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


def stratified_sample(data: list[dict], n: int, seed: int) -> list[tuple[str, int]]:
    """``[(sample_id, qa index)]``: the first ``n`` of the seeded round-robin (module doc)."""
    per_cat: dict[str, list[tuple[str, int]]] = {c: [] for c in ORDER}
    for conv in data:
        for i, qa in enumerate(conv["qa"]):
            c = CATS.get(qa.get("category"))
            if c is not None:
                per_cat[c].append((conv["sample_id"], i))
    for c in ORDER:
        random.Random(f"{seed}:{c}").shuffle(per_cat[c])
    out: list[tuple[str, int]] = []
    for j in range(max(len(v) for v in per_cat.values())):
        out += [per_cat[c][j] for c in ORDER if j < len(per_cat[c])]
    return out[:n]


def subset_file(data: list[dict], picked: list[tuple[str, int]], path: Path) -> None:
    keep: dict[str, set[int]] = {}
    for sid, i in picked:
        keep.setdefault(sid, set()).add(i)
    convs = []
    for conv in data:
        if conv["sample_id"] in keep:
            c = dict(conv)
            c["qa"] = [dict(qa, mp_orig=i) for i, qa in enumerate(conv["qa"])
                       if i in keep[conv["sample_id"]]]
            convs.append(c)
    path.write_text(json.dumps(convs), encoding="utf-8")


def _norm(s: str) -> list[str]:
    s = str(s).lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the|and)\b", " ", s)
    return s.split()


def token_f1(pred: str, gold: str) -> float:
    """SQuAD-style token F1 after lower-casing and dropping punctuation and articles."""
    p, g = _norm(pred), _norm(gold)
    common = sum((Counter(p) & Counter(g)).values())
    if not p or not g or not common:
        return float(p == g)
    prec, rec = common / len(p), common / len(g)
    return 2 * prec * rec / (prec + rec)


def exact(pred: str, gold: str) -> bool:
    return _norm(pred) == _norm(gold)


def agreement(a: list[bool], b: list[bool]) -> dict:
    """Share of equal labels and Cohen's kappa."""
    n = len(a)
    if not n:
        return {"n": 0, "agree": None, "kappa": None}
    po = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    pe = pa * pb + (1 - pa) * (1 - pb)
    return {"n": n, "agree": 100 * po, "kappa": None if pe == 1 else (po - pe) / (1 - pe)}


_PERF = re.compile(r"llama_perf_context_print:\s+(prompt eval|eval|total) time =\s+([\d.]+) ms /\s+(\d+)")


def server_timing(log: Path) -> dict | None:
    """Per-request times from llama.cpp's ``llama_perf_context_print`` lines: requests, seconds
    per request (first, median, mean; the first evaluates the long fixed prompt prefix, later
    ones reuse it from the previous request), prompt tokens evaluated and tokens generated."""
    if not log or not Path(log).is_file():
        return None
    total, prompt, gen = [], 0, 0
    for kind, ms, n in _PERF.findall(Path(log).read_text(errors="replace")):
        if kind == "total":
            total.append(float(ms) / 1000)
        elif kind == "prompt eval":
            prompt += int(n)
        else:
            gen += int(n)
    if not total:
        return None
    rest = sorted(total[1:]) or total
    return {"requests": len(total), "first_s": total[0], "median_s": rest[len(rest) // 2],
            "mean_s": sum(total) / len(total), "prompt_tokens_evaluated": prompt,
            "tokens_generated": gen}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(gguf: str, threads: int, ctx: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = ["nice", "-n", "10", sys.executable, "-m", "llama_cpp.server", "--model", gguf,
           "--host", "127.0.0.1", "--port", str(port), "--n_threads", str(threads),
           "--n_ctx", str(ctx),
           "--model_alias", Path(gguf).stem]
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"llama.cpp server exited ({proc.returncode}); see {log}")
        try:
            urllib.request.urlopen(url + "/models", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(1)
    proc.terminate()
    raise SystemExit(f"llama.cpp server did not answer in 600 s; see {log}")


def _text(answer: str | None) -> str:
    return "" if answer is None else answer


def summarise(order: str, s: dict, recs: list[dict], policies: list[str], k: str,
              texts: dict[str, tuple[str, str, str | None]] | None = None) -> dict:
    """One native order's results: per policy the judge accuracy (when judged), the official
    LoCoMo answer scores, our EM / F1, coverage; per question each policy's answer, scores,
    coverage and (with ``texts``, uid -> (memory text, session id, timestamp)) the K memories
    it was shown, as the prompt lists them, with their sessions; paired
    statistics against native (:func:`paired_answers`)."""
    from mempursuit_eval.official import locomo_answer_scores

    out: dict = {"native_order": order, "n": len(recs), "qa": s["qa"],
                 "timing_s": s.get("timing_s"), "policies": {}}
    judged = s["qa"].get("judged_by_llm", True)
    for p in policies:
        ans = [r["qa"][p][k]["answer"] for r in recs]
        judge = [bool(r["qa"][p][k]["correct"]) for r in recs]
        f1 = [token_f1(_text(a), r["answer"]) for a, r in zip(ans, recs)]
        em = [exact(_text(a), r["answer"]) for a, r in zip(ans, recs)]
        off = [locomo_answer_scores(a, r["answer"], r["category"]) for a, r in zip(ans, recs)]
        res = s["results"][p][k]["overall"]
        row = {
            "accuracy": res.get("qa_accuracy"), "coverage": res.get("complete_coverage"),
            "exact": 100 * sum(em) / len(em), "f1": 100 * sum(f1) / len(f1),
            "official": {m: 100 * sum(o[m] for o in off) / len(off)
                         for m in ("f1", "bleu1", "exact")},
            "failed": sum(a is None for a in ans),
            "judge_vs_f1": agreement(judge, [x >= 0.5 for x in f1]) if judged else None,
            "judge_vs_exact": agreement(judge, em) if judged else None,
            "unparsed": sum(bool(r["qa"][p][k].get("unparsed")) for r in recs),
            "no_marker": sum(bool(r["qa"][p][k].get("no_answer_marker")) for r in recs),
            "by_category": {c: v.get("qa_accuracy") for c, v
                            in s["results"][p][k]["by_category"].items()},
        }
        if p in s["paired"]:
            pa = s["paired"][p][k]["overall"]
            row["accuracy_paired"] = pa.get("qa_accuracy")
            row["coverage_paired"] = pa.get("complete_coverage")
        out["policies"][p] = row

    def per_policy(r: dict, p: str) -> dict:
        q = r["qa"][p][k]
        m = (r.get("metrics") or {}).get(p, {}).get(k, {})
        sel = r["selections"][p]
        order = (sel.get("orders_by_k") or {}).get(k) or sel["order"][:int(k)]
        return {"answer": q["answer"], "correct": q["correct"], "verdict": q.get("verdict"),
                **({"failed": True} if q.get("failed") else {}),
                "f1": round(token_f1(_text(q["answer"]), r["answer"]), 3),
                "official": {m_: round(v, 3) for m_, v in
                             locomo_answer_scores(q["answer"], r["answer"], r["category"]).items()},
                "coverage": m.get("complete_coverage"), "session_recall": m.get("session_recall"),
                "turn_recall": m.get("turn_recall"),
                **(_shown(r, order, texts) if texts else {})}

    out["questions"] = [
        {"id": r["orig_id"], "category": r["category"], "question": r.get("question"),
         "gold": r["answer"], "gold_sessions": r.get("gold_sessions"),
         **{p: per_policy(r, p) for p in policies}}
        for r in recs]
    out["paired_answers"] = paired_answers(out["questions"], policies, judged=judged)
    return out


def _shown(rec: dict, order: list[int], texts: dict[str, tuple[str, str, str | None]]) -> dict:
    """The K memories as the answer prompt lists them (oldest first, dated; see
    ``mempursuit_eval.qa.format_memories``), with their sessions and their rank in the
    selection (1 = the policy's first pick)."""
    from mempursuit_eval.qa import format_memories

    items = [(rank, *texts[rec["pool"][j]]) for rank, j in enumerate(order, 1)]
    dated = sorted((m for m in items if m[3]), key=lambda m: str(m[3]))
    shown = dated + [m for m in items if not m[3]]
    lines = format_memories([(ts, text) for _, text, _, ts in shown]).split("\n")[1:]
    return {"memories": [line[2:] for line in lines],
            "memory_sessions": [sid for _, _, sid, _ in shown],
            "memory_ranks": [rank for rank, _, _, _ in shown]}


def _wilcoxon(diffs: list[float]) -> float | None:
    """Two-sided Wilcoxon signed-rank p (zero differences dropped; SciPy's exact or normal
    method as it picks); ``None`` when every difference is zero."""
    d = [x for x in diffs if x != 0]
    if not d:
        return None
    from scipy.stats import wilcoxon

    return float(wilcoxon(d).pvalue)


def paired_answers(questions: list[dict], policies: list[str], *, judged: bool,
                   base: str = "native") -> dict:
    """Per non-native policy, overall and per category: the official LoCoMo F1 (mean, in %)
    of both with the sign test and the Wilcoxon signed-rank test on the per-question
    differences; McNemar's exact test on the judge's labels (when judged) and on complete
    coverage, beside it. Over the questions both policies answered (a failed request on either
    side leaves the pair out; ``failed_pairs`` counts them), so a partial run's pairs are
    compared as they stand."""
    from mempursuit_eval.metrics import mcnemar_exact, sign_test

    out: dict = {}
    cats = sorted({q["category"] for q in questions})
    for p in policies:
        if p == base:
            continue
        out[p] = {}
        for scope in ["all"] + cats:
            inscope = [q for q in questions if scope == "all" or q["category"] == scope]
            qs = [q for q in inscope if not (q[p].get("failed") or q[base].get("failed"))]
            if not qs:
                out[p][scope] = {"n": 0, "failed_pairs": len(inscope)}
                continue
            a = [q[p]["official"]["f1"] for q in qs]
            b = [q[base]["official"]["f1"] for q in qs]
            d = [x - y for x, y in zip(a, b)]
            st = sign_test(d)
            entry = {"n": len(qs), "failed_pairs": len(inscope) - len(qs), "f1_base": 100 * sum(b) / len(b), "f1": 100 * sum(a) / len(a),
                     "f1_diff": 100 * sum(d) / len(d), "wins": st["wins"],
                     "losses": st["losses"], "sign_p": st["p_value"], "wilcoxon_p": _wilcoxon(d)}
            cov = [(q[p]["coverage"], q[base]["coverage"]) for q in qs
                   if q[p].get("coverage") is not None and q[base].get("coverage") is not None]
            if cov:
                mc = mcnemar_exact([x for x, _ in cov], [y for _, y in cov])
                entry.update(coverage_base=100 * sum(y for _, y in cov) / len(cov),
                             coverage=100 * sum(x for x, _ in cov) / len(cov),
                             coverage_p=mc["p_value"])
            if judged:
                mc = mcnemar_exact([float(bool(q[p]["correct"])) for q in qs],
                                   [float(bool(q[base]["correct"])) for q in qs])
                entry.update(judge_base=100 * sum(bool(q[base]["correct"]) for q in qs) / len(qs),
                             judge=100 * sum(bool(q[p]["correct"]) for q in qs) / len(qs),
                             judge_p=mc["p_value"])
            out[p][scope] = entry
    return out


def table(results: list[dict]) -> str:
    lines = ["| native order | policy | n | judge acc % | diff pp (McNemar p) | session cov % "
             "| diff pp (p) | EM % | F1 % | judge = F1>=0.5 % (kappa) | judge = EM % "
             "| unparsed | no ANSWER: |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for p, row in r["policies"].items():
            ap, cp = row.get("accuracy_paired"), row.get("coverage_paired")
            pair = (lambda st: f"{st['diff']:+.1f} ({st['p_value']:.3g})" if st else "–")
            jf, je = row["judge_vs_f1"], row["judge_vs_exact"]
            if jf is None:  # answers only (--no-judge)
                acc = agree = agree_em = "–"
            else:
                kap = "–" if jf["kappa"] is None else f"{jf['kappa']:.2f}"
                acc, agree, agree_em = (f"{row['accuracy']:.1f}", f"{jf['agree']:.1f} ({kap})",
                                        f"{je['agree']:.1f}")
            lines.append(
                f"| {r['native_order']} | {p} | {r['n']} | {acc} | {pair(ap)} | "
                f"{row['coverage']:.1f} | {pair(cp)} | {row['exact']:.1f} | {row['f1']:.1f} | "
                f"{agree} | {agree_em} | {row['unparsed']} | "
                f"{row['no_marker']} |")
    return "\n".join(lines)


def _threads(rep: dict) -> str:
    t = rep.get("threads") or 1
    return "one thread" if t == 1 else f"{t} threads"


def _command(argv: list[str]) -> str:
    """The command line as the report shows it: without ``--out`` (a local path)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            out.append(a)
    return " ".join(out)


#: Options whose value is a path on the machine that ran the benchmark: the docs show the file's
#: name (a copy of the benchmark file, the GGUF) or a placeholder (a cache folder).
_MACHINE_PATHS = {"--data": None, "--gguf": None, "--cache-dir": "CACHE_DIR"}


def shown_command(command: str) -> str:
    """A recorded command line as the docs show it, without the paths of the machine it ran on:
    ``--data ../shared/data/locomo/locomo10.json --gguf /x/m.gguf --cache-dir /y`` becomes
    ``--data locomo10.json --gguf m.gguf --cache-dir CACHE_DIR``."""
    parts, out = command.split(), []
    for i, a in enumerate(parts):
        opt, eq, value = a.partition("=")
        if eq and opt in _MACHINE_PATHS:
            out.append(f"{opt}={_MACHINE_PATHS[opt] or Path(value).name}")
        elif i and parts[i - 1] in _MACHINE_PATHS and not a.startswith("--"):
            out.append(_MACHINE_PATHS[parts[i - 1]] or Path(a).name)
        else:
            out.append(a)
    return " ".join(out)


def results_section(rep: dict, source: str = "benchmarks/results/qa_locomo_small_llm.json",
                    heading: str = "## End-to-end QA through a small local LLM") -> list[str]:
    """The docs/results.md section (markdown lines) for a report written by this script to
    ``source`` (relative to the repository), under ``heading``."""
    res = rep["results"]
    cats = ", ".join(f"{n} {c}" for c, n in sorted(rep["sample_by_category"].items()))
    lines = [
        heading, "",
        f"`python benchmarks/qa_locomo_small_llm.py {shown_command(rep.get('command', ''))}` "
        "wrote "
        f"`{source}`. LoCoMo, a stratified sample fixed before "
        f"any result (seed {rep['seed']}: {rep['sample_rule']}): {rep['n']} questions ({cats}). "
        f"Store: {rep['store']}; K={rep['k']}. "
        + ("Answerer and judge" if rep.get("judged_by_llm", True) else "Answerer (no LLM judge)")
        + f": `{rep['model']}` (the paper's "
        "LoCoMo prompts; the GGUF's registry packages: [qa.md](qa.md#a-small-model-offline)) "
        + (f"through llama.cpp's server at {_threads(rep)}, niced, on the shared 2-core machine"
           if not rep.get("cache_only") else "with every reply read from the committed reply "
           f"cache `{rep.get('reply_cache')}` (no server in this run; the replies came from "
           "llama.cpp's server on the shared 2-core machines)")
        + ". "
        "EM / F1: the answer against the gold answer (lower-cased, punctuation and "
        "articles dropped; SQuAD token F1)."
        + (" Agreement: the judge's label against F1 >= 0.5 (Cohen's kappa) and against EM."
           if rep.get("judged_by_llm", True) else ""), "",
        table(res), "",
    ]
    for r in res:
        q = r["qa"]
        if not q["calls"]:
            lines.append(f"- {r['native_order']}: all {q['cache_hits']} replies from the QA cache, "
                         "written by an earlier run of this script against the same server (its "
                         "timing below).")
            continue
        lines.append(f"- {r['native_order']}: {q['calls']} calls sent ({q['cache_hits']} from the "
                     f"cache), tokens in / out {q.get('prompt_tokens') or 0:,} / "
                     f"{q.get('completion_tokens') or 0:,}, {r['s_per_call']:.0f} s per call, "
                     f"wall {r['wall_s'] / 60:.0f} min.")
    for r in res:
        qs = r.get("questions") or []
        pairs = [(q[p]["correct"], q[p]["f1"]) for q in qs for p in r["policies"]
                 if q[p]["correct"] is not None]
        if pairs:
            strict = sum(1 for c, f in pairs if not c and f >= 0.5)
            lenient = sum(1 for c, f in pairs if c and f < 0.5)
            lines.append(f"- {r['native_order']}, judge against F1 over {len(pairs)} answers: WRONG "
                         f"on {strict} with F1 >= 0.5, CORRECT on {lenient} with F1 < 0.5 "
                         "(per-question answers and verdicts are in the JSON).")
    t = rep.get("server_timing")
    if t:
        lines.append(
            f"- llama.cpp's own timing over all {t['requests']} requests this server answered: "
            f"first {t['first_s']:.0f} s (the ~1,700-token fixed prompt prefix evaluated once), "
            f"then median {t['median_s']:.0f} s per request; {t['prompt_tokens_evaluated']:,} "
            f"prompt tokens evaluated, {t['tokens_generated']:,} generated; load average at the "
            f"end {', '.join(f'{x:.1f}' for x in rep['load_average'])} on 2 cores.")
    if t and rep["n"] < 150:
        reqs = 4 * 160 * 2  # answers + verdicts, two policies, two native orders
        lines.append(
            f"- Why only {rep['n']} questions: at a median {t['median_s']:.0f} s per request here, "
            f"160 questions (~{reqs:,} requests for two policies and two native orders) would "
            f"take ~{reqs * t['median_s'] / 3600:.0f} hours on this shared machine."
            + ("" if len(res) > 1 else " Only the dense order finished within the session; "
               "`--orders dense hybrid` runs both."))
    lines += official_section(rep)
    if not rep.get("judged_by_llm", True):
        return lines + [
            "", "What this run can and cannot show: the answers are scored by LoCoMo's official "
            "F1 (deterministic, the primary score); no LLM judge ran (the secondary score, left "
            "for time: the same command without `--no-judge` reuses every cached answer and "
            "adds only the verdicts). A 1.5B coding model answers far below the paper's hosted "
            "model, so absolute F1 is low and differences are small in points; coverage beside "
            "F1 says whether the evidence was there to be used, and the paired tests say how "
            "often the answer moved with it. The reply cache is committed "
            f"(`{rep.get('reply_cache') or 'benchmarks/results/qa_cache/'}`), so a rerun on "
            "another machine resumes instead of starting over.", "",
        ]
    lines += [
        "", "What a sample this size with a 1.5B model can and cannot show: it shows that the "
        "prompts, parsers, cache and paired statistics work on a real model's output, how often "
        "its verdicts are unreadable, and how far its judge agrees with plain string matching. It "
        "cannot show whether a policy changes answer accuracy: an exact McNemar test needs at "
        "least 6 discordant questions, all in one direction, to reach p < 0.05, and a 1.5B "
        "coding model judging its own answers adds noise of the size of the effect sought (the "
        "paper's +7.2 points used a strong hosted model). Coverage beside accuracy says whether "
        "the evidence was there to be used. The same script reruns at any size (`--n 160`); the "
        "sample is nested, so a larger rerun reuses every cached reply.", "",
    ]
    return lines


def _p(v: float | None) -> str:
    return "–" if v is None else f"{v:.3g}"


def official_section(rep: dict) -> list[str]:
    """The official LoCoMo answer scores with paired tests and coverage beside, overall and per
    category (only for reports that carry them: written by this script since issue 37)."""
    res = [r for r in rep["results"] if "paired_answers" in r]
    if not res:
        return []
    judged = any(r["qa"].get("judged_by_llm", True) for r in res)
    lines = [
        "", "### Official LoCoMo answer scores (primary) with paired tests", "",
        "F1: LoCoMo's official answer score (`snap-research/locomo` `task_eval/evaluation.py`: "
        "Porter-stemmed token F1; multi-answer F1 for multi-hop; open-domain gold cut at ';'); "
        "BLEU-1 and EM: as Mem0 and A-Mem report them (lower-cased). A failed request (endpoint "
        "down, timeout, malformed or empty reply) scores 0 and is counted. Paired tests on the "
        "per-question F1 of the questions both policies answered (n below): sign test and "
        "Wilcoxon signed-rank (SciPy); complete session coverage beside it with McNemar's exact "
        "test"
        + ("; the LLM judge (secondary) with McNemar's exact test." if judged else
           "; no LLM judge in this run (answers only)."), "",
        "| native order | policy | n | F1 % | BLEU-1 % | EM % | failed |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in res:
        for p, row in r["policies"].items():
            o = row["official"]
            lines.append(f"| {r['native_order']} | {p} | {r['n']} | {o['f1']:.1f} | "
                         f"{o['bleu1']:.1f} | {o['exact']:.1f} | {row['failed']} |")
    lines += ["", "| native order | policy | scope | n | F1 native -> policy (diff) | wins / "
              "losses | sign p | Wilcoxon p | coverage native -> policy | McNemar p "
              + ("| judge native -> policy | McNemar p |" if judged else "|"),
              "|---|---|---|---:|---|---:|---:|---:|---|---:|" + ("---|---:|" if judged else "")]
    for r in res:
        for p, by in r["paired_answers"].items():
            for scope, e in by.items():
                if not e["n"]:
                    lines.append(f"| {r['native_order']} | {p} | {scope} | 0 | – | – | – | – | "
                                 "– | – |" + (" – | – |" if judged else ""))
                    continue
                cov = (f"{e['coverage_base']:.1f} -> {e['coverage']:.1f} | {_p(e['coverage_p'])}"
                       if "coverage" in e else "– | –")
                jdg = (f" {e['judge_base']:.1f} -> {e['judge']:.1f} | {_p(e['judge_p'])} |"
                       if "judge" in e else (" – | – |" if judged else ""))
                lines.append(
                    f"| {r['native_order']} | {p} | {scope} | {e['n']} | {e['f1_base']:.1f} -> "
                    f"{e['f1']:.1f} ({e['f1_diff']:+.1f}) | {e['wins']} / {e['losses']} | "
                    f"{_p(e['sign_p'])} | {_p(e['wilcoxon_p'])} | {cov} |{jdg}")
    for r in res:
        f = r["qa"].get("failures") or {}
        counts = "; ".join(f"{who}: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items()))
                           for who, c in f.items() if c)
        lines.append(f"- {r['native_order']}: requests without a usable reply: "
                     f"{counts or 'none'}.")
    if any(r.get("questions") and "memories" in r["questions"][0].get("native", {})
           for r in res):
        lines.append("- Questions where coverage and F1 disagree, with both contexts: "
                     "[qa-disagreements.md](qa-disagreements.md).")
    return lines


def write_report(args, data: list[dict], picked: list[tuple[str, int]], model: str,
                 results: list[dict], server_log: Path | None = None) -> None:
    """The JSON report (rewritten after each native order, so a stopped run keeps the done ones)."""
    chosen = set(picked)
    cats = Counter(CATS[q["category"]] for conv in data for i, q in enumerate(conv["qa"])
                   if (conv["sample_id"], i) in chosen)
    report = {
        "command": _command(sys.argv[1:]), "data": args.data, "n": len(picked), "seed": args.seed,
        "k": args.k,
        "sample_rule": "categories 1-4; per category random.Random(f'{seed}:{category}').shuffle "
                       "of file order; round-robin single-hop, multi-hop, temporal, open-domain; "
                       "first n",
        "sample": [f"{sid}/q{i}" for sid, i in picked], "sample_by_category": dict(cats),
        "store": "plain (turns, all-MiniLM-L6-v2 int8, pool 200)", "model": model,
        "gguf": args.gguf, "threads": args.threads, "max_tokens": args.max_tokens,
        "judged_by_llm": not args.no_judge, "cache_only": bool(args.cache_only),
        "reply_cache": (str(Path(args.reply_cache).resolve().relative_to(ROOT))
                        if args.reply_cache and args.reply_cache.lower() != "none"
                        and Path(args.reply_cache).resolve().is_relative_to(ROOT)
                        else args.reply_cache),
        "load_average": os.getloadavg(), "orders_done": [r["native_order"] for r in results],
        "server_timing": server_timing(server_log) if server_log else None,
        "results": results,
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
    ap.add_argument("--gguf", help="start llama.cpp's server on this model")
    ap.add_argument("--answerer-url", help="or use a running OpenAI-compatible endpoint")
    ap.add_argument("--model", default=None)
    ap.add_argument("--n", type=int, default=160)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--policies", nargs="+", default=["native", "centered-fusion"])
    ap.add_argument("--orders", nargs="+", default=["dense", "hybrid"])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--max-tokens", type=int, default=None, help="cap on each reply")
    ap.add_argument("--server-log", help="llama.cpp server log of a server started by hand "
                    "(--answerer-url): its per-request times go into the report")
    ap.add_argument("--cache-dir", default=None, help="default $MEMPURSUIT_CACHE or ~/.cache/mempursuit")
    ap.add_argument("--reply-cache", default=None,
                    help="JSON-lines reply log read at start and appended to as each reply "
                         "arrives (default benchmarks/results/qa_cache/<model>.jsonl, committed so "
                         "a run resumes on another machine); 'none' for no log")
    ap.add_argument("--import-cache", metavar="SQLITE",
                    help="first copy the replies of an existing qa-cache.sqlite (read-only) into "
                         "the reply log")
    ap.add_argument("--no-judge", action="store_true",
                    help="answers only: no judge calls (the official LoCoMo scores are primary)")
    ap.add_argument("--cache-only", action="store_true",
                    help="no server: every reply must be in the reply cache (needs --model); "
                         "missing ones are counted as 'down' and scored as failed")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "qa_locomo_small_llm.json"))
    args = ap.parse_args()
    if args.cache_only:
        if not args.model:
            ap.error("--cache-only needs --model (the model name the replies were cached under)")
        args.gguf, args.answerer_url = None, f"http://127.0.0.1:{free_port()}/v1"
    if not (args.gguf or args.answerer_url):
        ap.error("give --gguf MODEL.gguf or --answerer-url URL --model NAME")
    model_name = args.model or Path(args.gguf).stem
    if args.reply_cache is None:
        args.reply_cache = str(ROOT / "benchmarks" / "results" / "qa_cache" / f"{model_name}.jsonl")
    reply_log = None if args.reply_cache.lower() == "none" else args.reply_cache
    if args.import_cache:
        if reply_log is None:
            ap.error("--import-cache needs a reply log (--reply-cache)")
        from mempursuit_eval.qa import ChatCache

        log = ChatCache(None, log=reply_log)
        added = log.import_sqlite(args.import_cache, model_name)
        log.close()
        print(f"imported {added} replies from {args.import_cache} into {reply_log}",
              file=sys.stderr)

    from mempursuit_eval import run_eval

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the server on a kill too

    data = json.loads(Path(args.data).read_text(encoding="utf-8"))
    picked = stratified_sample(data, args.n, args.seed)
    data_by_id = {c["sample_id"]: c for c in data}
    tmp = Path(tempfile.mkdtemp(prefix="qa-locomo-"))
    subset = tmp / "locomo_sample.json"
    subset_file(data, picked, subset)
    orig = {c["sample_id"]: [qa["mp_orig"] for qa in c["qa"]]
            for c in json.loads(subset.read_text(encoding="utf-8"))}
    proc = None
    server_log = Path(args.server_log) if args.server_log else None
    try:
        if args.gguf:
            server_log = tmp / "server.log"
            proc, url = start_server(args.gguf, args.threads, args.ctx, tmp / "server.log")
            model = args.model or Path(args.gguf).stem
        else:
            url, model = args.answerer_url, args.model
        from mempursuit_eval.datasets import load_dataset

        texts = {u.uid: (u.text, u.session_id, u.timestamp)
                 for u in load_dataset("locomo", str(subset), units="turns").units}
        results = []
        k = str(args.k)
        for order in args.orders:
            t = time.perf_counter()
            s = run_eval(dataset="locomo", data=str(subset), framework="plain", native_order=order,
                         k=(args.k,), policies=tuple(args.policies), answerer_url=url, model=model,
                         qa_concurrency=1, qa_timeout=3600.0, qa_max_tokens=args.max_tokens,
                         qa_judge=not args.no_judge, qa_reply_log=reply_log,
                         **({"qa_retries": 0} if args.cache_only else {}),
                         cache_dir=args.cache_dir, out=str(tmp / order), plots=False,
                         latency_sample=0, bootstrap=2000, progress=True)
            wall = time.perf_counter() - t
            recs = [json.loads(line) for line in
                    (tmp / order / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
            for rec in recs:  # "conv-41/q3" (index in the sample file) -> the original index
                sid, j = rec["qid"].rsplit("/q", 1)
                rec["orig_id"] = f"{sid}/q{orig[sid][int(j)]}"
            r = summarise(order, s, recs, list(args.policies), k, texts)
            r["wall_s"] = wall
            calls = s["qa"]["calls"]
            r["s_per_call"] = (s["timing_s"]["qa"] / calls) if calls else None
            results.append(r)
            write_report(args, data, picked, model, results, server_log)
            print(f"{order}: {len(recs)} questions, {calls} calls, {s['qa']['cache_hits']} cached, "
                  f"{wall:.0f} s", file=sys.stderr)
    finally:
        if proc is not None:
            proc.terminate()  # uvicorn finishes the request in flight first: then kill
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(20)
    cats = Counter(CATS[data_by_id[sid]["qa"][i]["category"]] for sid, i in picked)
    print(f"LoCoMo stratified sample n={len(picked)} ({dict(cats)}), K={args.k}, model {model}, "
          f"answerer = judge")
    print(table(results))
    print(f"(the docs/results.md section: python benchmarks/readme_tables.py)")
    for r in results:
        q = r["qa"]
        print(f"{r['native_order']}: {q['calls']} calls ({q['cache_hits']} cached), "
              f"tokens in/out {q.get('prompt_tokens')}/{q.get('completion_tokens')}, "
              f"{r['s_per_call'] or 0:.1f} s per call, wall {r['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
