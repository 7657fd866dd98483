"""``mempursuit eval``: argument parsing only; the run lives in :mod:`.runner`."""

from __future__ import annotations

import argparse
import json
import sys
import time

from mempursuit_core import DEFAULT_POLICY

from .cli_extras import EMBEDDER_HELP
from .cli_extras import add_arguments as add_extra_arguments
from .cli_extras import config_fields as extra_config_fields
from .datasets import DATASETS, UNIT_KINDS

__all__ = ["add_eval_parser", "run_eval"]

EPILOG = """examples:
  mempursuit eval --dataset locomo --k 10 20 50 --policies native mempursuit
  mempursuit eval --dataset locomo --framework mem0 --k 10 20 50 --policies native mempursuit
  mempursuit eval --dataset longmemeval --data longmemeval_s.json.gz --limit 50
  mempursuit eval --dataset beam --data BEAM/chats/100K --native-order hybrid
  mempursuit eval --dataset hotpotqa --data ../shared/data/hotpotqa --split train,dev --k 5 10
  mempursuit eval --dataset locomo --answerer-url http://localhost:8000/v1 --model qwen --qa-k 10
  mempursuit eval --dataset custom --data mine.jsonl --embedder openai:text-embedding-3-small \
      --embedder-url https://api.openai.com/v1 --embedder-key-env OPENAI_API_KEY
  mempursuit eval --framework mem0 --mem0-config mem0.json --dataset custom --data questions.json
"""


def _kv(text: str) -> tuple[str, object]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    key, _, raw = text.partition("=")
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    return key.strip(), value


def _number(kind, low: float, *, strict: bool = False, hint: str = ""):
    """An argparse type: a ``kind`` (int / float) ``>= low`` (``> low`` when ``strict``); the
    error says what is expected and, with ``hint``, what the value means."""
    bound = f"> {low}" if strict else f">= {low}"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or value != value or (value <= low if strict else value < low):
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'} {bound}, got {text!r}"
                + (f" ({hint})" if hint else ""))
        return value
    parse.__name__ = kind.__name__  # argparse names the type in its own messages
    return parse


def add_eval_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``eval`` command to an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "eval", help="paired with/without evaluation of read policies on a benchmark",
        description="Build one store, take one native pool per question, run every policy on "
                    "that same pool and compare each with the native order (w/o) question by "
                    "question.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_argument_group("data")
    g.add_argument("--dataset", default="locomo", choices=list(DATASETS),
                   help="default locomo; " + "; ".join(f"{n}: {s.description}"
                                                       for n, s in DATASETS.items()))
    g.add_argument("--data", metavar="PATH",
                   help="file or folder to read (default: $MEMPURSUIT_DATA/<the dataset's "
                        "file>, a cached download, or the official download)")
    g.add_argument("--units", choices=UNIT_KINDS,
                   help="memory units to store (default: the dataset's first, turns; paragraphs "
                        "for hotpotqa, 2wikimultihopqa, musique; " + "; ".join(
                       f"{kind}: {', '.join(n for n, s in DATASETS.items() if kind in s.units)}"
                       for kind in UNIT_KINDS[1:]) + ")")
    g.add_argument("--categories", nargs="+", metavar="C",
                   help="question categories (names, LoCoMo numbers, or 'all'; default: those "
                        "with answering evidence, e.g. LoCoMo 1-4)")
    g.add_argument("--limit", type=int, metavar="N", help="first N selected questions only")
    g.add_argument("--split", type=lambda t: [x for x in t.split(",") if x.strip()],
                   metavar="S[,S...]",
                   help="only the questions of these splits (the multi-hop sets' file names, "
                        "e.g. train,dev or test; the store keeps every file's passages)")
    g.add_argument("--groups", nargs="+", metavar="G",
                   help="only these groups (LoCoMo sample_id, LongMemEval question_id, BEAM chat)")
    g.add_argument("--no-download", action="store_true", help="never try to download data")

    g = p.add_argument_group("store and policies")
    g.add_argument("--framework", default="plain",
                   help="'plain' (built-in exact store) or a registered store: one per "
                        "adapter (see `mempursuit adapters`) or a plugin's")
    g.add_argument("--native-order", default="dense", choices=["dense", "hybrid"],
                   help="native order of the store: dense cosine, or dense + BM25 (equal "
                        "weights after min-max normalisation); default dense")
    g.add_argument("--backend-opt", type=_kv, action="append", default=[], metavar="KEY=VALUE",
                   help="option for the store factory (repeatable; VALUE parsed as JSON if it can be)")
    g.add_argument("--dataset-signals", action="store_true",
                   help="framework stores: put the benchmark's own session ids and speakers over "
                        "the signals the adapter hands over (labelled in the reports; default: "
                        "only what the framework's store keeps)")
    g.add_argument("--k", type=int, nargs="+", default=[10, 20, 50], metavar="K",
                   help="budgets (default 10 20 50)")
    g.add_argument("--policies", nargs="+", default=["native", DEFAULT_POLICY], metavar="NAME",
                   help="registered selectors (see `mempursuit selectors`), optionally with "
                        "options: NAME:KEY=VALUE,... (e.g. mempursuit:ridge=1e-8); native is "
                        "always added as the baseline")
    g.add_argument("--policy-opt", type=_kv, action="append", default=[],
                   metavar="POLICY.KEY=VALUE", help="selector option, e.g. mempursuit.ridge=1e-8")
    g.add_argument("--pool", type=int, default=200, metavar="P", help="pool size (default 200)")
    g.add_argument("--budget-tokens", type=int, nargs="+", default=[], metavar="B",
                   help="also score complete coverage at equal tokens: each policy keeps the "
                        "longest prefix of its order that fits B tokens (e.g. 500 1000 2000; "
                        "the packaged MiniLM tokenizer)")
    g.add_argument("--no-prefix", action="store_true",
                   help="run every policy once per K instead of taking prefixes of the largest K")
    g.add_argument("--embedder", default="minilm", help=EMBEDDER_HELP)
    g.add_argument("--embed-threads", type=int, metavar="N",
                   help="embedder threads (default: all cores)")
    g.add_argument("--threads", type=int, metavar="N",
                   help="selection threads for batched pursuit (default: all cores)")

    g = p.add_argument_group("output")
    g.add_argument("--out", metavar="DIR",
                   help="run directory (default runs/eval-<dataset>-<framework>-<time>)")
    g.add_argument("--cache-dir", metavar="DIR",
                   help="embedding / store / QA cache (default $MEMPURSUIT_CACHE or ~/.cache/mempursuit)")
    g.add_argument("--no-cache", action="store_true", help="cache nothing on disk")
    g.add_argument("--latency-sample", type=int, default=200, metavar="N",
                   help="questions timed one by one for selection latency (default 200; 0 = off)")
    g.add_argument("--bootstrap", type=int, default=2000, metavar="B",
                   help="bootstrap resamples (default 2000)")
    g.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    g.add_argument("--no-plots", action="store_true", help="skip PNG plots")
    g.add_argument("--quiet", action="store_true", help="no progress bars or notes")
    g.add_argument("--json", action="store_true", help="print summary.json instead of the table")

    g = p.add_argument_group("end-to-end QA (optional; any OpenAI-compatible endpoint)")
    g.add_argument("--answerer-url", metavar="URL", help="e.g. https://api.openai.com/v1")
    g.add_argument("--model", help="answerer model name")
    g.add_argument("--judge-url", metavar="URL", help="default: --answerer-url")
    g.add_argument("--judge-model", help="default: --model")
    g.add_argument("--api-key-env", default="OPENAI_API_KEY", metavar="VAR",
                   help="environment variable with the API key (default OPENAI_API_KEY)")
    g.add_argument("--qa-k", type=int, nargs="+", metavar="K", help="K values to answer at (default: all)")
    g.add_argument("--qa-concurrency", type=_number(int, 1, hint="requests in flight at once"),
                   default=8, metavar="N", help="requests in flight at once (default 8)")
    g.add_argument("--qa-retries", type=_number(int, 0, hint="0 = one attempt, no retry"),
                   default=5, metavar="N", help="retries per request (default 5; 0 = none)")
    g.add_argument("--qa-timeout", type=_number(float, 0, strict=True, hint="seconds per request"),
                   default=120.0, metavar="S", help="seconds per request (default 120)")
    g.add_argument("--qa-max-tokens", type=_number(int, 1), metavar="N")
    g.add_argument("--no-judge", action="store_true",
                   help="answers only: no judge calls (the official answer scores are the result)")
    g.add_argument("--qa-reply-log", metavar="FILE.jsonl",
                   help="JSON-lines reply log read at start and appended to as replies arrive "
                        "(commit it to resume a run on another machine)")
    add_extra_arguments(p)
    p.set_defaults(func=run_eval)
    return p


def _config_from_args(args):
    from .runner import EvalConfig, qa_config

    policy_options: dict[str, dict] = {}
    for key, value in args.policy_opt:
        policy, dot, opt = key.partition(".")
        if not dot or not opt:
            raise ValueError(f"--policy-opt needs POLICY.KEY=VALUE, got {key!r}")
        policy_options.setdefault(policy, {})[opt] = value
    out = (args.out if args.out is not None
           else time.strftime(f"runs/eval-{args.dataset}-{args.framework}-%Y%m%d-%H%M%S"))
    return EvalConfig(
        dataset=args.dataset, data=args.data, framework=args.framework, units=args.units,
        k=tuple(args.k), policies=tuple(args.policies), pool=args.pool, out=out,
        budget_tokens=tuple(args.budget_tokens),
        categories=args.categories, limit=args.limit, groups=args.groups, split=args.split,
        embedder=args.embedder, embedder_threads=args.embed_threads,
        native_order=args.native_order, backend_options=dict(args.backend_opt),
        dataset_signals=args.dataset_signals,
        policy_options=policy_options, cache_dir=args.cache_dir, no_cache=args.no_cache,
        threads=args.threads, latency_sample=args.latency_sample, bootstrap=args.bootstrap,
        seed=args.seed, prefix=not args.no_prefix, progress=not args.quiet,
        plots=not args.no_plots, download=not args.no_download,
        qa=qa_config(answerer_url=args.answerer_url, model=args.model, judge_url=args.judge_url,
                     judge_model=args.judge_model, api_key_env=args.api_key_env,
                     qa_k=tuple(args.qa_k) if args.qa_k else None,
                     qa_concurrency=args.qa_concurrency, qa_retries=args.qa_retries,
                     qa_timeout=args.qa_timeout, qa_max_tokens=args.qa_max_tokens,
                     qa_judge=False if args.no_judge else None,
                     qa_reply_log=args.qa_reply_log),
        **extra_config_fields(args),
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def run_eval(args) -> int:
    """Run ``mempursuit eval`` from parsed arguments; returns the exit status."""
    from mempursuit_core.embed import EmbedderNotInstalledError
    from .datasets import DatasetNotFoundError
    from .qa import QAError
    from .report import markdown_report
    from .runner import run_eval as _run

    try:
        cfg = _config_from_args(args)
        summary = _run(cfg)
    except (ValueError, DatasetNotFoundError, EmbedderNotInstalledError, QAError) as exc:
        # every known kind of bad input: one line naming the problem and the fix
        print(f"mempursuit eval: {_one_line(exc)}", file=sys.stderr)
        return 2
    if args.json:
        from .report import _clean

        print(json.dumps(_clean(summary), indent=2))
    else:
        md = markdown_report(summary)
        # The tables only (config lines and notes are in summary.md).
        print(md.split("## Time (s)")[0].rstrip())
    qa = summary.get("qa") or {}
    if qa.get("answers") and qa.get("failed_answers") == qa["answers"]:
        # a QA run without a single answer measured nothing: fail, saying why
        fails = ", ".join(f"{n} {k}" for k, n in sorted((qa.get("failures") or {})
                                                          .get("answer", {}).items()))
        print(f"mempursuit eval: no QA answer at all: every one of {qa['answers']} answerer "
              f"requests failed ({fails or 'no reply'}); check --answerer-url "
              f"{qa.get('answerer_url')} and --model {qa.get('model')} (the retrieval results "
              "are written)", file=sys.stderr)
        return 1
    return 0
