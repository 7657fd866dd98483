"""The stages of a paired evaluation run, each a function a test can call.

:func:`mempursuit_eval.run_eval` is these stages in order, and nothing else::

    data = load_data(cfg, cache_root)                  # questions + the memory units they ask about
    with open_store(cfg, data.dataset.units, embedder, cache_root) as opened:  # built or reused
        qvecs = embed_questions(embedder, data.questions)
        for chunk in batches of cfg.batch questions:
            pools = collect_pools(opened.store, chunk, qvecs, cfg.pool)  # the store's own pools
            chosen = apply_policies(selectors, pools, cfg.k, ...)       # each policy's orders
            records += score(chunk, pools, chosen, data.units_by_uid, cfg.k)
        latency = measure_latency(selectors, first pools, cfg.k)
        qa = run_qa(cfg.qa, ...)                        # optional: answers and verdicts
    summary = summarise(cfg, data, records, latency, qa, embedder.name)
    write(cfg, summary, records, config)

Pools are collected, ordered and scored a batch at a time, so a run holds one batch of pool
vectors, not the whole benchmark's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import logging
import math
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from mempursuit_core.signals import PoolSignals

from .base import MemoryUnit, Pool
from .cache import encode_with_progress, safe_filename
from .datasets import (Dataset, DatasetFormatError, Question, default_cache_dir, load_dataset,
                       select_questions)
from .metrics import (BINARY_METRICS, LONGMEMEVAL_NAMES, PERCENT_METRICS, POOL_METRICS,
                      paired_comparison, pool_metrics, selection_metrics)
from .progress import Progress

__all__ = [
    "BASELINE", "Data", "OpenedStore", "Selections", "load_data", "open_store", "build_backend",
    "check_framework", "embed_questions", "collect_pools", "apply_policies", "score",
    "measure_latency", "summarise", "signal_source", "write",
]

BASELINE = "native"
RETRIEVAL_METRICS = ("session_recall", "complete_coverage", "turn_recall", "turn_coverage",
                     "replaced", "size", "session_recall_any", "session_ndcg_any",
                     "turn_recall_any", "turn_ndcg_any")
PAIRED_METRICS = ("session_recall", "complete_coverage", "turn_recall", "turn_coverage")
BUILT_MARKER = ".mempursuit-built"


# --------------------------------------------------------------------------------------------
# 1. Data
# --------------------------------------------------------------------------------------------

@dataclass
class Data:
    """The questions a run scores and the memory units its store is built from.

    Attributes
    ----------
    full : Dataset
        The whole benchmark as loaded (what was left out is counted against it).
    dataset : Dataset
        Only the selected questions and the units of the groups they ask about.
    questions : list of Question
        The selected questions, in file order.
    units_by_uid : dict
        ``dataset.units`` by id.
    left_out : dict
        Questions of ``full`` not selected, counted by category.
    """

    full: Dataset
    dataset: Dataset
    questions: list[Question]
    units_by_uid: dict[str, MemoryUnit]
    left_out: dict[str, int]


def load_data(cfg, cache_root: Path | None) -> Data:
    """Load the benchmark (or the questions of your own Mem0 store) and select the questions.

    Raises
    ------
    ValueError
        When no question is selected, or a selected question asks a group with no units.
    """
    if cfg.mem0_config:  # the questions' memories are the store's (backends.mem0_existing)
        from .backends.mem0_existing import load_questions_for_store

        full = load_questions_for_store(cfg)
    else:
        try:
            full = load_dataset(cfg.dataset, cfg.data, units=cfg.units,
                                cache_dir=cache_root or default_cache_dir(), download=cfg.download)
        except DatasetFormatError as exc:
            if cfg.data and cfg.dataset != "custom":  # your own file read as a benchmark
                raise DatasetFormatError(f"{exc}; for your own data pass --dataset custom "
                                         "(docs/eval-custom-data.md)") from None
            raise
    where = full.source or cfg.data or cfg.dataset  # the file the questions came from
    questions = select_questions(full, cfg.categories, cfg.limit, cfg.groups,
                                 splits=getattr(cfg, "split", None))
    if not questions:
        raise ValueError(f"{where}: no questions selected of {len(full.questions)} "
                         "(check --categories / --groups / --limit)")
    ds = full.subset(questions)
    missing_groups = sorted({q.group for q in questions} - {u.group for u in ds.units})
    if missing_groups:
        raise ValueError(f"{where}: questions ask groups with no units: {missing_groups[:5]}")
    chosen = {q.qid for q in questions}
    splits = getattr(cfg, "split", None)
    splits = {str(x).strip() for x in splits} if splits else None
    left_out: dict[str, int] = {}  # by category, among the splits asked for
    for q in full.questions:
        if q.qid not in chosen and (splits is None or str(q.meta.get("split")) in splits):
            left_out[q.category] = left_out.get(q.category, 0) + 1
    return Data(full, ds, questions, {u.uid: u for u in ds.units}, left_out)


# --------------------------------------------------------------------------------------------
# 2. The store
# --------------------------------------------------------------------------------------------

def build_backend(framework: str, *, native_order: str = "dense", options: dict | None = None):
    """The store registered for ``--framework`` through the ``register_eval_backends`` hook
    (``plain``, the harness's own, included), called with ``options``.

    A store registered as ``NAME+OPTION`` takes over ``NAME`` when ``OPTION`` is given (the
    harness registers ``mem0+config``: your own Mem0 store, read-only). The options are checked
    against the factory's signature and its ``option_constraints`` before it is called.
    """
    from .backends import backend_factory, list_backends

    options = dict(options or {})
    framework = "plain" if framework == "builtin" else framework
    variants = [f"{framework}+{key}" for key in options if "+" not in framework]
    framework = next((v for v in variants if v in list_backends()), framework)
    spec = check_framework(framework)
    if spec is not None and not spec.framework_installed():
        from mempursuit_core.plugins import AdapterNotInstalledError

        raise AdapterNotInstalledError(
            f"the {framework} store needs the {spec.framework!r} package, which is not "
            f"installed: {spec.hint}")
    factory = backend_factory(framework)
    if native_order != "dense":
        options.setdefault("native", native_order)
    _check_backend_options(framework, factory, options)
    return factory(**options)


#: A product asked for by the name it is known by, and the store that reads it: ``{name:
#: (store, why)}`` (a misspelling is found by spelling; these are not misspellings).
RELATED_FRAMEWORKS: dict[str, tuple[str, str]] = {
    "zep": ("graphiti", "Graphiti is the open-source graph engine behind Zep"),
}


def check_framework(framework: str):
    """The adapter spec of ``framework`` (of ``NAME`` for a ``NAME+OPTION`` store; ``None`` for
    the harness's ``plain`` store, or for a store registered with no adapter of its name); a
    name with no store registered through the ``register_eval_backends`` hook is an
    ``UnknownNameError`` listing every store."""
    from mempursuit_core.plugins import UnknownNameError, list_adapters
    from .backends import list_backends

    framework = "plain" if framework == "builtin" else framework
    stores = list_backends()
    if framework not in stores:  # NAME+OPTION stores are internal: not listed
        near, why = RELATED_FRAMEWORKS.get(str(framework).lower(), (None, ""))
        raise UnknownNameError("framework", framework, [n for n in stores if "+" not in n],
                               near=near if near in stores else None, why=why)
    return list_adapters().get(framework.partition("+")[0])


def _check_backend_options(framework: str, factory: Callable, options: dict) -> None:
    """``ValueError`` naming the first ``--backend-opt`` the store's factory does not take and
    the options it does (read from its signature), or the first whose value its
    ``option_constraints`` (``{option: allowed values}``) rule out."""
    allowed = getattr(factory, "option_constraints", None) or {}
    for key, value in options.items():
        if key in allowed and value not in allowed[key]:
            raise ValueError(
                f"--backend-opt {key}: the {framework} store takes {key} = "
                f"{' | '.join(map(str, allowed[key]))}, got {value!r}")
    accepted = factory_options(factory)
    if accepted is None:
        return
    accepted = [a for a in accepted if a != "self"]
    for key in options:
        if key == "dataset_signals" and key not in accepted:  # set by --dataset-signals
            raise ValueError(f"--dataset-signals: the {framework} store cannot put the "
                             "benchmark's session ids and speakers over its signals (its "
                             "factory takes no dataset_signals option); drop --dataset-signals")
        if key not in accepted:
            raise ValueError(
                f"--backend-opt {key}: the {framework} store has no option {key!r}; it accepts "
                f"{', '.join(accepted) or 'no options'} (fix the name or drop the option)")


def factory_options(factory: Callable) -> list[str] | None:
    """The keyword options a factory (a class or a function) accepts, read from its signature;
    ``None`` when it takes ``**options`` (then they cannot be known in advance)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params if p.kind in kinds]


def accepts(fn: Callable, name: str) -> bool:
    """Whether ``fn`` takes a parameter called ``name``."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _hold_back_framework_logs(store) -> Callable[[], None]:
    """Raise the loggers the store declares (its ``loggers`` attribute: the framework talking
    to itself while the harness builds and reads its own store, e.g. Mem0's "Resetting all
    memories" on the harness's fresh store) to ERROR; returns the function that restores their
    levels."""
    loggers = [logging.getLogger(name) for name in getattr(store, "loggers", ())]
    saved = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(max(lg.getEffectiveLevel(), logging.ERROR))

    def restore() -> None:
        for lg, level in zip(loggers, saved):
            lg.setLevel(level)
    return restore


def _store_key(store, cfg, embedder, units: Sequence[MemoryUnit]) -> str:
    """Content hash of everything a built store depends on (hashed unit by unit)."""
    h = hashlib.sha256()
    head = (getattr(store, "name", cfg.framework), embedder.fingerprint, cfg.native_order,
            sorted((str(k), repr(v)) for k, v in cfg.backend_options.items()))
    h.update(repr(head).encode())
    for u in units:
        # a title only where there is one: untitled units keep the keys of earlier builds
        h.update(repr((u.uid, u.text, u.group, u.session_id, u.source_ids, u.timestamp,
                       u.speaker) + ((u.title,) if u.title is not None else ())
                      ).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:20]


@dataclass
class OpenedStore:
    """A built (or reused) store, open until :func:`open_store`'s block ends.

    Attributes
    ----------
    store : StoreBackend
        The framework's store (``pool(group, query, size, query_vector=...)``).
    workdir : Path
        Its files: in the cache, keyed by content hash, when it can reopen them
        (``load_existing``), else a temporary folder removed at the end.
    reused : bool
        Whether an earlier build was reopened.
    """

    store: Any
    workdir: Path
    reused: bool


@contextmanager
def open_store(cfg, units: Sequence[MemoryUnit], embedder, cache_root: Path | None, *,
               log: Callable[[str], None] = lambda m: None) -> Iterator[OpenedStore]:
    """Build ``cfg.framework``'s store from ``units`` (or reopen an earlier build), and close it.

    The framework's own chatter (the loggers the store names in its ``loggers`` attribute) is
    held back while the store is open.
    A build interrupted or unusable is removed and redone; a finished one is marked done.
    """
    store_options = dict(cfg.backend_options)
    if cfg.dataset_signals:
        store_options["dataset_signals"] = True
    if cfg.mem0_config:
        store_options["config"] = cfg.mem0_config
    store = build_backend(cfg.framework, native_order=cfg.native_order, options=store_options)
    restore_logs = _hold_back_framework_logs(store)
    tmp_ctx = None
    try:
        loader = getattr(store, "load_existing", None)
        if cache_root is not None and loader is not None:
            key = _store_key(store, cfg, embedder, units)
            workdir = cache_root / "stores" / f"{safe_filename(cfg.framework, 60, 'store')}-{key}"
        else:
            tmp_ctx = tempfile.TemporaryDirectory(prefix="mempursuit-store-")
            workdir = Path(tmp_ctx.name)
        reused = False
        if loader is not None and (workdir / BUILT_MARKER).exists():
            reused = bool(loader(units, embedder=embedder, workdir=workdir))
            if reused:
                log(f"reusing the built store in {workdir}")
        if not reused:
            if tmp_ctx is None and workdir.exists():
                shutil.rmtree(workdir)  # an interrupted or unusable earlier build
            workdir.mkdir(parents=True, exist_ok=True)
            n_new = embedder.missing([u.text for u in units])
            desc = f"building {getattr(store, 'name', cfg.framework)} store"
            log(f"{desc}: {len(units)} units, {n_new} new texts to embed")
            with Progress(cfg.progress, len(units), desc) as bar:
                store.build(units, embedder=embedder, workdir=workdir, progress=bar.update)
            (workdir / BUILT_MARKER).write_text("ok\n")
        yield OpenedStore(store, workdir, reused)
    finally:
        try:
            store.close()
        finally:
            restore_logs()
            if tmp_ctx is not None:
                tmp_ctx.cleanup()


# --------------------------------------------------------------------------------------------
# 3. Pools
# --------------------------------------------------------------------------------------------

def embed_questions(embedder, questions: Sequence[Question], *, batch_size: int = 64,
                    progress: bool = False) -> np.ndarray:
    """The questions' vectors, shape (n_questions, d), through the run's (cached) embedder."""
    texts = [q.text for q in questions]
    with Progress(progress, len(texts), "embedding questions") as bar:
        return encode_with_progress(embedder, texts, bar.update, batch_size=batch_size)


def collect_pools(store, questions: Sequence[Question], query_vectors: np.ndarray,
                  size: int) -> list[Pool]:
    """Each question's candidate pool, read through the store's own read path.

    Parameters
    ----------
    store : StoreBackend
    questions : sequence of Question, length n
    query_vectors : ndarray, shape (n, d)
        Handed to stores whose ``pool`` takes ``query_vector`` (so the query is embedded once).
    size : int
        Candidates asked for (``--pool``).

    Returns
    -------
    list of Pool, length n
        ``Pool.items`` (P,) in the store's native order, ``vectors`` (P, d), signals.
    """
    with_vector = accepts(store.pool, "query_vector")
    pools = []
    for q, qv in zip(questions, query_vectors):
        if with_vector:
            p = store.pool(q.group, q.text, size, query_vector=qv)
        else:
            p = store.pool(q.group, q.text, size)
        if len(p.items) != len(p.vectors):
            raise ValueError(f"store returned {len(p.items)} ids but {len(p.vectors)} vectors "
                             f"for {q.qid}")
        pools.append(p)
    return pools


# --------------------------------------------------------------------------------------------
# 4. Policies
# --------------------------------------------------------------------------------------------

@dataclass
class Selections:
    """What every policy kept of one batch of pools.

    Attributes
    ----------
    orders : dict
        ``orders[policy][K]``: one int64 array of pool indices per pool, length <= K; an index
        ``P + j`` is ``extra[pool][j]``.
    stopped : dict
        ``stopped[policy]``: each pool's stop reason (adaptive selectors), else ``None``.
    seconds : dict
        ``seconds[policy]``: time spent selecting.
    extra : list of list of str
        Per pool, the unit ids a policy's second read added (every policy's, first seen first).
    second_read : dict
        ``second_read[policy]``: per pool, what its second read did at the largest K
        (``{"named", "fetched", "ms"}``), None where it read nothing.
    """

    orders: dict[str, dict[int, list[np.ndarray]]]
    stopped: dict[str, list[str | None]]
    seconds: dict[str, float]
    extra: list[list[str]] = field(default_factory=list)
    second_read: dict[str, list[dict | None]] = field(default_factory=dict)


def _with_extra(chosen, pool: Pool, extra: list[str]) -> tuple[np.ndarray, int]:
    """A read's order (a :class:`~mempursuit_core.readpath.PoolSelection`) with its fetched
    candidates numbered after the pool and the other policies' fetched ones (``extra``,
    extended in place), and the size it indexes."""
    P = len(pool.items)
    if len(chosen.pool.items) == P:
        return chosen.order, P + len(extra)
    at = {}
    for uid in chosen.pool.items[P:]:
        if uid not in extra:
            extra.append(uid)
        at[uid] = P + extra.index(uid)
    where = np.array([i if i < P else at[chosen.pool.items[i]] for i in chosen.order],
                     dtype=np.intp)
    return where, P + len(extra)


def _check_order(order: Any, P: int, k: int, policy: str, qid: str) -> np.ndarray:
    from mempursuit_core.readpath import checked_order

    try:
        return checked_order(order, k, P, policy).astype(np.int64, copy=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{exc} (question {qid}, K={k}, pool of {P})") from None


def _select(selector, pools: Sequence[Pool], k: int, qids: Sequence[str] | None = None):
    """Each pool read through the read path's stages (choose, follow, check:
    :func:`mempursuit_core.readpath.select_pools`), the harness's numbers of the same read an
    adapter makes."""
    from mempursuit_core.readpath import select_pools

    try:
        return select_pools(selector, pools, k)
    except (TypeError, ValueError):
        if qids is None:
            raise
    for p, qid in zip(pools, qids):  # name the question
        try:
            select_pools(selector, [p], k)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{exc} (question {qid}, K={k}, pool of {len(p.items)})") from None
    raise AssertionError("unreachable")


def _select_one(selector, p: Pool, k: int):
    return _select(selector, [p], k)[0]


def apply_policies(selectors: Mapping[str, Any], pools: Sequence[Pool], ks: Sequence[int], *,
                   nested: Mapping[str, bool] | None = None,
                   qids: Sequence[str] | None = None) -> Selections:
    """Every policy's order of every pool, at every K.

    Parameters
    ----------
    selectors : mapping of label -> selector
    pools : sequence of Pool
    ks : sequence of int
    nested : mapping of label -> bool, optional
        Labels whose K-selection is the first K of any larger one: run once at ``max(ks)`` and
        cut. Others (default) run once per K.
    qids : sequence of str, optional
        The pools' question ids, for error messages.

    Raises
    ------
    ValueError
        When a policy returns something that is not an order of at most K distinct pool
        indices (naming the policy, the question, K and the pool size).
    """
    nested = nested or {}
    qids = list(qids) if qids is not None else [f"#{i}" for i in range(len(pools))]
    kmax = max(ks)
    orders: dict[str, dict[int, list[np.ndarray]]] = {}
    stopped: dict[str, list[str | None]] = {}
    seconds: dict[str, float] = {}
    extra: list[list[str]] = [[] for _ in pools]
    second: dict[str, list[dict | None]] = {}

    def checked(res, k):
        out = []
        second[name] = [((getattr(r.selection, "info", None) or {}).get("reorder") or {}
                         ).get("follow") for r in res]
        for r, p, q, more in zip(res, pools, qids, extra):
            order, size = _with_extra(r, p, more)
            out.append(_check_order(order, size, k, name, q))
        return out

    for name, sel in selectors.items():
        ts = time.perf_counter()
        per_k: dict[int, list[np.ndarray]] = {}
        if nested.get(name, False):
            res = _select(sel, pools, kmax, qids)
            top = checked(res, kmax)
            for k in ks:
                per_k[k] = [o[:k] for o in top]
            stopped[name] = [getattr(r.selection, "stopped", None) for r in res]
        else:
            for k in ks:
                res = _select(sel, pools, k, qids)
                per_k[k] = checked(res, k)
                stopped[name] = [getattr(r.selection, "stopped", None) for r in res]
        seconds[name] = time.perf_counter() - ts
        orders[name] = per_k
    return Selections(orders, stopped, seconds, extra,
                      {n: v for n, v in second.items() if any(v)})


# --------------------------------------------------------------------------------------------
# 5. Scores
# --------------------------------------------------------------------------------------------

def score(questions: Sequence[Question], pools: Sequence[Pool], chosen: Selections,
          units: Mapping[str, MemoryUnit], ks: Sequence[int]) -> list[dict]:
    """One record per question (the lines of ``questions.jsonl``): its pool, each policy's order
    and, when it has gold evidence, each policy's metrics at every K.

    Raises
    ------
    ValueError
        When a pool holds a unit id the dataset does not have.
    """
    return [_question_record(q, p, i, chosen, units, ks)
            for i, (q, p) in enumerate(zip(questions, pools))]


def _question_record(q: Question, p: Pool, i: int, chosen: Selections,
                     units: Mapping[str, MemoryUnit], ks: Sequence[int]) -> dict:
    pool_units = []
    extra = chosen.extra[i] if chosen.extra else []
    for uid in list(p.items) + extra:
        u = units.get(uid)
        if u is None:
            raise ValueError(f"store returned unknown unit id {uid!r} for {q.qid}")
        pool_units.append(u)
    kmax = max(ks)
    rec: dict[str, Any] = {
        "qid": q.qid, "group": q.group, "category": q.category, "question": q.text,
        "answer": q.answer, "gold_sessions": list(q.gold_sessions),
        "gold_turns": list(q.gold_turns), "pool": list(p.items), "pool_size": len(p.items),
        "selections": {}, "metrics": {},
    }
    if extra:  # what second reads added, numbered after the pool
        rec["fetched"] = list(extra)
    if q.unresolved_evidence:
        rec["unresolved_evidence"] = list(q.unresolved_evidence)
    if q.gold_sessions:  # the ceiling: every candidate of the pool kept
        first = pool_units[:len(p.items)]
        rec["pool_metrics"] = pool_metrics([u.session_id for u in first],
                                           [s for u in first for s in u.source_ids],
                                           q.gold_sessions, q.gold_turns)
    for name, per_k in chosen.orders.items():
        top = per_k[kmax][i]
        rec["selections"][name] = {"order": top.tolist(), "stopped": chosen.stopped[name][i]}
        if chosen.second_read.get(name) and chosen.second_read[name][i]:
            rec["selections"][name]["second_read"] = chosen.second_read[name][i]
        if not q.gold_sessions:
            continue
        rec["metrics"][name] = {}
        for k in ks:
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
    lme = q.meta.get("lme_corpus") if isinstance(q.meta, dict) else None
    if lme:
        rec["official"] = _lme_official(lme, p.items, chosen, i, ks)
    # Orders per K only when a selector is not nested (its K-selections are not prefixes).
    for name, per_k in chosen.orders.items():
        if not all(np.array_equal(per_k[k][i], per_k[kmax][i][: len(per_k[k][i])]) for k in ks):
            rec["selections"][name]["orders_by_k"] = {str(k): per_k[k][i].tolist() for k in ks}
    return rec


def _lme_official(corpus: Sequence[tuple[str, str]], pool: Sequence[str], chosen: Selections,
                  i: int, ks: Sequence[int]) -> dict:
    """LongMemEval's official metrics (:func:`mempursuit_eval.official.lme_metrics`) of every
    policy at every K. A policy's ranking is its K-selection followed by the rest of the pool in
    native order (what the turn-to-session rule extends into); the ranking ends with the pool."""
    from .official import lme_metrics

    ids = dict(corpus)
    cids = [c for _, c in corpus]
    out: dict[str, dict] = {}
    for name, per_k in chosen.orders.items():
        out[name] = {}
        for k in ks:
            head = [int(j) for j in per_k[k][i]]
            taken = set(head)
            rest = [j for j in range(len(pool)) if j not in taken]
            ranked = [ids[pool[j]] for j in head + rest if pool[j] in ids]
            out[name][str(k)] = lme_metrics(ranked, cids, k)
    return out


def measure_latency(selectors: Mapping[str, Any], pools: Sequence[Pool],
                    ks: Sequence[int]) -> dict:
    """``latency[policy][str(K)]``: median, p95 and mean milliseconds per question over
    ``pools``, each selected alone after one warm-up call."""
    return {name: {str(k): _latency(sel, pools, k) for k in ks}
            for name, sel in selectors.items()}


def _unread(p: Pool) -> Pool:
    """``p`` with none of what a policy derived from its signals (each policy is timed deriving
    its own: the selection stage read these pools before); the store's signal values stay."""
    if isinstance(p.signals, PoolSignals):
        return dataclasses.replace(p, signals=p.signals.overlay())
    return p


def _latency(selector, pools: Sequence[Pool], k: int, repeats: int = 1) -> dict:
    if not pools:
        return {"median": math.nan, "p95": math.nan, "n": 0}
    p0 = pools[0]
    _select_one(selector, _unread(p0), k)  # warm-up (compilation, caches)
    times = []
    for p in pools:
        best = math.inf
        for _ in range(repeats):
            fresh = _unread(p)
            t = time.perf_counter()
            _select_one(selector, fresh, k)
            best = min(best, time.perf_counter() - t)
        times.append(best * 1e3)
    arr = np.asarray(times)
    return {"median": float(np.median(arr)), "p95": float(np.percentile(arr, 95)),
            "mean": float(arr.mean()), "n": int(arr.size)}


# --------------------------------------------------------------------------------------------
# 6. Summary
# --------------------------------------------------------------------------------------------

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


def signal_source(cfg) -> str:
    """Where the policies' signals came from, as the reports say it."""
    if cfg.framework in ("plain", "builtin"):
        return "the plain store's own (the dataset's labels are its store)"
    if cfg.dataset_signals:
        return (f"DATASET SIGNALS: what {cfg.framework}'s adapter hands over, with the benchmark's "
                "own session ids and speakers put over them (--dataset-signals)")
    return f"what {cfg.framework}'s adapter hands over (its store's own)"


def _metric_value(r: dict, policy: str, k: int, metric: str) -> float | None:
    if metric == "qa_accuracy":
        qa = r.get("qa", {}).get(policy, {}).get(str(k))
        return None if qa is None or qa.get("correct") is None else float(bool(qa["correct"]))
    m = r["metrics"].get(policy, {}).get(str(k))
    return None if m is None else m.get(metric)


def summarise(cfg, data: Data, records: list[dict], latency: dict, qa_info: dict | None,
              embedder_name: str) -> dict:
    """The run's summary (``summary.json``): per policy and K the mean metrics overall and by
    category (``results``), the paired differences against ``native`` with bootstrap CI and
    exact test (``paired``), ``latency_ms``, ``qa``, warnings and the run's description."""
    ds = data.dataset
    scored = [r for r in records if r["metrics"]]
    cats = [c for c in ds.categories if any(r["category"] == c for r in records)]
    cats += sorted({r["category"] for r in records} - set(cats))
    metrics = list(RETRIEVAL_METRICS) + (["qa_accuracy"] if qa_info else [])

    def rows_for(policy: str, k: int, subset: list[dict]) -> list[dict]:
        out = []
        for r in subset:
            row = dict(r["metrics"].get(policy, {}).get(str(k), {}))
            qa = r.get("qa", {}).get(policy, {}).get(str(k))
            if qa is not None and qa.get("correct") is not None:
                row["qa_accuracy"] = float(bool(qa["correct"]))
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
    ceiling = [r["pool_metrics"] for r in records if r.get("pool_metrics")]
    pool_ceiling = {"overall": _aggregate(ceiling, POOL_METRICS), "by_category": {
        c: _aggregate([r["pool_metrics"] for r in records
                       if r["category"] == c and r.get("pool_metrics")], POOL_METRICS)
        for c in cats}}
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
    official = _official_summary(data, records, cfg.policies, cfg.k)
    second_read = {}
    for policy in cfg.policies:
        did = [r["selections"].get(policy, {}).get("second_read") for r in records]
        if any(did):
            got = [d for d in did if d]
            second_read[policy] = {
                "questions": len(got), "of": len(records),
                "mean_fetched": float(np.mean([d["fetched"] if d else 0 for d in did])),
                "lookup_ms_median": float(np.median([d["ms"] for d in got]))}
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
        "pool_ceiling": pool_ceiling,
        "paired": paired,
        "latency_ms": latency,
        "second_read": second_read,
        "qa": qa_info,
        "left_out": dict(data.left_out),
        "unscored_ids": [r["qid"] for r in records if not r["metrics"]],
        **({"official": official} if official else {}),
    }


def _official_summary(data: Data, records: list[dict], policies: Sequence[str],
                      ks: Sequence[int]) -> dict:
    """``summary["official"]["longmemeval"]``: the official metrics averaged (fractions, as
    LongMemEval reports them) over the questions its script keeps: abstention questions and
    questions without a ``has_answer`` user turn are left out and counted."""
    from .official import LME_ANCHOR, LME_SOURCE

    out: dict[str, Any] = {}
    if any(r.get("qa") for r in records) and data.dataset.name.startswith("locomo"):
        out["locomo_qa"] = _locomo_official(records, policies, ks)
    with_lme = [r for r in records if "official" in r]
    if not with_lme:
        return out
    by_id = {q.qid: q for q in data.questions}
    abstention = [r["qid"] for r in with_lme if "_abs" in r["qid"]]
    no_target = [r["qid"] for r in with_lme if "_abs" not in r["qid"]
                 and not by_id[r["qid"]].meta.get("lme_has_target")]
    kept = [r for r in with_lme if r["qid"] not in set(abstention) | set(no_target)]
    results: dict[str, dict] = {}
    for policy in policies:
        results[policy] = {}
        for k in ks:
            rows = [r["official"][policy][str(k)] for r in kept]
            results[policy][str(k)] = ({m: float(np.mean([row[m] for row in rows]))
                                        for m in rows[0]} if rows else {})
    out["longmemeval"] = {
        "source": LME_SOURCE, "index": "user turns only (--units user-turns)",
        "ranking": "the policy's K-selection, then the rest of the pool in native order; the "
                   "ranking ends with the pool (the official one ranks the whole haystack)",
        "n": len(kept), "left_out": {"abstention": len(abstention), "no_target": len(no_target)},
        "anchor": dict(LME_ANCHOR), "results": results}
    return out


def _locomo_official(records: list[dict], policies: Sequence[str], ks: Sequence[int]) -> dict:
    """``summary["official"]["locomo_qa"]``: LoCoMo's official answer score (``f1``) with BLEU-1
    and lower-case exact match (Mem0 / A-Mem), in percent, overall and by category, over the
    questions with a QA record; an answer that failed (no reply) scores 0 and is counted."""
    from .official import LOCOMO_SOURCE, locomo_answer_scores

    def mean(rows: list[dict]) -> dict:
        if not rows:
            return {"n": 0}
        return {**{m: 100.0 * float(np.mean([r[m] for r in rows])) for m in ("f1", "bleu1", "exact")},
                "n": len(rows), "failed": sum(r["failed"] for r in rows)}

    results: dict[str, dict] = {}
    for policy in policies:
        results[policy] = {}
        for k in ks:
            rows, by_cat = [], {}
            for r in records:
                qa = (r.get("qa") or {}).get(policy, {}).get(str(k))
                if qa is None:
                    continue
                row = {**locomo_answer_scores(qa.get("answer"), r["answer"], r["category"]),
                       "failed": qa.get("answer") is None}
                rows.append(row)
                by_cat.setdefault(r["category"], []).append(row)
            results[policy][str(k)] = {"overall": mean(rows),
                                       "by_category": {c: mean(v) for c, v in by_cat.items()}}
    return {"source": LOCOMO_SOURCE,
            "metrics": {"f1": "official LoCoMo answer score (Porter-stemmed token F1; "
                              "multi-answer F1 for multi-hop; 'not mentioned' for adversarial)",
                        "bleu1": "BLEU-1 as Mem0 / A-Mem report it",
                        "exact": "lower-case exact match as Mem0 / A-Mem report it"},
            "results": results}


# --------------------------------------------------------------------------------------------
# 7. The run folder
# --------------------------------------------------------------------------------------------

def write(cfg, summary: dict, records: list[dict], config: dict, *,
          log: Callable[[str], None] = print) -> None:
    """Write ``config.json``, ``questions.jsonl``, ``summary.json``, ``summary.md`` (and plots)
    to ``cfg.out``, all at once (:func:`mempursuit_eval.report.write_outputs`)."""
    from .report import write_outputs

    write_outputs(Path(cfg.out), cfg, summary, records, config, log=log)
