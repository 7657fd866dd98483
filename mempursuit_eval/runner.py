"""The paired with/without evaluation: one store, one pool per question, every policy on it.

For each question the store returns its native candidate pool (``pool`` units, the native
order); every policy reorders that same pool and keeps ``K`` units; metrics are computed on
what each policy keeps, and every policy is compared with ``native`` (the "w/o" baseline: the
pool's first ``K``) question by question. Only the order differs between policies. The run's
stages are public functions in :mod:`mempursuit_eval.stages`.

Selectors whose answers are nested (the ``K``-selection is the first ``K`` of any larger
selection: those with a true ``nested`` attribute, e.g. ``native``, ``mempursuit`` (adaptive
or not), ``mmr`` and the default ``centered-fusion``) are run once per question at the largest
``K`` and prefixes are taken; adaptive stopping is prefix-safe because its stop rule does not
depend on ``K`` (the context at ``K`` is every pick up to the stop, capped at ``K``). Other
selectors run once per ``K``.
"""


from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import os
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mempursuit_core import DEFAULT_POLICY

from .progress import Progress
from .token_budgets import add_token_budgets, summarise_token_budgets
from .cache import CachedEmbedder, check_cache_dir
from .datasets import Dataset, default_cache_dir
from .stages import (BASELINE, apply_policies, build_backend, check_framework, collect_pools,
                     embed_questions, factory_options, load_data, measure_latency, open_store,
                     score, signal_source, summarise, write)

__all__ = ["EvalConfig", "QAConfig", "run_eval", "build_backend", "parse_policy",
           "BASELINE", "signal_source"]


@dataclass
class QAConfig:
    """End-to-end QA (``mempursuit eval --answerer-url ...``): an OpenAI-compatible chat endpoint
    answers each question from each policy's selection, and a judge labels each answer.

    Attributes
    ----------
    answerer_url : str
        Base URL of the answerer (``http://127.0.0.1:8080/v1``).
    model : str
        The answerer's model name.
    judge_url, judge_model : str, optional
        The judge; default the answerer.
    api_key_env : str
        Environment variable holding the key (none needed by local servers).
    k : tuple of int, optional
        The K values answered (each one of the run's ``k``); default all of them.
    concurrency, retries, timeout, max_tokens
        Requests in flight, retries per request, seconds per request, cap on each reply.
    judge : bool
        False: answers only (no judge calls; the deterministic answer scores are the result).
    reply_log : str, optional
        A JSON-lines reply log (:class:`mempursuit_eval.qa.ChatCache`) read at start and
        appended to as replies arrive, e.g. a committed file that lets a run resume elsewhere.
    """

    answerer_url: str
    model: str | None = None
    judge_url: str | None = None
    judge_model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    k: tuple[int, ...] | None = None
    concurrency: int = 8
    retries: int = 5
    timeout: float = 120.0
    max_tokens: int | None = None
    judge: bool = True
    reply_log: str | None = None

    def validate(self, ks: tuple[int, ...]) -> None:
        if not self.answerer_url or not str(self.answerer_url).strip():
            raise ValueError("QA needs --answerer-url (the answerer's base URL)")
        if not self.model:
            raise ValueError("--answerer-url needs --model")
        if isinstance(self.k, (int, np.integer)):
            self.k = (int(self.k),)
        if self.k is not None:
            bad = [x for x in self.k if int(x) not in ks]
            if bad:
                raise ValueError(f"--qa-k {bad} not among --k {list(ks)}")
            self.k = tuple(sorted({int(x) for x in self.k}))


#: ``run_eval``'s flat QA keywords (the CLI's flag names) -> :class:`QAConfig` fields.
QA_KEYWORDS = {"answerer_url": "answerer_url", "model": "model", "judge_url": "judge_url",
               "judge_model": "judge_model", "api_key_env": "api_key_env", "qa_k": "k",
               "qa_concurrency": "concurrency", "qa_retries": "retries",
               "qa_timeout": "timeout", "qa_max_tokens": "max_tokens", "qa_judge": "judge",
               "qa_reply_log": "reply_log"}


def qa_config(**flat: Any) -> QAConfig | None:
    """A :class:`QAConfig` from the CLI's flat names (``answerer_url=``, ``qa_k=``, ...);
    ``None`` without ``answerer_url`` (QA off)."""
    unknown = sorted(set(flat) - set(QA_KEYWORDS))
    if unknown:
        raise TypeError(f"unknown QA option(s) {unknown}; known: {sorted(QA_KEYWORDS)}")
    given = {QA_KEYWORDS[k]: v for k, v in flat.items() if v is not None}
    if not given.get("answerer_url"):
        return None
    return QAConfig(**given)


@dataclass
class EvalConfig:
    """Everything a run depends on (written to ``config.json``)."""

    dataset: str = "locomo"
    data: str | None = None
    framework: str = "plain"
    units: str | None = None  # None: the dataset's first unit kind (turns, paragraphs)
    k: tuple[int, ...] = (10, 20, 50)
    policies: tuple[str, ...] = ("native", DEFAULT_POLICY)
    pool: int = 200
    budget_tokens: tuple[int, ...] = ()  # complete coverage at equal tokens (token_budgets)
    out: str | None = None
    categories: list[str] | None = None
    limit: int | None = None
    groups: list[str] | None = None
    split: list[str] | None = None  # questions of these splits only (meta["split"])
    embedder: Any = "minilm"  # a name for get_embedder, "openai:MODEL", or an Embedder instance
    embedder_threads: int | None = None
    embedder_options: dict = field(default_factory=dict)  # openai:MODEL (url, key_env, ...)
    mem0_config: str | None = None  # your own Mem0 store, read-only (--dataset custom)
    embed_batch: int = 64
    native_order: str = "dense"
    backend_options: dict = field(default_factory=dict)
    # a framework store's pools get the benchmark's own session ids and speakers on top of what
    # the adapter hands over (labelled in the reports; the plain store's signals are its own)
    dataset_signals: bool = False
    policy_options: dict = field(default_factory=dict)
    cache_dir: str | None = None
    no_cache: bool = False
    threads: int | None = None
    latency_sample: int = 200
    bootstrap: int = 2000
    seed: int = 0
    batch: int = 256
    prefix: bool = True
    progress: bool = True
    plots: bool = True
    download: bool = True
    qa: QAConfig | None = None  # end-to-end QA, off unless given

    def validate(self) -> None:
        if isinstance(self.k, (int, np.integer)):
            self.k = (int(self.k),)
        if isinstance(self.policies, str):
            self.policies = (self.policies,)
        if isinstance(self.categories, (str, int)):
            self.categories = [str(self.categories)]
        if isinstance(self.groups, str):
            self.groups = [self.groups]
        if isinstance(self.split, str):
            self.split = [x for x in self.split.split(",") if x.strip()]
        ks = tuple(int(x) for x in self.k)
        if not ks or any(x < 1 for x in ks):
            raise ValueError(f"K values must be >= 1, got {list(self.k)}")
        self.k = tuple(sorted(set(ks)))
        _check_int("--pool", self.pool, 1, "candidates the store returns per question; default 200")
        from .token_budgets import check_budgets

        self.budget_tokens = check_budgets(self.budget_tokens or ())
        if self.pool < self.k[-1]:
            raise ValueError(
                f"--pool {self.pool} is below --k {self.k[-1]}: every policy would keep the whole "
                "pool, so every difference from native would be zero; give --pool of at least "
                f"{self.k[-1]} (the default 200 is the measured setting) or a smaller --k")
        if self.limit is not None:
            _check_int("--limit", self.limit, 1, "the first N selected questions; leave it out "
                       "for all")
        if not self.policies:
            raise ValueError("give at least one policy")
        pols = list(dict.fromkeys(self.policies))
        if BASELINE not in pols:
            pols.insert(0, BASELINE)  # the w/o baseline every comparison needs
        else:
            pols.remove(BASELINE)
            pols.insert(0, BASELINE)
        self.policies = tuple(pols)
        if self.qa is not None:
            if not isinstance(self.qa, QAConfig):
                raise TypeError(f"qa must be a QAConfig, got {type(self.qa).__name__}")
            self.qa.validate(self.k)
        if self.dataset_signals and (self.framework in ("plain", "builtin") or self.mem0_config):
            raise ValueError("--dataset-signals applies to a framework's store built from the "
                             "benchmark (--framework mem0 / lightmem / simplemem / memorybank / "
                             "langgraph / llamaindex); the plain store and your own Mem0 store "
                             "hand over their own signals")
        if int(self.batch) < 1:
            raise ValueError("batch must be >= 1")
        _check_int("--latency-sample", self.latency_sample, 0, "questions timed one by one; "
                   "0 turns the timing off")
        _check_int("--bootstrap", self.bootstrap, 1, "bootstrap resamples for the 95% CI; the "
                   "default is 2000")
        _check_int("--seed", self.seed, 0, "the bootstrap's random seed", high=2**32 - 1)
        for flag, value in (("--threads", self.threads), ("--embed-threads",
                                                          self.embedder_threads)):
            if value is not None:
                _check_int(flag, value, 1, "leave it out to use all cores")
        if self.out is not None and not str(self.out).strip():
            raise ValueError("--out is empty: give the run folder (e.g. --out runs/demo), or "
                             "leave --out out for runs/eval-<dataset>-<framework>-<time>")


def _check_int(flag: str, value: Any, low: int, meaning: str, *, high: int | None = None) -> None:
    """``ValueError`` naming ``flag`` unless ``value`` is an integer in ``[low, high]``."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not ok or value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"from {low} to {high}"
        raise ValueError(f"{flag} must be an integer {bound} ({meaning}), got {value!r}")


def _log(cfg: EvalConfig, msg: str) -> None:
    if cfg.progress:
        print(msg, file=sys.stderr, flush=True)



# --------------------------------------------------------------------------------------------
# Selection helpers
# --------------------------------------------------------------------------------------------

def parse_policy(spec: str) -> tuple[str, dict]:
    """``"NAME"`` or ``"NAME:KEY=VALUE,KEY=VALUE"`` -> (selector name, options).

    Values are read as JSON when they parse (numbers, true/false, lists), else kept as strings,
    so one run can compare variants of a policy: ``mempursuit:ridge=1e-8``. The whole spec is
    the policy's label in every output.
    """
    name, sep, rest = spec.partition(":")
    name = name.strip()
    if not name:
        raise ValueError(f"bad policy {spec!r}")
    opts: dict[str, Any] = {}
    if sep:
        for item in filter(None, (x.strip() for x in rest.split(","))):
            key, eq, raw = item.partition("=")
            if not eq or not key.strip():
                raise ValueError(f"bad policy option {item!r} in {spec!r} (want KEY=VALUE)")
            try:
                opts[key.strip()] = json.loads(raw)
            except json.JSONDecodeError:
                opts[key.strip()] = raw
    return name, opts


def _check_policy_options(label: str, name: str, given: dict, accepted: list[str] | None) -> None:
    """``ValueError`` naming the policy, the first option not in ``accepted`` and those that are."""
    from mempursuit_core.plugins import did_you_mean

    unknown = [k for k in given if accepted is not None and k not in accepted]
    if unknown and accepted:
        raise ValueError(
            f"policy {label!r}: {name} has no option {unknown[0]!r}"
            f"{did_you_mean(unknown[0], accepted)}; it accepts "
            f"{', '.join(accepted)} (write {name}:KEY=VALUE with one of those, or drop "
            "the option)")
    if unknown:
        raise ValueError(f"policy {label!r}: {name} takes no options (got {unknown[0]!r}); "
                         f"give it as plain {name!r}")


def _check_option_values(label: str, factory: Callable, given: dict) -> None:
    """``ValueError`` for an option whose default is a number given a value that is not one
    (``mmr:lam=abc``), naming the policy, the option and what is expected."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return
    for key, value in given.items():
        default = params[key].default if key in params else None
        number = (int, float)
        if (isinstance(default, number) and not isinstance(default, bool)
                and (not isinstance(value, number) or isinstance(value, bool))):
            raise ValueError(
                f"policy {label!r}: option {key!r} must be a number (default {default!r}), got "
                f"{value!r}; write e.g. {label.partition(':')[0]}:{key}={default!r}")


def _make_selectors(cfg: EvalConfig) -> tuple[dict[str, Any], dict[str, str]]:
    """Selectors by label, and each label's registered selector name.

    Every policy is built here, before any data is read or embedded, so a bad option fails at
    once: an option the selector does not take is a ``ValueError`` naming the policy, the option
    and the options it accepts (read from the factory's / class's signature); a bad value is a
    ``ValueError`` naming the policy.
    """
    from mempursuit_core import get_selector
    from mempursuit_core.builtins import FACTORIES as BUILTIN_FACTORIES
    from mempursuit_core.plugins import list_selector_factories

    out, names = {}, {}
    for label in cfg.policies:
        name, opts = parse_policy(label)
        given = {**cfg.policy_options.get(name, {}), **cfg.policy_options.get(label, {}), **opts}
        opts = dict(given)
        if cfg.threads is not None and name in ("mempursuit", "mempursuit-adaptive"):
            opts.setdefault("threads", cfg.threads)
        accepted = None
        if given:  # built-in names first, like get_selector (no plugin loading for those)
            factory = BUILTIN_FACTORIES.get(name) or list_selector_factories().get(name)
            if factory is not None:
                accepted = factory_options(factory[0])
        # A known signature is checked before building; a ``**options`` factory is built and
        # its TypeError explained.
        if accepted is not None:
            _check_policy_options(label, name, given, accepted)
            _check_option_values(label, factory[0], given)
        try:
            out[label] = get_selector(name, **opts)
        except (TypeError, ValueError) as exc:
            if isinstance(exc, TypeError):
                _check_policy_options(label, name, given, accepted)
            hint = (f"; {name} accepts " + (", ".join(accepted) if accepted else "no options")
                    if accepted is not None else "")
            raise ValueError(f"policy {label!r}: bad option ({exc}){hint}") from None
        names[label] = name
    return out, names


def _is_nested(name: str, selector: Any, cfg: EvalConfig) -> bool:
    if not cfg.prefix:
        return False
    return bool(getattr(selector, "nested", False))



# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------

def _versions() -> dict:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    for mod in ("mempursuit_core", "numpy", "numba", "onnxruntime", "tokenizers"):
        try:
            m = sys.modules.get(mod) or importlib.import_module(mod)
            out[mod] = getattr(m, "__version__", "?")
        except ImportError:
            out[mod] = None
    return out


def _cache_root(cfg: EvalConfig) -> Path | None:
    if cfg.no_cache:
        return None
    return Path(cfg.cache_dir).expanduser() if cfg.cache_dir else default_cache_dir()



# --------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------

def run_eval(config: EvalConfig | None = None, /, **kwargs: Any) -> dict:
    """Run the paired evaluation and return the summary (also written under ``out``).

    Call with an :class:`EvalConfig` or its fields as keywords, e.g.
    ``run_eval(dataset="locomo", k=(10, 20), policies=("native", "mempursuit"), out="runs/x")``.
    QA goes in ``qa=QAConfig(...)``; the CLI's flat names (``answerer_url=``, ``model=``,
    ``qa_k=``, ...) are accepted as keywords too. The stages are in :mod:`mempursuit_eval.stages`.

    Returns
    -------
    dict
        ``results[policy][K]["overall" | "by_category"][metric]`` (recall / coverage in
        percent), ``paired[policy][K]...`` (differences vs ``native`` with bootstrap CI and
        exact test), ``latency_ms[policy][K]``, ``timing_s`` and the run's description.
    """
    flat = {k: kwargs.pop(k) for k in list(kwargs) if k in QA_KEYWORDS}
    if flat:
        if kwargs.get("qa") is not None:
            raise TypeError(f"give QA either as qa=QAConfig(...) or as {sorted(flat)}, not both")
        kwargs["qa"] = qa_config(**flat)
    if config is None:
        config = EvalConfig(**kwargs)
    elif kwargs:
        config = dataclasses.replace(config, **kwargs)
    cfg = config
    cfg.validate()
    timing: dict[str, float] = {}
    t_start = time.perf_counter()
    log = lambda m: _log(cfg, m)  # noqa: E731

    selectors, base_names = _make_selectors(cfg)  # unknown names / options fail before any work
    check_framework(cfg.framework)
    # Where the results and the cache go is checked before the data is read: a bad --out or a
    # read-only cache must not be found after the embedding.
    if cfg.out:
        from .report import check_out_dir

        check_out_dir(Path(cfg.out))
    cache_root = _cache_root(cfg)
    if cache_root is not None:
        check_cache_dir(cache_root)

    t = time.perf_counter()
    data = load_data(cfg, cache_root)
    timing["load"] = time.perf_counter() - t

    from .openai_embed import cached_embedder, make_embedder

    if isinstance(cfg.embedder, str):
        inner = make_embedder(cfg.embedder, threads=cfg.embedder_threads, **cfg.embedder_options)
    else:  # an Embedder instance (Python API)
        inner = cfg.embedder
    embedder = cached_embedder(inner, cache_root)  # reads the shards: a corrupt one fails here
    ds, questions = data.dataset, data.questions
    for note in ds.notes:
        log(f"note: {note[:500]}")
    log(f"{ds.name}: {len(questions)} questions, {len(ds.units)} units ({ds.unit_kind}) in "
        f"{len(ds.groups())} group(s)" + (f"; left out: {_describe(data.left_out)}"
                                          if data.left_out else ""))
    t = time.perf_counter()
    with open_store(cfg, ds.units, embedder, cache_root, log=log) as opened:
        timing["build"] = time.perf_counter() - t

        t = time.perf_counter()
        qvecs = embed_questions(embedder, questions, batch_size=cfg.embed_batch,
                                progress=cfg.progress)
        timing["embed_queries"] = time.perf_counter() - t

        nested = {n: _is_nested(base_names[n], s, cfg) for n, s in selectors.items()}
        records: list[dict] = []
        token_counts: dict[str, int] = {}
        latency_pools = []
        select_time = {n: 0.0 for n in selectors}
        t_pool = 0.0
        t = time.perf_counter()
        with Progress(cfg.progress, len(questions), "selecting") as bar:
            for start in range(0, len(questions), cfg.batch):
                chunk = questions[start : start + cfg.batch]
                tp = time.perf_counter()
                pools = collect_pools(opened.store, chunk, qvecs[start : start + cfg.batch],
                                      cfg.pool)
                t_pool += time.perf_counter() - tp
                if len(latency_pools) < cfg.latency_sample:
                    latency_pools.extend(pools[: cfg.latency_sample - len(latency_pools)])
                # with token budgets every order is also read over the whole pool (K = P)
                ks = cfg.k + ((cfg.pool,) if cfg.budget_tokens else ())
                chosen = apply_policies(selectors, pools, ks, nested=nested,
                                        qids=[q.qid for q in chunk])
                for name, s in chosen.seconds.items():
                    select_time[name] += s
                scored = score(chunk, pools, chosen, data.units_by_uid, cfg.k)
                if cfg.budget_tokens:
                    add_token_budgets(
                        scored, {n: per_k[cfg.pool] for n, per_k in chosen.orders.items()},
                        [[data.units_by_uid[u] for u in list(p.items) + chosen.extra[i]]
                         for i, p in enumerate(pools)], cfg.budget_tokens, token_counts)
                records += scored
                bar.update(len(chunk))
        timing["pools"] = t_pool
        timing["select"] = sum(select_time.values())
        timing["select_by_policy"] = select_time
        timing["select_loop"] = time.perf_counter() - t

        t = time.perf_counter()
        latency = (measure_latency(selectors, latency_pools, cfg.k)
                   if cfg.latency_sample > 0 else {})
        timing["latency"] = time.perf_counter() - t

        qa_info = None
        if cfg.qa is not None:
            from .qa_runner import run_qa

            t = time.perf_counter()
            qa_info = run_qa(cfg.qa, questions, records, data.units_by_uid, cache_root,
                             ks=cfg.k, progress=cfg.progress, dataset=cfg.dataset)
            timing["qa"] = time.perf_counter() - t

        summary = summarise(cfg, data, records, latency, qa_info, inner.name)
        if cfg.budget_tokens:
            summary["token_budgets"] = summarise_token_budgets(
                records, list(selectors), cfg.budget_tokens, baseline=BASELINE,
                n_boot=cfg.bootstrap, seed=cfg.seed)
        for w in summary["warnings"]:
            log(f"warning: {w}")
        unscored = summary["unscored_ids"]
        if unscored:
            log(f"{len(unscored)} selected question(s) have no gold evidence in the store "
                f"and are not scored: {', '.join(unscored[:10])}"
                + (" ..." if len(unscored) > 10 else "") + " (all ids in summary.json)")
        store = opened.store
    timing["total"] = time.perf_counter() - t_start
    summary["timing_s"] = timing
    summary["embedding_cache"] = {"hits": embedder.hits, "misses": embedder.misses,
                                  "dir": str(embedder.cache.dir) if embedder.cache.dir else None}
    if cfg.out:
        write(cfg, summary, records, _config_dict(cfg, ds, embedder, store), log=log)
    return summary


def _describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {c}" for c, n in sorted(counts.items(), key=lambda x: -x[1]))



def _config_dict(cfg: EvalConfig, ds: Dataset, embedder: CachedEmbedder, store) -> dict:
    d = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    d["qa"] = dataclasses.asdict(cfg.qa) if cfg.qa is not None else None
    if not isinstance(cfg.embedder, str):
        d["embedder"] = repr(cfg.embedder)
    d["k"] = list(cfg.k)
    d["budget_tokens"] = list(cfg.budget_tokens)
    d["policies"] = list(cfg.policies)
    d.update({
        "dataset_source": ds.source,
        "dataset_notes": ds.notes,
        "n_units": len(ds.units),
        "n_groups": len(ds.groups()),
        "embedder_name": embedder.name,
        "embedder_fingerprint": embedder.fingerprint,
        "embedder_dim": embedder.dim,
        "store": getattr(store, "name", cfg.framework),
        "cache_dir": str(_cache_root(cfg)) if _cache_root(cfg) else None,
        "versions": _versions(),
        "argv": sys.argv,
        "cwd": os.getcwd(),
    })
    return d
