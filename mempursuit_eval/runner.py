"""The paired with/without evaluation: one store, one pool per question, every policy on it.

For each question the store returns its native candidate pool (``pool`` units, the native
order); every policy reorders that same pool and keeps ``K`` units; metrics are computed on
what each policy keeps, and every policy is compared with ``native`` (the "w/o" baseline: the
pool's first ``K``) question by question. Only the order differs between policies.

Selectors whose answers are nested (the ``K``-selection is the first ``K`` of any larger
selection: those with a true ``nested`` attribute, e.g. ``native``, ``mempursuit``,
``mempursuit-adaptive``, ``mmr`` and the default ``centered-fusion``) are run once per question at the largest ``K`` and prefixes are
taken; adaptive stopping is prefix-safe because its stop rule does not depend on ``K`` (the
context at ``K`` is every pick up to the stop, capped at ``K``). Other selectors run once per
``K``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import inspect
import json
import logging
import math
import os
import platform
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mempursuit_core import DEFAULT_POLICY

from .base import MemoryUnit, Pool
from .cache import CachedEmbedder, check_cache_dir, encode_with_progress, safe_filename
from .datasets import Dataset, Question, default_cache_dir, load_dataset, select_questions
from .metrics import (BINARY_METRICS, LONGMEMEVAL_NAMES, PERCENT_METRICS, paired_comparison,
                      selection_metrics)
from .progress import Progress

__all__ = ["EvalConfig", "run_eval", "build_backend", "parse_policy",
           "BASELINE"]

BASELINE = "native"
RETRIEVAL_METRICS = ("session_recall", "complete_coverage", "turn_recall", "turn_coverage",
                     "replaced", "size", "session_recall_any", "session_ndcg_any",
                     "turn_recall_any", "turn_ndcg_any")
PAIRED_METRICS = ("session_recall", "complete_coverage", "turn_recall", "turn_coverage")
BUILT_MARKER = ".mempursuit-built"


@dataclass
class EvalConfig:
    """Everything a run depends on (written to ``config.json``)."""

    dataset: str = "locomo"
    data: str | None = None
    framework: str = "plain"
    units: str = "turns"
    k: tuple[int, ...] = (10, 20, 50)
    policies: tuple[str, ...] = ("native", DEFAULT_POLICY)
    pool: int = 200
    out: str | None = None
    categories: list[str] | None = None
    limit: int | None = None
    groups: list[str] | None = None
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
    # end-to-end QA (off unless answerer_url is given)
    answerer_url: str | None = None
    model: str | None = None
    judge_url: str | None = None
    judge_model: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    qa_k: tuple[int, ...] | None = None
    qa_concurrency: int = 8
    qa_retries: int = 5
    qa_timeout: float = 120.0
    qa_max_tokens: int | None = None

    def validate(self) -> None:
        if isinstance(self.k, (int, np.integer)):
            self.k = (int(self.k),)
        if isinstance(self.policies, str):
            self.policies = (self.policies,)
        if isinstance(self.categories, (str, int)):
            self.categories = [str(self.categories)]
        if isinstance(self.groups, str):
            self.groups = [self.groups]
        if isinstance(self.qa_k, (int, np.integer)):
            self.qa_k = (int(self.qa_k),)
        ks = tuple(int(x) for x in self.k)
        if not ks or any(x < 1 for x in ks):
            raise ValueError(f"K values must be >= 1, got {list(self.k)}")
        self.k = tuple(sorted(set(ks)))
        _check_int("--pool", self.pool, 1, "candidates the store returns per question; default 200")
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
        if self.qa_k is not None:
            bad = [x for x in self.qa_k if int(x) not in self.k]
            if bad:
                raise ValueError(f"--qa-k {bad} not among --k {list(self.k)}")
            self.qa_k = tuple(sorted({int(x) for x in self.qa_k}))
        if self.answerer_url and not self.model:
            raise ValueError("--answerer-url needs --model")
        if self.dataset_signals and (self.framework in ("plain", "builtin") or self.mem0_config):
            raise ValueError("--dataset-signals applies to a framework's store built from the "
                             "benchmark (--framework mem0 / lightmem / simplemem / memorybank); "
                             "the plain store and your own Mem0 store hand over their own signals")
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
# Stores
# --------------------------------------------------------------------------------------------

def build_backend(framework: str, *, native_order: str = "dense", options: dict | None = None):
    """The store for ``--framework``: ``plain`` (built in) or a framework's store from
    :mod:`mempursuit_eval.backends` (called with ``options``)."""
    options = dict(options or {})
    if framework in ("plain", "builtin"):
        from .store import PlainStore

        _check_backend_options(framework, PlainStore, options)
        return PlainStore(native=native_order, **options)
    from .backends import backend_factory

    spec = check_framework(framework)
    if spec is not None and not spec.framework_installed():
        from mempursuit_core.plugins import AdapterNotInstalledError

        raise AdapterNotInstalledError(
            f"the {framework} store needs the {spec.framework!r} package, which is not "
            f"installed: {spec.hint}")
    factory = backend_factory(framework)
    if framework == "mem0" and "config" in options:  # your own Mem0 store, read-only
        from .backends.mem0_existing import ExistingMem0Backend as factory
    if native_order != "dense":
        options.setdefault("native", native_order)
    _check_backend_options(framework, factory, options)
    return factory(**options)


#: Loggers whose WARNING / INFO lines are the framework talking to itself while the harness
#: builds and reads its own store (e.g. Mem0's "Resetting all memories" on the harness's fresh
#: store, or its notes about optional packages): held back to ERROR during a run.
FRAMEWORK_LOGGERS = {"mem0": ("mem0",)}


def _hold_back_framework_logs(framework: str) -> Callable[[], None]:
    """Raise the framework's loggers (:data:`FRAMEWORK_LOGGERS`) to ERROR; returns the function
    that restores their levels."""
    loggers = [logging.getLogger(name) for name in FRAMEWORK_LOGGERS.get(framework, ())]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(max(lg.getEffectiveLevel(), logging.ERROR))

    def restore() -> None:
        for lg, level in zip(loggers, saved):
            lg.setLevel(level)
    return restore


def check_framework(framework: str):
    """The adapter spec of ``framework`` (``None`` for the built-in ``plain`` store, or for a
    store registered with no adapter of its name); a name with no store registered through the
    ``register_eval_backends`` hook is an ``UnknownNameError`` listing ``plain`` and every store."""
    if framework in ("plain", "builtin"):
        return None
    from mempursuit_core.plugins import UnknownNameError, list_adapters
    from .backends import list_backends

    stores = list_backends()
    if framework not in stores:
        raise UnknownNameError("framework", framework, ["plain", *stores])
    return list_adapters().get(framework)


def _check_backend_options(framework: str, factory: Callable, options: dict) -> None:
    """``ValueError`` naming the first ``--backend-opt`` the store's factory does not take and
    the options it does (read from its signature)."""
    accepted = _factory_options(factory)
    if accepted is None:
        return
    accepted = [a for a in accepted if a != "self"]
    for key in options:
        if key not in accepted:
            raise ValueError(
                f"--backend-opt {key}: the {framework} store has no option {key!r}; it accepts "
                f"{', '.join(accepted) or 'no options'} (fix the name or drop the option)")


def _store_key(store, cfg: EvalConfig, embedder, units: Sequence[MemoryUnit]) -> str:
    """Content hash of everything a built store depends on (hashed unit by unit)."""
    h = hashlib.sha256()
    head = (getattr(store, "name", cfg.framework), embedder.fingerprint, cfg.native_order,
            sorted((str(k), repr(v)) for k, v in cfg.backend_options.items()))
    h.update(repr(head).encode())
    for u in units:
        h.update(repr((u.uid, u.text, u.group, u.session_id, u.source_ids, u.timestamp,
                       u.speaker)).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:20]


def _accepts(fn: Callable, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


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


def _factory_options(factory: Callable) -> list[str] | None:
    """The keyword options a selector factory (a class or a function) accepts, read from its
    signature; ``None`` when it takes ``**options`` (then they cannot be known in advance)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params if p.kind in kinds]


def _check_policy_options(label: str, name: str, given: dict, accepted: list[str] | None) -> None:
    """``ValueError`` naming the policy, the first option not in ``accepted`` and those that are."""
    unknown = [k for k in given if accepted is not None and k not in accepted]
    if unknown and accepted:
        raise ValueError(
            f"policy {label!r}: {name} has no option {unknown[0]!r}; it accepts "
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
                accepted = _factory_options(factory[0])
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


def _check_order(order: Any, P: int, k: int, policy: str, qid: str) -> np.ndarray:
    from mempursuit_core.validation import checked_order

    try:
        return checked_order(order, k, P, policy).astype(np.int64, copy=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{exc} (question {qid}, K={k}, pool of {P})") from None


def _select(selector, pools: list[Pool], k: int):
    queries = [p.query_vector for p in pools]
    cands = [p.vectors for p in pools]
    scores = [p.native_scores for p in pools]
    signals = [p.signals for p in pools]
    return selector.select_batch(queries, cands, k, native_scores=scores, signals=signals)


def _latency(selector, pools: list[Pool], k: int, repeats: int = 1) -> dict:
    if not pools:
        return {"median": math.nan, "p95": math.nan, "n": 0}
    p0 = pools[0]
    selector.select(p0.query_vector, p0.vectors, k, native_scores=p0.native_scores,
                    signals=p0.signals)  # warm-up (compilation, caches)
    times = []
    for p in pools:
        best = math.inf
        for _ in range(repeats):
            t = time.perf_counter()
            selector.select(p.query_vector, p.vectors, k, native_scores=p.native_scores,
                            signals=p.signals)
            best = min(best, time.perf_counter() - t)
        times.append(best * 1e3)
    arr = np.asarray(times)
    return {"median": float(np.median(arr)), "p95": float(np.percentile(arr, 95)),
            "mean": float(arr.mean()), "n": int(arr.size)}


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


def _mean(xs: list) -> float | None:
    vals = [x for x in xs if x is not None]
    return float(np.mean(vals)) if vals else None


def _aggregate(rows: list[dict], metrics: Sequence[str]) -> dict:
    out: dict[str, Any] = {}
    for m in metrics:
        vals = [r[m] for r in rows if r.get(m) is not None]
        if not vals:
            out[m] = None
            continue
        v = float(np.mean(vals))
        out[m] = v * 100.0 if m in PERCENT_METRICS else v
        if m in ("turn_recall", "qa_accuracy"):
            out[f"n_{m.split('_')[0]}"] = len(vals)
    out["n"] = len(rows)
    return out


def run_eval(config: EvalConfig | None = None, /, **kwargs: Any) -> dict:
    """Run the paired evaluation and return the summary (also written under ``out``).

    Call with an :class:`EvalConfig` or its fields as keywords, e.g.
    ``run_eval(dataset="locomo", k=(10, 20), policies=("native", "mempursuit"), out="runs/x")``.

    Returns
    -------
    dict
        ``results[policy][K]["overall" | "by_category"][metric]`` (recall / coverage in
        percent), ``paired[policy][K]...`` (differences vs ``native`` with bootstrap CI and
        exact test), ``latency_ms[policy][K]``, ``timing_s`` and the run's description.
    """
    if config is None:
        config = EvalConfig(**kwargs)
    elif kwargs:
        config = dataclasses.replace(config, **kwargs)
    cfg = config
    cfg.validate()
    timing: dict[str, float] = {}
    t_start = time.perf_counter()

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

    # 1. data --------------------------------------------------------------------------------
    t = time.perf_counter()
    if cfg.mem0_config:  # the questions' memories are the store's (backends.mem0_existing)
        from .backends.mem0_existing import load_questions_for_store

        ds_full = load_questions_for_store(cfg)
    else:
        ds_full = load_dataset(cfg.dataset, cfg.data, units=cfg.units,
                               cache_dir=cache_root or default_cache_dir(), download=cfg.download)
    questions = select_questions(ds_full, cfg.categories, cfg.limit, cfg.groups)
    if not questions:
        raise ValueError("no questions selected (check --categories / --groups / --limit)")
    ds = ds_full.subset(questions)
    units_by_uid: dict[str, MemoryUnit] = {u.uid: u for u in ds.units}
    missing_groups = sorted({q.group for q in questions} - {u.group for u in ds.units})
    if missing_groups:
        raise ValueError(f"questions ask groups with no units: {missing_groups[:5]}")
    timing["load"] = time.perf_counter() - t

    # 2. embedder and store --------------------------------------------------------------------
    from .openai_embed import cached_embedder, make_embedder

    if isinstance(cfg.embedder, str):
        inner = make_embedder(cfg.embedder, threads=cfg.embedder_threads, **cfg.embedder_options)
    else:  # an Embedder instance (Python API)
        inner = cfg.embedder
    embedder = cached_embedder(inner, cache_root)  # reads the shards: a corrupt one fails here
    for note in ds.notes:
        _log(cfg, f"note: {note[:500]}")
    left_out = _left_out(ds_full, questions)
    _log(cfg, f"{ds.name}: {len(questions)} questions, {len(ds.units)} {ds.unit_kind} units in "
              f"{len(ds.groups())} group(s)" + (f"; left out: {_describe(left_out)}" if left_out
                                                else ""))
    store_options = dict(cfg.backend_options)
    if cfg.dataset_signals:
        store_options["dataset_signals"] = True
    if cfg.mem0_config:
        store_options["config"] = cfg.mem0_config
    restore_logs = _hold_back_framework_logs(cfg.framework)
    try:
        store = build_backend(cfg.framework, native_order=cfg.native_order,
                              options=store_options)
    except BaseException:
        restore_logs()
        raise
    tmp_ctx = None
    try:
        t = time.perf_counter()
        loader = getattr(store, "load_existing", None)
        if cache_root is not None and loader is not None:
            # A store that can reopen its own build lives in the cache, keyed by content hash.
            store_key = _store_key(store, cfg, embedder, ds.units)
            workdir = cache_root / "stores" / f"{safe_filename(cfg.framework, 60, 'store')}-{store_key}"
        else:
            tmp_ctx = tempfile.TemporaryDirectory(prefix="mempursuit-store-")
            workdir = Path(tmp_ctx.name)
        reused = False
        if loader is not None and (workdir / BUILT_MARKER).exists():
            reused = bool(loader(ds.units, embedder=embedder, workdir=workdir))
            if reused:
                _log(cfg, f"reusing the built store in {workdir}")
        if not reused:
            if tmp_ctx is None and workdir.exists():
                shutil.rmtree(workdir)  # an interrupted or unusable earlier build
            workdir.mkdir(parents=True, exist_ok=True)
            n_new = embedder.missing([u.text for u in ds.units])
            desc = f"building {getattr(store, 'name', cfg.framework)} store"
            _log(cfg, f"{desc}: {len(ds.units)} units, {n_new} new texts to embed")
            with Progress(cfg.progress, len(ds.units), desc) as bar:
                store.build(ds.units, embedder=embedder, workdir=workdir, progress=bar.update)
            (workdir / BUILT_MARKER).write_text("ok\n")
        timing["build"] = time.perf_counter() - t

        # 3. queries ------------------------------------------------------------------------------
        t = time.perf_counter()
        qtexts = [q.text for q in questions]
        with Progress(cfg.progress, len(qtexts), "embedding questions") as bar:
            qvecs = encode_with_progress(embedder, qtexts, bar.update, batch_size=cfg.embed_batch)
        timing["embed_queries"] = time.perf_counter() - t

        # 4. selection ----------------------------------------------------------------------------
        kmax = max(cfg.k)
        nested = {n: _is_nested(base_names[n], s, cfg) for n, s in selectors.items()}
        pool_kw = _accepts(store.pool, "query_vector")
        records: list[dict] = []
        latency_pools: list[Pool] = []
        select_time = {n: 0.0 for n in selectors}
        t = time.perf_counter()
        t_pool = 0.0
        with Progress(cfg.progress, len(questions), "selecting") as bar:
            for start in range(0, len(questions), cfg.batch):
                chunk = questions[start : start + cfg.batch]
                tp = time.perf_counter()
                pools = []
                for i, q in enumerate(chunk):
                    if pool_kw:
                        p = store.pool(q.group, q.text, cfg.pool, query_vector=qvecs[start + i])
                    else:
                        p = store.pool(q.group, q.text, cfg.pool)
                    if len(p.uids) != len(p.vectors):
                        raise ValueError(f"store returned {len(p.uids)} ids but {len(p.vectors)} "
                                         f"vectors for {q.qid}")
                    pools.append(p)
                t_pool += time.perf_counter() - tp
                if len(latency_pools) < cfg.latency_sample:
                    latency_pools.extend(pools[: cfg.latency_sample - len(latency_pools)])
                chosen: dict[str, dict[int, list[np.ndarray]]] = {}
                stopped: dict[str, list[str | None]] = {}
                for name, sel in selectors.items():
                    ts = time.perf_counter()
                    per_k: dict[int, list[np.ndarray]] = {}
                    if nested[name]:
                        res = _select(sel, pools, kmax)
                        orders = [_check_order(r, len(p.uids), kmax, name, q.qid)
                                  for r, p, q in zip(res, pools, chunk)]
                        for k in cfg.k:
                            per_k[k] = [o[:k] for o in orders]
                        stopped[name] = [getattr(r, "stopped", None) for r in res]
                    else:
                        for k in cfg.k:
                            res = _select(sel, pools, k)
                            per_k[k] = [_check_order(r, len(p.uids), k, name, q.qid)
                                        for r, p, q in zip(res, pools, chunk)]
                            stopped[name] = [getattr(r, "stopped", None) for r in res]
                    select_time[name] += time.perf_counter() - ts
                    chosen[name] = per_k
                for i, (q, p) in enumerate(zip(chunk, pools)):
                    records.append(_question_record(q, p, i, chosen, stopped, cfg, units_by_uid))
                bar.update(len(chunk))
        timing["pools"] = t_pool
        timing["select"] = sum(select_time.values())
        timing["select_by_policy"] = select_time
        timing["select_loop"] = time.perf_counter() - t

        # 5. latency ------------------------------------------------------------------------------
        t = time.perf_counter()
        latency = {name: {str(k): _latency(sel, latency_pools, k) for k in cfg.k}
                   for name, sel in selectors.items()} if cfg.latency_sample > 0 else {}
        timing["latency"] = time.perf_counter() - t

        # 6. QA -----------------------------------------------------------------------------------
        qa_info = None
        if cfg.answerer_url:
            from .qa_runner import run_qa

            t = time.perf_counter()
            qa_info = run_qa(cfg, questions, records, units_by_uid, cache_root)
            timing["qa"] = time.perf_counter() - t

        # 7. summary ------------------------------------------------------------------------------
        summary = _summarise(cfg, ds, questions, records, latency, qa_info, inner.name)
        summary["left_out"] = left_out
        for w in summary["warnings"]:
            _log(cfg, f"warning: {w}")
        unscored = [r["qid"] for r in records if not r["metrics"]]
        summary["unscored_ids"] = unscored
        if unscored:
            _log(cfg, f"{len(unscored)} selected question(s) have no gold evidence in the store "
                      f"and are not scored: {', '.join(unscored[:10])}"
                      + (" ..." if len(unscored) > 10 else "") + " (all ids in summary.json)")
    finally:
        try:
            store.close()
        finally:
            restore_logs()
            if tmp_ctx is not None:
                tmp_ctx.cleanup()
    timing["total"] = time.perf_counter() - t_start
    summary["timing_s"] = timing
    summary["embedding_cache"] = {"hits": embedder.hits, "misses": embedder.misses,
                                  "dir": str(embedder.cache.dir) if embedder.cache.dir else None}
    if cfg.out:
        from .report import write_outputs

        write_outputs(Path(cfg.out), cfg, summary, records, _config_dict(cfg, ds, embedder, store),
                      log=lambda m: _log(cfg, m))
    return summary


def _question_record(q: Question, p: Pool, i: int, chosen: dict, stopped: dict,
                     cfg: EvalConfig, units: dict[str, MemoryUnit]) -> dict:
    pool_units = []
    for uid in p.uids:
        u = units.get(uid)
        if u is None:
            raise ValueError(f"store returned unknown unit id {uid!r} for {q.qid}")
        pool_units.append(u)
    kmax = max(cfg.k)
    rec: dict[str, Any] = {
        "qid": q.qid, "group": q.group, "category": q.category, "question": q.text,
        "answer": q.answer, "gold_sessions": list(q.gold_sessions),
        "gold_turns": list(q.gold_turns), "pool": list(p.uids), "pool_size": len(p.uids),
        "selections": {}, "metrics": {},
    }
    if q.unresolved_evidence:
        rec["unresolved_evidence"] = list(q.unresolved_evidence)
    for name, per_k in chosen.items():
        top = per_k[kmax][i]
        rec["selections"][name] = {"order": top.tolist(), "stopped": stopped[name][i]}
        if not q.gold_sessions:
            continue
        rec["metrics"][name] = {}
        for k in cfg.k:
            o = per_k[k][i]
            sel = [pool_units[j] for j in o]
            native = [u.uid for u in pool_units[:k]]
            m = selection_metrics(
                [u.session_id for u in sel], [s for u in sel for s in u.source_ids],
                q.gold_sessions, q.gold_turns,
                selected_uids=[u.uid for u in sel], native_uids=native,
            )
            m["size"] = len(o)
            rec["metrics"][name][str(k)] = m
    # Orders per K only when a selector is not nested (its K-selections are not prefixes).
    for name, per_k in chosen.items():
        if not all(np.array_equal(per_k[k][i], per_k[kmax][i][: len(per_k[k][i])])
                   for k in cfg.k):
            rec["selections"][name]["orders_by_k"] = {str(k): per_k[k][i].tolist() for k in cfg.k}
    return rec


def _left_out(ds: Dataset, questions: list[Question]) -> dict[str, int]:
    """Questions of the dataset not selected, counted by category (e.g. BEAM's abstention)."""
    chosen = {q.qid for q in questions}
    out: dict[str, int] = {}
    for q in ds.questions:
        if q.qid not in chosen:
            out[q.category] = out.get(q.category, 0) + 1
    return out


def _describe(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {c}" for c, n in sorted(counts.items(), key=lambda x: -x[1]))


def signal_source(cfg: EvalConfig) -> str:
    """Where the policies' signals came from, as the reports say it."""
    if cfg.framework in ("plain", "builtin"):
        return "the plain store's own (the dataset's labels are its store)"
    if cfg.dataset_signals:
        return (f"DATASET SIGNALS: what {cfg.framework}'s adapter hands over, with the benchmark's "
                "own session ids and speakers put over them (--dataset-signals)")
    return f"what {cfg.framework}'s adapter hands over (its store's own)"


def _summarise(cfg: EvalConfig, ds: Dataset, questions: list[Question], records: list[dict],
               latency: dict, qa_info: dict | None, embedder_name: str) -> dict:
    scored = [r for r in records if r["metrics"]]
    cats = [c for c in ds.categories if any(r["category"] == c for r in records)]
    cats += sorted({r["category"] for r in records} - set(cats))
    metrics = list(RETRIEVAL_METRICS) + (["qa_accuracy"] if qa_info else [])

    def rows_for(policy: str, k: int, subset: list[dict]) -> list[dict]:
        out = []
        for r in subset:
            row = dict(r["metrics"].get(policy, {}).get(str(k), {}))
            qa = r.get("qa", {}).get(policy, {}).get(str(k))
            if qa is not None:
                row["qa_accuracy"] = float(bool(qa.get("correct")))
            if row:
                out.append(row)
        return out

    results: dict[str, Any] = {}
    paired: dict[str, Any] = {}
    for policy in cfg.policies:
        results[policy] = {}
        for k in cfg.k:
            entry = {"overall": _aggregate(rows_for(policy, k, records), metrics),
                     "by_category": {}}
            for c in cats:
                sub = [r for r in records if r["category"] == c]
                entry["by_category"][c] = _aggregate(rows_for(policy, k, sub), metrics)
            results[policy][str(k)] = entry
    pm = list(PAIRED_METRICS) + (["qa_accuracy"] if qa_info else [])
    mean_pool = float(np.mean([r["pool_size"] for r in records])) if records else 0.0
    warnings = []
    full = [k for k in cfg.k if records and k >= mean_pool]
    if full:
        warnings.append(
            f"K = {', '.join(map(str, full))} is at least the mean pool size ({mean_pool:.1f}): "
            "every policy then keeps (nearly) the whole pool, so those figures are (nearly) "
            "equal and their differences zero; use a smaller --k or a larger --pool")
    for policy in cfg.policies:
        if policy == BASELINE:
            continue
        paired[policy] = {}
        for k in cfg.k:
            entry = {"overall": {}, "by_category": {}}
            for scope, subset in [("overall", records)] + [(c, [r for r in records
                                                                if r["category"] == c])
                                                           for c in cats]:
                stats = {}
                for m in pm:
                    a, b = [], []
                    for r in subset:
                        va = _metric_value(r, policy, k, m)
                        vb = _metric_value(r, BASELINE, k, m)
                        if va is not None and vb is not None:
                            a.append(va)
                            b.append(vb)
                    if a:
                        stats[m] = paired_comparison(a, b, binary=m in BINARY_METRICS,
                                                     n_boot=cfg.bootstrap, seed=cfg.seed)
                if scope == "overall":
                    entry["overall"] = stats
                else:
                    entry["by_category"][scope] = stats
            paired[policy][str(k)] = entry
    return {
        "dataset": ds.name,
        "source": ds.source,
        "units": ds.unit_kind,
        "framework": cfg.framework,
        "native_order": cfg.native_order if cfg.framework in ("plain", "builtin") else None,
        "embedder": embedder_name,
        "pool": cfg.pool,
        "k": list(cfg.k),
        "policies": list(cfg.policies),
        "baseline": BASELINE,
        "categories": cats,
        "n_questions": len(records),
        "n_scored": len(scored),
        "n_without_gold": len(records) - len(scored),
        "mean_pool_size": mean_pool,
        "signals": signal_source(cfg),
        "notes": list(ds.notes),
        "warnings": warnings,
        "metric_names": dict(LONGMEMEVAL_NAMES),
        "bootstrap": cfg.bootstrap,
        "seed": cfg.seed,
        "results": results,
        "paired": paired,
        "latency_ms": latency,
        "qa": qa_info,
    }


def _metric_value(r: dict, policy: str, k: int, metric: str) -> float | None:
    if metric == "qa_accuracy":
        qa = r.get("qa", {}).get(policy, {}).get(str(k))
        return None if qa is None else float(bool(qa.get("correct")))
    m = r["metrics"].get(policy, {}).get(str(k))
    return None if m is None else m.get(metric)


def _config_dict(cfg: EvalConfig, ds: Dataset, embedder: CachedEmbedder, store) -> dict:
    d = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    if not isinstance(cfg.embedder, str):
        d["embedder"] = repr(cfg.embedder)
    d["k"] = list(cfg.k)
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
