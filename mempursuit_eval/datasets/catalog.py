"""The one table describing the datasets (:data:`DATASETS`) and what reads it: where a dataset's
files are (:func:`resolve_data_path`), loading it (:func:`load_dataset`) and the questions
asked by default (:func:`select_questions`). The command line's ``--dataset`` choices and help
come from the same table.

Adding a dataset is one module with a loader ``load_x(path, *, units="turns") -> Dataset`` and
one :class:`DatasetSpec` row here (CONTRIBUTING.md). A document set with two settings has two
rows (``NAME``: pooled, ``NAME-distractor``), made by ``_multihop``.
"""

from __future__ import annotations

import importlib
import os
import urllib.error
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from . import base
from .base import DATA_ENV, Dataset, DatasetNotFoundError, Question, default_cache_dir

__all__ = ["DatasetSpec", "DATASETS", "UNIT_KINDS", "DEFAULT_EXCLUDED", "resolve_data_path",
           "load_dataset", "select_questions"]

#: Every unit kind a loader builds (``--units``): ``turns`` (one per turn / message),
#: ``observations`` and ``summaries`` (LoCoMo's extracted facts / session summaries),
#: ``sessions`` (one per whole session), ``user-turns`` (LongMemEval's official retrieval index:
#: the user turns only), ``paragraphs`` and ``sentences`` (the multi-hop document sets: HotpotQA,
#: 2WikiMultihopQA, MuSiQue).
UNIT_KINDS = ("turns", "observations", "summaries", "sessions", "user-turns", "paragraphs",
              "sentences")


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset: its loader, where its files are, and what is asked by default.

    Attributes
    ----------
    name : str
        The ``--dataset`` name.
    loader : str or callable
        ``"module:function"`` (imported on first use) or the function itself:
        ``loader(path, *, units="turns") -> Dataset``.
    description : str
        One phrase for ``mempursuit eval --help``.
    units : tuple of str
        The unit kinds the loader builds (the first is the default).
    default_excluded : frozenset of str
        Categories left out unless ``--categories`` asks for them (the ones whose evidence
        does not answer the question).
    category_numbers : mapping of int to str
        Numbers ``--categories`` accepts for category names (LoCoMo's 1-5).
    relative : str or None
        The file or folder inside ``$MEMPURSUIT_DATA`` (laid out like ``../shared/data``).
    urls : mapping of str to str
        Official download: path inside the cache folder -> URL.
    root : str or None
        What to load from the download folder (default: the first file of ``urls``).
    home : str
        Where a user gets the files by hand (named when nothing is found).
    path_only : bool
        Read only from the path given (``--data``), never searched for or downloaded.
    """

    name: str
    loader: str | Callable[..., Dataset]
    description: str
    units: tuple[str, ...] = ("turns", "sessions")
    default_excluded: frozenset[str] = frozenset()
    category_numbers: Mapping[int, str] = field(default_factory=dict)
    relative: str | None = None
    urls: Mapping[str, str] = field(default_factory=dict)
    root: str | None = None
    home: str = ""
    path_only: bool = False

    def load(self, path: str | os.PathLike | None, *, units: str | None = None) -> Dataset:
        """``loader(path, units=units)``, importing a ``"module:function"`` loader first;
        ``units=None`` is the dataset's first unit kind."""
        units = units or self.units[0]
        fn = self.loader
        if isinstance(fn, str):
            module, _, attr = fn.partition(":")
            fn = getattr(importlib.import_module(module), attr)
        return fn(path, units=units)


#: LoCoMo's category numbers (``qa[i].category``) and names.
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                     5: "adversarial"}
_LME_HOME = "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned"
_BEAM_RAW = "https://raw.githubusercontent.com/mohammadtavakoli78/BEAM/main/chats/100K"
_HOTPOT_DEV = "http://curtis.ml.cmu.edu/datasets/hotpot/hotpot_dev_distractor_v1.json"

def _multihop(name: str, module: str, function: str, description: str, *, relative: str,
              home: str, units: tuple[str, ...] = ("paragraphs", "sentences"),
              urls: Mapping[str, str] | None = None, excluded: frozenset = frozenset()
              ) -> tuple[DatasetSpec, DatasetSpec]:
    """A multi-hop document set in its two settings: ``NAME`` (pooled: one shared store) and
    ``NAME-distractor`` (each question's own passages)."""
    loader = f"mempursuit_eval.datasets.{module}:{function}"
    common = dict(units=units, relative=relative, home=home, urls=dict(urls or {}),
                  default_excluded=excluded)
    return (DatasetSpec(name, loader, f"{description}, pooled: one store of every question's "
                        "passages", **common),
            DatasetSpec(f"{name}-distractor", f"{loader}_distractor",
                        f"{description}, each question's own passages", **common))


def _longmemeval(name: str, description: str, local: str, official: str) -> DatasetSpec:
    """A LongMemEval file: the same loader, exclusions and home, its own file names."""
    return DatasetSpec(
        name, "mempursuit_eval.datasets.longmemeval:load_longmemeval", description,
        units=("turns", "sessions", "user-turns"),
        default_excluded=frozenset({"abstention"}), relative=f"longmemeval/{local}",
        urls={official: f"{_LME_HOME}/resolve/main/{official}"}, home=_LME_HOME)


#: The datasets, by ``--dataset`` name.
DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in (
    DatasetSpec(
        "locomo", "mempursuit_eval.datasets.locomo:load_locomo",
        "LoCoMo, 10 long conversations",
        units=("turns", "observations", "summaries", "sessions"),
        default_excluded=frozenset({"adversarial"}),
        category_numbers=LOCOMO_CATEGORIES,
        relative="locomo/locomo10.json",
        urls={"locomo10.json":
              "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"},
        home="https://github.com/snap-research/locomo"),
    _longmemeval("longmemeval", "LongMemEval-S, one haystack per question",
                 "longmemeval_s.json.gz", "longmemeval_s_cleaned.json"),
    _longmemeval("longmemeval-oracle", "LongMemEval's oracle file (evidence sessions only)",
                 "longmemeval_oracle.json.gz", "longmemeval_oracle.json"),
    DatasetSpec(
        "beam", "mempursuit_eval.datasets.beam:load_beam",
        "BEAM, any scale folder (download: 100K)",
        default_excluded=frozenset({"abstention"}),
        relative="beam/100K",
        # The 100K scale of the official repository, chat by chat (20 chats, two files each).
        urls={f"100K/{i}/{f}": f"{_BEAM_RAW}/{i}/{f}"
              for i in range(1, 21)
              for f in ("chat.json", "probing_questions/probing_questions.json")},
        root="100K",
        home="https://github.com/mohammadtavakoli78/BEAM (folder chats/<scale>)"),
    *_multihop("hotpotqa", "hotpotqa", "load_hotpotqa", "HotpotQA (distractor files)",
               relative="hotpotqa", urls={"hotpot_dev_distractor_v1.json": _HOTPOT_DEV},
               home="https://hotpotqa.github.io (hotpot_dev_distractor_v1.json), or the "
                    "Hugging Face dataset hotpotqa/hotpot_qa (config distractor) as JSONL"),
    *_multihop("2wikimultihopqa", "twowiki", "load_2wiki", "2WikiMultihopQA",
               relative="2wikimultihopqa",
               home="https://github.com/Alab-NII/2wikimultihop (dev.json)"),
    *_multihop("musique", "musique", "load_musique", "MuSiQue", relative="musique",
               units=("paragraphs",), excluded=frozenset({"unanswerable"}),
               home="https://github.com/StonyBrookNLP/musique (musique_ans_v1.0_dev.jsonl)"),
    DatasetSpec(
        "custom", "mempursuit_eval.datasets.custom:load_custom",
        "your own file given by --data (docs/eval-custom-data.md)",
        units=("turns", "memories"), path_only=True),
)}

#: Categories evaluated unless asked otherwise, by dataset (read from :data:`DATASETS`).
DEFAULT_EXCLUDED: dict[str, set[str]] = {n: set(s.default_excluded)
                                         for n, s in DATASETS.items() if s.default_excluded}


def _spec(name: str) -> DatasetSpec:
    spec = DATASETS.get(str(name).lower())
    if spec is None:
        raise ValueError(f"unknown dataset {name!r}; known: {', '.join(DATASETS)}")
    return spec


def near_path(path: Path) -> str:
    """``" (did you mean 'dir/name'?)"`` for the entry of ``path``'s folder nearest in spelling
    to its name, ``" (nor does its folder dir)"`` where the folder is missing too, else ``""``."""
    import difflib

    folder = path.parent
    if not folder.is_dir():
        return f" (nor does its folder {folder})"
    try:
        names = [entry.name for entry in folder.iterdir()]
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=1, cutoff=0.6)
    return f" (did you mean {str(folder / close[0])!r}?)" if close else ""


def resolve_data_path(dataset: str, data: str | os.PathLike | None = None, *,
                      cache_dir: str | os.PathLike | None = None, download: bool = True) -> Path:
    """Where to read ``dataset`` from.

    Order: ``data`` if given (must exist); ``$MEMPURSUIT_DATA/<relative>`` when that variable
    names a folder laid out like the benchmarks' copies (``locomo/locomo10.json``, ...); a
    previous download in ``<cache_dir>/data/<dataset>``; else download the official files
    there (``download=True``). The current directory is never searched.

    Raises
    ------
    DatasetNotFoundError
        With the official location and the ``--data`` hint when nothing is found and the
        download fails (e.g. offline).
    """
    spec = _spec(dataset)
    key = spec.name
    if data is not None:
        p = Path(data).expanduser()
        if not p.exists():
            raise DatasetNotFoundError(f"{dataset}: {p} does not exist{near_path(p)}")
        return p
    if spec.path_only:
        raise ValueError(f"{dataset} is read from the path given (--data PATH); it is never "
                         "searched for or downloaded")
    if os.environ.get(DATA_ENV):
        p = Path(os.environ[DATA_ENV]).expanduser() / spec.relative
        if p.exists():
            return p
    cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    target = cache / "data" / key
    if not spec.urls:
        raise DatasetNotFoundError(
            f"{dataset}: no local copy found (looked in ${DATA_ENV}/{spec.relative}) and it has "
            f"no official download. Get the files from {spec.home} and pass --data PATH "
            "(Python: data=PATH).")
    first = next(iter(spec.urls))
    local = target / (spec.root or first)
    if (target / ".complete").exists() and local.exists():
        return local
    if download:
        try:
            for rel, url in spec.urls.items():
                dest = target / rel
                if not dest.exists():
                    base._download(url, dest)
            (target / ".complete").write_text("ok\n")
            return local
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = f"download failed ({exc})"
    else:
        reason = "downloads are off"
    raise DatasetNotFoundError(
        f"{dataset}: no local copy found (looked in ${DATA_ENV}/{spec.relative} and "
        f"{target}) and {reason}. Get the official files from {spec.home} and pass "
        f"--data PATH (Python: data=PATH)."
    )


def load_dataset(name: str, path: str | os.PathLike | None = None, *, units: str | None = None,
                 cache_dir: str | os.PathLike | None = None, download: bool = True) -> Dataset:
    """Load the dataset ``name`` (a key of :data:`DATASETS`: ``locomo``, ``longmemeval``
    (``_s``; ``longmemeval-oracle`` for the oracle file when no path is given), ``beam``, or
    ``custom`` from the file ``path``, ``hotpotqa``, ``2wikimultihopqa``, ``musique`` and their
    ``-distractor`` settings) from ``path``; without a path, from where
    :func:`resolve_data_path` finds it. ``units=None``: the dataset's first unit kind (turns;
    paragraphs for the multi-hop document sets)."""
    spec = _spec(name)
    if spec.path_only:
        return spec.load(path, units=units)
    p = resolve_data_path(spec.name, path, cache_dir=cache_dir, download=download)
    return spec.load(p, units=units)


def select_questions(ds: Dataset, categories: Sequence[str] | None = None,
                     limit: int | None = None, groups: Sequence[str] | None = None,
                     require_gold: bool = False, splits: Sequence[str] | None = None
                     ) -> list[Question]:
    """Questions in the given categories (names, or LoCoMo numbers), groups, splits and order,
    at most ``limit``. ``categories=None`` uses the dataset's default (all but the ones without
    answering evidence: LoCoMo adversarial, LongMemEval / BEAM abstention, MuSiQue
    unanswerable). ``splits``: only questions whose ``meta["split"]`` is one of them (the
    multi-hop sets' file names: ``train``, ``dev``, ``test``); the store still holds every
    loaded question's passages."""
    spec = DATASETS.get(ds.name)
    qs = ds.questions
    if splits is not None:
        wanted_splits = [str(x).strip() for x in splits if str(x).strip()]
        known_splits = list(dict.fromkeys(str(q.meta.get("split")) for q in qs
                                          if isinstance(q.meta, dict) and q.meta.get("split")))
        if not known_splits:
            raise ValueError(f"--split: {ds.name} has no splits (only the multi-hop document "
                             "sets' files name one); leave --split out")
        unknown = [x for x in wanted_splits if x not in known_splits]
        if unknown or not wanted_splits:
            raise ValueError(f"unknown {ds.name} split(s) {unknown or wanted_splits}; the data "
                             f"read has {', '.join(known_splits)}")
        qs = [q for q in qs if q.meta.get("split") in wanted_splits]
    if categories is None:
        excluded = getattr(ds, "default_excluded", None) or (spec.default_excluded if spec
                                                             else set())
        qs = [q for q in qs if q.category not in excluded]
    else:
        numbers = spec.category_numbers if spec else {}
        wanted = set()
        known = set(ds.categories) | {q.category for q in qs}
        for c in categories:
            c = str(c).strip()
            if c.isdigit() and int(c) in numbers:
                c = numbers[int(c)]
            if c == "all":
                wanted |= known
                continue
            if c not in known:
                raise ValueError(f"unknown {ds.name} category {c!r}; known: {', '.join(sorted(known))}")
            wanted.add(c)
        qs = [q for q in qs if q.category in wanted]
    if groups is not None:
        g = set(groups)
        unknown = g - set(ds.groups()) - {q.group for q in ds.questions}
        if unknown:
            known = ds.groups()
            raise ValueError(f"unknown group(s) {sorted(unknown)}; {ds.name} has "
                             f"{', '.join(known[:10])}" + (" ..." if len(known) > 10 else ""))
        qs = [q for q in qs if q.group in g]
    if require_gold:
        qs = [q for q in qs if q.gold_sessions]
    if limit is not None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        qs = qs[:limit]
    return qs
