"""Run directory: ``config.json``, ``questions.jsonl``, ``summary.json``, ``summary.md``, PNG plots."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import textwrap
import uuid
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mempursuit_core.install import install_line

__all__ = ["write_outputs", "check_out_dir", "markdown_report", "plot_report", "verdict"]


def _clean(x: Any) -> Any:
    """JSON-safe: NaN/inf -> None, numpy scalars -> Python."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return _clean(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return x if math.isfinite(x) else None
    if isinstance(x, Path):
        return str(x)
    return x


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_suffix(path.suffix + ".part")
    tmp.write_text(json.dumps(_clean(obj), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _fmt(v: Any, nd: int = 1) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    return f"{v:.{nd}f}"


def _p(v: float | None) -> str:
    if v is None:
        return "–"
    return "<1e-4" if v < 1e-4 else f"{v:.3g}"


def _significant(st: dict | None) -> bool:
    return bool(st) and st.get("p_value") is not None and st["p_value"] < SIGNIFICANT


def _counts(counts: dict) -> str:
    return ", ".join(f"{n} {c}" for c, n in sorted(counts.items(), key=lambda x: -x[1]))


def _order(s: dict) -> str:
    return (f"{s['native_order']} native order" if s.get("native_order")
            else f"{s['framework']}'s own order")


def legend(summary: dict) -> list[str]:
    """The terms the tables use, in a few lines (the start of ``summary.md``)."""
    b, seed = summary.get("bootstrap"), summary.get("seed")
    return [
        "How to read it: each question's store returns one pool of candidate memories in its "
        "native order; every policy reorders that same pool and keeps K.",
        "",
        "- *recall* (session / turn): the share of a question's gold sessions / turns that the K "
        "kept memories come from, averaged over the questions.",
        "- *complete coverage* (*session* / *turn coverage*): the share of questions whose gold "
        "sessions / turns are all among the K kept; LongMemEval calls it recall_all@K (its "
        "recall_any@K and ndcg_any@K: the table *In LongMemEval's names*).",
        "- *native top-K replaced*: the share of the store's own first K that the policy "
        "swapped for other memories of the same pool (0 for native).",
        "- *diff*: policy minus native on the same questions, in percentage points; *95% CI*: "
        "percentile bootstrap of the mean difference, resampling questions"
        + (f" ({b} resamples, seed {seed})" if b is not None else "")
        + "; *wins / losses*: questions where the policy does better / worse; *p* and *test*: "
        "exact two-sided test on the questions that differ, McNemar's for 0/1 metrics "
        "(coverage, QA) and the sign test for recall; p < 0.05 is significant at the usual "
        "level, and such differences are in **bold**.",
    ]


def _data_name(s: dict) -> str:
    """The dataset and the file it was read from (its name only), e.g. ``locomo (dialogue.json)``."""
    src = s.get("source")
    return f"{s['dataset']} ({Path(str(src)).name})" if src else s["dataset"]


SIGNIFICANT = 0.05  # exact two-sided p below this: bold in the tables, named in the verdict

#: The levels the verdict reports, by the key of their paired statistics.
VERDICT_METRICS = (("turn_coverage", "turn coverage"), ("complete_coverage", "session coverage"),
                   ("qa_accuracy", "QA accuracy"))


def verdict(summary: dict) -> str | None:
    """One sentence saying what changed: the default policy (or the first one run beside the
    baseline) against it at the smallest K, each level's coverage before -> after (difference in
    points, exact p, or n.s.), the level with the smallest p first. None when only the baseline ran.
    """
    from mempursuit_core import DEFAULT_POLICY

    paired = summary.get("paired") or {}
    if not paired:
        return None
    policy = DEFAULT_POLICY if DEFAULT_POLICY in paired else next(iter(paired))
    k = min(paired[policy], key=int)
    overall = paired[policy][k]["overall"]
    parts = []
    for key, label in VERDICT_METRICS:
        st = overall.get(key)
        if not st or st.get("baseline") is None or st.get("policy") is None:
            continue
        p = st.get("p_value")
        sig = p is not None and p < SIGNIFICANT
        parts.append((p if p is not None else 1.0, -abs(st["diff"]),
                      f"{label} {st['baseline']:.1f} → {st['policy']:.1f} "
                      f"({st['diff']:+.1f}, " + (f"p = {_p(p)}" if sig else "n.s.") + ")"))
    if not parts:
        return None
    name = f"{policy} (the default)" if policy == DEFAULT_POLICY else policy
    others = [p for p in paired if p != policy]
    more = f"; {', '.join(others)}: in the tables below" if others else ""
    return (f"{name} vs {summary.get('baseline', 'native')} at K={k}, {_data_name(summary)}: "
            + "; ".join(t for _, _, t in sorted(parts)) + more + ".")


def markdown_report(summary: dict) -> str:
    """The summary as markdown tables (what the README results tables are cut from); the line
    under the title is :func:`verdict`."""
    s = summary
    store = s["framework"] + (f" ({s['native_order']} native order)" if s.get("native_order") else "")
    line = verdict(s)
    lines = [
        f"# mempursuit eval: {_data_name(s)}",
        "",
        *([f"**{line}**", ""] if line else []),
        *legend(s),
        "",
        *[f"**Warning:** {w}" for w in s.get("warnings") or []],
        *([""] if s.get("warnings") else []),
        "## Run",
        "",
        f"- store: {store}; units: {s['units']}; embedder: {s['embedder']}; pool P={s['pool']} "
        f"(mean pool size {s['mean_pool_size']:.1f}); K = {', '.join(map(str, s['k']))}",
        f"- questions: {s['n_questions']} ({s['n_scored']} with gold evidence scored; "
        f"{s['n_without_gold']} without)"
        + (f"; left out by category: {_counts(s['left_out'])}" if s.get("left_out") else ""),
        *([f"- not scored (no gold evidence in the store): {', '.join(s['unscored_ids'])}"]
          if s.get("unscored_ids") else []),
        "- *session* = complete coverage at the session level (every gold session kept), "
        "*turn* = complete coverage at the turn / message level (every gold turn kept)",
        f"- baseline for paired statistics: `{s['baseline']}` (the pool's native first K)",
        *_ceiling_lines(s),
        *_second_read_lines(s),
        *([f"- signals: {s['signals']}"] if s.get("signals") else []),
        "",
        "## Retrieval",
        "",
        "| policy | K | session recall % | session coverage % | turn recall % | turn coverage % "
        "| native top-K replaced % | mean context size | select ms median / p95 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    qa = bool(s.get("qa"))
    for policy, by_k in s["results"].items():
        for k, entry in by_k.items():
            o = entry["overall"]
            lat = (s.get("latency_ms") or {}).get(policy, {}).get(k, {})
            lines.append(
                f"| {policy} | {k} | {_fmt(o.get('session_recall'))} | "
                f"{_fmt(o.get('complete_coverage'))} | {_fmt(o.get('turn_recall'))} | "
                f"{_fmt(o.get('turn_coverage'))} | {_fmt(o.get('replaced'))} | "
                f"{_fmt(o.get('size'))} | {_fmt(lat.get('median'), 3)} / {_fmt(lat.get('p95'), 3)} |")
    if qa:
        lines += ["", "## End-to-end QA (judge accuracy %)", ""] + _qa_lines(s)
    if s["paired"]:
        lines += ["", "## Paired differences vs native (percentage points)", "",
                  "| policy | K | metric | native | policy | diff | 95% CI | wins / losses | p | test |",
                  "|---|---:|---|---:|---:|---:|---|---:|---:|---|"]
        for policy, by_k in s["paired"].items():
            for k, entry in by_k.items():
                for m, st in entry["overall"].items():
                    b = "**" if _significant(st) else ""  # bold where significant
                    lines.append(
                        f"| {policy} | {k} | {m} | {_fmt(st['baseline'])} | {_fmt(st['policy'])} | "
                        f"{b}{st['diff']:+.2f}{b} | [{st['ci_low']:+.2f}, {st['ci_high']:+.2f}] | "
                        f"{st['wins']} / {st['losses']} | {b}{_p(st['p_value'])}{b} | {st['test']} |")
    if any("session_recall_any" in e["overall"] for by_k in s["results"].values()
           for e in by_k.values()):
        lines += ["", "## In LongMemEval's names (%)", "",
                  "| policy | K | session recall_any | session recall_all | session ndcg_any "
                  "| turn recall_any | turn recall_all | turn ndcg_any |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for policy, by_k in s["results"].items():
            for k, entry in by_k.items():
                o = entry["overall"]
                lines.append(f"| {policy} | {k} | " + " | ".join(_fmt(o.get(m)) for m in (
                    "session_recall_any", "complete_coverage", "session_ndcg_any",
                    "turn_recall_any", "turn_coverage", "turn_ndcg_any")) + " |")
    lines += _official_lines(s.get("official") or {})
    lines += _recall_at_lines(s)
    cats = s.get("categories") or []
    if cats:
        lines += ["", "## Session coverage % by category", ""]
        cols = [(p, k) for p in s["results"] for k in s["results"][p]]
        lines.append("| category | n | " + " | ".join(f"{p} @{k}" for p, k in cols) + " |")
        lines.append("|---|---:|" + "---:|" * len(cols))
        for c in cats:
            first = s["results"][cols[0][0]][cols[0][1]]["by_category"].get(c, {})
            vals = [s["results"][p][k]["by_category"].get(c, {}).get("complete_coverage")
                    for p, k in cols]
            lines.append(f"| {c} | {first.get('n', 0)} | " + " | ".join(_fmt(v) for v in vals) + " |")
    t = s.get("timing_s") or {}
    if t:
        lines += ["", "## Time (s)", "",
                  ", ".join(f"{k} {v:.2f}" for k, v in t.items() if isinstance(v, (int, float)))]
    if s.get("notes"):
        lines += ["", "## Data notes", ""] + [f"- {n}" for n in s["notes"]]
    return "\n".join(lines) + "\n"


def _second_read_lines(s: dict) -> list[str]:
    """What each policy's second read fetched (the titles its picks name), and at what cost."""
    return [f"- second read of `{p}`: {d['questions']} of {d['of']} questions, "
            f"{d['mean_fetched']:.2f} extra candidates a question on average; on those, the "
            f"lookup and the choice again take a median {d['lookup_ms_median']:.3f} ms (in the "
            "select time)"
            for p, d in (s.get("second_read") or {}).items()]


def _recall_at_lines(s: dict) -> list[str]:
    """recall@2 / recall@5 as multi-hop retrieval papers name them (HippoRAG): the mean share
    of a question's gold paragraphs among the K kept, i.e. session recall at K = 2 / 5."""
    ks = [k for k in ("2", "5") if all(k in by_k for by_k in s["results"].values())]
    if s.get("units") not in ("paragraphs", "sentences") or not ks:
        return []
    lines = ["", "## In multi-hop retrieval papers' names (%)", "",
             "recall@K = session recall at K (HippoRAG's measure: the mean share of a "
             "question's gold passages among the K kept).", "",
             "| policy | " + " | ".join(f"recall@{k}" for k in ks) + " |",
             "|---|" + "---:|" * len(ks)]
    for policy, by_k in s["results"].items():
        lines.append(f"| {policy} | " + " | ".join(
            _fmt(by_k[k]["overall"].get("session_recall")) for k in ks) + " |")
    return lines


def _ceiling_lines(s: dict) -> list[str]:
    """The pool ceiling (every candidate of P kept), when the summary has it."""
    o = (s.get("pool_ceiling") or {}).get("overall") or {}
    if o.get("complete_coverage") is None:
        return []
    return [f"- pool ceiling (all of P kept; no order can do better): session recall "
            f"{_fmt(o.get('session_recall'))} %, session coverage "
            f"{_fmt(o.get('complete_coverage'))} %, turn coverage {_fmt(o.get('turn_coverage'))} %"]


def _official_lines(off: dict) -> list[str]:
    """The benchmarks' own scorers (``summary["official"]``), labelled as theirs."""
    lines: list[str] = []
    lme = off.get("longmemeval")
    if lme:
        a = lme["anchor"]
        lines += ["", "## Official LongMemEval retrieval metrics (fractions)", "",
                  f"- scorer: {lme['source']}; index: {lme['index']}; ranking: {lme['ranking']}",
                  f"- {lme['n']} questions averaged; left out as the official script does: "
                  f"{lme['left_out']['abstention']} abstention, {lme['left_out']['no_target']} "
                  "without a has_answer user turn",
                  f"- anchor: {a['metric']} = {a['value']} ({a['source']})",
                  "- differs from our complete coverage: the session level counts only "
                  "has_answer user turns and looks at as many turns as it takes to see k distinct "
                  "sessions (docs/harness.md#official-scorers)", "",
                  "| policy | K | session recall_any | session recall_all | session ndcg_any "
                  "| turn recall_any | turn recall_all | turn ndcg_any |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for policy, by_k in lme["results"].items():
            for k, o in by_k.items():
                lines.append(f"| {policy} | {k} | " + " | ".join(_fmt(o.get(m), 3) for m in (
                    "session_recall_any", "session_recall_all", "session_ndcg_any",
                    "turn_recall_any", "turn_recall_all", "turn_ndcg_any")) + " |")
    loc = off.get("locomo_qa")
    if loc:
        lines += ["", "## Official LoCoMo QA scores (%)", "",
                  f"- F1: {loc['metrics']['f1']} ({loc['source']}); BLEU-1 and EM: as Mem0 / "
                  "A-Mem report them; a failed answer (no reply) scores 0", "",
                  "| policy | K | scope | n | F1 | BLEU-1 | EM | failed |",
                  "|---|---:|---|---:|---:|---:|---:|---:|"]
        for policy, by_k in loc["results"].items():
            for k, e in by_k.items():
                for scope, o in [("all", e["overall"])] + sorted(e["by_category"].items()):
                    lines.append(f"| {policy} | {k} | {scope} | {o.get('n', 0)} | "
                                 f"{_fmt(o.get('f1'))} | {_fmt(o.get('bleu1'))} | "
                                 f"{_fmt(o.get('exact'))} | {o.get('failed', 0)} |")
    return lines


def _qa_lines(s: dict) -> list[str]:
    """The QA setup, what it cost, the verdicts that could not be read, and accuracy with its
    paired statistics (McNemar) beside session coverage and its own."""
    q = s["qa"]
    v = q.get("verdicts") or {}
    tokens = (f"; tokens in / out {q['prompt_tokens']:,} / {q['completion_tokens']:,}"
              if q.get("prompt_tokens") else "")
    fails = q.get("failures") or {}
    fail_text = "; ".join(f"{who}: " + ", ".join(f"{n} {k}" for k, n in sorted(c.items()))
                          for who, c in fails.items() if c) or "none"
    judge = (f"judge `{q.get('judge_model')}` ({q.get('judge_url')})"
             if q.get("judged_by_llm", True) else "no LLM judge (--no-judge: the official answer "
             "scores below are the result)")
    log = q.get("reply_log")
    lines = [
        f"- answerer `{q.get('model')}`, {judge}; prompts: {q.get('prompts')}",
        f"- requests without a usable reply (down / timeout / malformed / empty / http): "
        f"{fail_text}; failed answers {q.get('failed_answers', 0)}, failed verdicts "
        f"{q.get('failed_judgements', 0)} (scored wrong, F1 0; not cached, a rerun asks again)",
        *([f"- reply log `{log['path']}`: {log['read']} replies read at start"
           + (f", {log['bad_lines']} unreadable line(s) skipped" if log["bad_lines"] else "")]
          if log else []),
        f"- calls: {q.get('calls', 0)} sent, {q.get('cache_hits', 0)} from the cache{tokens}",
        f"- unparsed verdicts: {q.get('unparsed_judgements', 0)} of {q.get('judged', '?')} "
        f"(no single CORRECT / WRONG label: {v.get('ambiguous', 0)} with both, "
        f"{v.get('none', 0)} with neither; counted as wrong); answers without an `ANSWER:` "
        f"marker (whole reply used): {q.get('answers_without_marker', 0)}",
        *([f"- note: {q['note']}"] if q.get("note") else []),
        "",
        "| policy | K | accuracy % | diff vs native pp | 95% CI | McNemar p | session coverage % "
        "| diff pp | p | n | unparsed verdicts |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    unparsed_by = q.get("unparsed_by") or {}
    for policy, by_k in s["results"].items():
        for k, entry in by_k.items():
            o = entry["overall"]
            if o.get("qa_accuracy") is None:
                continue
            pa = (s["paired"].get(policy) or {}).get(k, {}).get("overall", {})
            acc, cov = pa.get("qa_accuracy"), pa.get("complete_coverage")
            b = "**" if _significant(acc) else ""
            lines.append(
                f"| {policy} | {k} | {_fmt(o['qa_accuracy'])} | "
                + (f"{b}{acc['diff']:+.2f}{b} | [{acc['ci_low']:+.2f}, {acc['ci_high']:+.2f}] | "
                   f"{b}{_p(acc['p_value'])}{b} | " if acc else "– | – | – | ")
                + f"{_fmt(o.get('complete_coverage'))} | "
                + (f"{cov['diff']:+.2f} | {_p(cov['p_value'])} | " if cov else "– | – | ")
                + f"{o.get('n_qa', '')} | {unparsed_by.get(policy, {}).get(k, '–')} |")
    return lines


def plot_report(summary: dict, out: Path) -> list[Path]:
    """``coverage_vs_k.png`` and ``category_gains.png``; raises ImportError without matplotlib."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    s = summary
    ks = [int(k) for k in s["k"]]
    written = []
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    for ax, metric, title in ((axes[0], "complete_coverage", "session level: complete coverage %"),
                              (axes[1], "turn_coverage", "turn level: complete coverage %")):
        for policy, by_k in s["results"].items():
            ys = [by_k[str(k)]["overall"].get(metric) for k in ks]
            ax.plot(ks, [np.nan if y is None else y for y in ys], marker="o", label=policy)
        ax.set_xlabel("K (memories kept)")
        ax.set_title(title)
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(ks)
        ax.set_xticklabels([str(k) for k in ks])
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(f"{_data_name(s)}: {s['framework']} store, {_order(s)}, {s['embedder']}, "
                 f"P={s['pool']}")
    path = out / "coverage_vs_k.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    written.append(path)

    cats = s.get("categories") or []
    series = [(p, k) for p in s["paired"] for k in s["paired"][p]]
    # both levels, session and turn (where the data labels turns): the gain is often in one only
    levels = [(m, name) for m, name in (("complete_coverage", "session"), ("turn_coverage", "turn"))
              if any(s["paired"][p][k]["overall"].get(m) for p, k in series)]
    if cats and series and levels:
        width_in = max(6, 1.2 * len(cats) + 2)
        fig, axes = plt.subplots(1, len(levels), figsize=(width_in * len(levels), 4.4),
                                 constrained_layout=True, squeeze=False)
        width = 0.8 / len(series)
        x = np.arange(len(cats))
        for ax, (metric, level) in zip(axes[0], levels):
            all_vals: list[float] = []
            for i, (p, k) in enumerate(series):
                bc = s["paired"][p][k]["by_category"]
                vals = [(bc.get(c, {}).get(metric) or {}).get("diff", np.nan) for c in cats]
                bars = ax.bar(x + i * width - 0.4 + width / 2, vals, width, label=f"{p} @K={k}")
                ax.bar_label(bars, labels=["0" if v == 0 else "" for v in vals], fontsize=7)
                all_vals.extend(v for v in vals if v is not None and np.isfinite(v))
            ax.axhline(0, color="black", lw=0.8)
            ax.set_xticks(x)
            ax.set_xticklabels(cats, rotation=30, ha="right")
            ax.set_ylabel("complete coverage gain vs native (pp)")
            ax.legend(fontsize=8)
            if not any(all_vals):  # bars of height zero look like an empty or broken chart
                ax.set_ylim(-1, 1)
                ax.text(0.5, 0.75, "no difference from native in any category"
                        + ("" if all_vals else " (nothing to compare)"),
                        transform=ax.transAxes, ha="center", va="center", fontsize=11,
                        bbox={"facecolor": "white", "edgecolor": "0.6"})
            ax.set_title(f"{level} level: complete coverage gain per category", fontsize=10)
        title = f"{_data_name(s)}: gain over the {_order(s)}"
        fig.suptitle(textwrap.fill(title, max(40, int(fig.get_figwidth() * 11))), fontsize=11)
        path = out / "category_gains.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def check_out_dir(out: Path) -> None:
    """Raise ``ValueError`` (one line naming ``--out`` and the fix) unless ``out`` is a folder,
    or a new folder can be made there (tried: a probe folder is made and removed, so a
    read-only or pseudo file system such as ``/proc`` is found now); nothing is left behind.
    Run before any work."""
    out = Path(out).expanduser()
    fix = "pass --out with a new or existing folder"
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: is an existing file, not a folder; {fix}")
    above = out.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if above.exists() and not above.is_dir():
        raise ValueError(f"--out {out}: {above} is a file, so no folder can be made there; {fix}")
    target = out if out.exists() else above
    if not os.access(target, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: {target} is not writable; {fix}")
    try:  # the hidden sibling folder write_outputs makes goes where the probe goes
        os.rmdir(tempfile.mkdtemp(prefix=f".{out.name or 'out'}.probe-", dir=above))
    except OSError as exc:
        raise ValueError(f"--out {out}: no folder can be made in {above} ({exc.strerror or exc}); "
                         f"{fix}") from None


def write_outputs(out: Path, cfg, summary: dict, records: list[dict], config: dict,
                  log: Callable[[str], None] = print) -> None:
    """Write the run directory all at once: every file goes to a hidden sibling folder first,
    which becomes ``out`` (or whose files replace those in an existing ``out``) only when all
    are written, so a failure leaves no half-written run directory."""
    out = Path(out)
    check_out_dir(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmpdir = out.parent / f".{out.name}.part-{uuid.uuid4().hex[:12]}"
    tmpdir.mkdir()  # the usual permissions (mkdtemp's would be 0700)
    try:
        _write_json(tmpdir / "config.json", config)
        with open(tmpdir / "questions.jsonl", "w", encoding="utf-8") as f:
            for r in records:
                f.write(json.dumps(_clean(r), ensure_ascii=False) + "\n")
        _write_json(tmpdir / "summary.json", summary)
        (tmpdir / "summary.md").write_text(markdown_report(_clean(summary)), encoding="utf-8")
        if cfg.plots:
            try:
                plot_report(_clean(summary), tmpdir)
            except ImportError:
                log(f"plots skipped: matplotlib is not installed ({install_line('eval')})")
        if out.is_dir():
            for f in sorted(tmpdir.iterdir()):
                os.replace(f, out / f.name)
        else:
            os.rename(tmpdir, out)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    log(f"wrote {out}/summary.md, summary.json, questions.jsonl, config.json"
        + (" and plots" if (out / "coverage_vs_k.png").exists() else ""))
