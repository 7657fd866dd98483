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

Reported per native order and policy: judge accuracy with McNemar's exact p against native,
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


def summarise(order: str, s: dict, recs: list[dict], policies: list[str], k: str) -> dict:
    out: dict = {"native_order": order, "n": len(recs), "qa": s["qa"],
                 "timing_s": s.get("timing_s"), "policies": {}}
    for p in policies:
        judge = [bool(r["qa"][p][k]["correct"]) for r in recs]
        f1 = [token_f1(r["qa"][p][k]["answer"], r["answer"]) for r in recs]
        em = [exact(r["qa"][p][k]["answer"], r["answer"]) for r in recs]
        res = s["results"][p][k]["overall"]
        row = {
            "accuracy": res.get("qa_accuracy"), "coverage": res.get("complete_coverage"),
            "exact": 100 * sum(em) / len(em), "f1": 100 * sum(f1) / len(f1),
            "judge_vs_f1": agreement(judge, [x >= 0.5 for x in f1]),
            "judge_vs_exact": agreement(judge, em),
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
    out["questions"] = [
        {"id": r["orig_id"], "category": r["category"], "gold": r["answer"],
         **{p: {"answer": r["qa"][p][k]["answer"], "correct": r["qa"][p][k]["correct"],
                "verdict": r["qa"][p][k].get("verdict"),
                "f1": round(token_f1(r["qa"][p][k]["answer"], r["answer"]), 3)}
            for p in policies}}
        for r in recs]
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
            kap = "–" if jf["kappa"] is None else f"{jf['kappa']:.2f}"
            lines.append(
                f"| {r['native_order']} | {p} | {r['n']} | {row['accuracy']:.1f} | {pair(ap)} | "
                f"{row['coverage']:.1f} | {pair(cp)} | {row['exact']:.1f} | {row['f1']:.1f} | "
                f"{jf['agree']:.1f} ({kap}) | {je['agree']:.1f} | {row['unparsed']} | "
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


def results_section(rep: dict) -> list[str]:
    """The docs/results.md section (markdown lines) for a report written by this script."""
    res = rep["results"]
    cats = ", ".join(f"{n} {c}" for c, n in sorted(rep["sample_by_category"].items()))
    lines = [
        "## End-to-end QA through a small local LLM", "",
        f"`python benchmarks/qa_locomo_small_llm.py {rep.get('command', '')}` wrote "
        "`benchmarks/results/qa_locomo_small_llm.json`. LoCoMo, a stratified sample fixed before "
        f"any result (seed {rep['seed']}: {rep['sample_rule']}): {rep['n']} questions ({cats}). "
        f"Store: {rep['store']}; K={rep['k']}. Answerer and judge: `{rep['model']}` (the paper's "
        "LoCoMo prompts; the GGUF's registry packages: [qa.md](qa.md#a-small-model-offline)) "
        f"through llama.cpp's server at {_threads(rep)}, niced, on the shared 2-core machine. "
        "EM / F1: the answer against the gold answer (lower-cased, punctuation and "
        "articles dropped; SQuAD token F1). Agreement: the judge's label against F1 >= 0.5 "
        "(Cohen's kappa) and against EM.", "",
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
        pairs = [(q[p]["correct"], q[p]["f1"]) for q in qs for p in r["policies"]]
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
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "qa_locomo_small_llm.json"))
    args = ap.parse_args()
    if not (args.gguf or args.answerer_url):
        ap.error("give --gguf MODEL.gguf or --answerer-url URL --model NAME")

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
        results = []
        k = str(args.k)
        for order in args.orders:
            t = time.perf_counter()
            s = run_eval(dataset="locomo", data=str(subset), framework="plain", native_order=order,
                         k=(args.k,), policies=tuple(args.policies), answerer_url=url, model=model,
                         qa_concurrency=1, qa_timeout=3600.0, qa_max_tokens=args.max_tokens,
                         cache_dir=args.cache_dir, out=str(tmp / order), plots=False,
                         latency_sample=0, bootstrap=2000, progress=True)
            wall = time.perf_counter() - t
            recs = [json.loads(line) for line in
                    (tmp / order / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
            for rec in recs:  # "conv-41/q3" (index in the sample file) -> the original index
                sid, j = rec["qid"].rsplit("/q", 1)
                rec["orig_id"] = f"{sid}/q{orig[sid][int(j)]}"
            r = summarise(order, s, recs, list(args.policies), k)
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
