"""Benchmark loaders: LoCoMo, LongMemEval (``_s`` / ``_oracle``), BEAM, the multi-hop document
sets (HotpotQA, 2WikiMultihopQA, MuSiQue) and your own data, as memory units + questions.

Each loader returns a :class:`Dataset`: the :class:`~mempursuit_eval.base.MemoryUnit` list a
store is built from (every unit keeps its session id, its source turn / message ids and its
timestamp) and the :class:`Question` records with their gold evidence. :data:`DATASETS` is the
one table of datasets (loader, files, unit kinds, default exclusions) that
:func:`load_dataset`, :func:`select_questions`, :func:`resolve_data_path` and the command line
read.

Unit kinds (``units=``):

* ``"turns"`` (default): one unit per dialogue turn / chat message.
* ``"observations"``: LoCoMo only, the dataset's LLM-extracted facts, each with its source turn(s).
* ``"summaries"``: LoCoMo only, one session summary per session (its source ids are every turn of
  that session, so turn-level recall equals session-level recall for this kind).
* ``"sessions"``: one unit per whole session (all turns joined; the embedder truncates).
* ``"paragraphs"`` (default of the document sets) / ``"sentences"``: a Wikipedia paragraph
  ``"Title: text"`` / one of its sentences, with the paragraph's title (:mod:`.multihop`).

Gold evidence: LoCoMo ``evidence`` dia_ids (session = the ``D<n>`` prefix); LongMemEval
``answer_session_ids`` and the turns marked ``has_answer``; BEAM ``source_chat_ids`` (session =
the batch holding the message); HotpotQA / 2WikiMultihopQA ``supporting_facts`` and MuSiQue
``is_supporting`` (session = the gold paragraph, turn = the paragraph or the supporting sentence).
Evidence ids that do not resolve to a turn are never dropped
silently: they are kept in ``Question.unresolved_evidence`` and counted in ``Dataset.notes``.

Modules: :mod:`.base` (the types, errors, downloads), :mod:`.checks` (reading JSON and checking
records, shared by every loader and the custom format), :mod:`.catalog` (the table),
:mod:`.locomo`, :mod:`.longmemeval`, :mod:`.beam`, :mod:`.multihop` (what the document sets
share) with :mod:`.hotpotqa`, :mod:`.twowiki`, :mod:`.musique`, and :mod:`.custom`.
"""

# Everything below stays importable from here; __all__ is the public API.
from .base import (DATA_ENV, Dataset, DatasetFormatError, DatasetNotFoundError,  # noqa: F401
                   Question, _download, default_cache_dir)
from .beam import BEAM_ANSWER_FIELDS, load_beam  # noqa: F401
from .catalog import (DATASETS, DEFAULT_EXCLUDED, LOCOMO_CATEGORIES,  # noqa: F401
                      UNIT_KINDS, DatasetSpec, load_dataset, resolve_data_path, select_questions)
from .checks import JSON_ERRORS, json_problem, read_json  # noqa: F401
from .locomo import load_locomo
from .longmemeval import LME_CATEGORIES, load_longmemeval  # noqa: F401
from .hotpotqa import load_hotpotqa  # noqa: F401
from .musique import load_musique  # noqa: F401
from .twowiki import load_2wiki  # noqa: F401

__all__ = [
    "Question",
    "Dataset",
    "DatasetNotFoundError",
    "DatasetFormatError",
    "DatasetSpec",
    "DATASETS",
    "UNIT_KINDS",
    "load_dataset",
    "select_questions",
    "load_locomo",
    "load_longmemeval",
    "load_beam",
    "load_hotpotqa",
    "load_2wiki",
    "load_musique",
    "resolve_data_path",
    "default_cache_dir",
]
