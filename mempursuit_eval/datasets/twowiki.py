"""2WikiMultihopQA: Wikipedia paragraphs as memory units, gold evidence from the
``supporting_facts``.

Reads the official JSON files (a list of records: ``_id``, ``type`` (``compositional``,
``comparison``, ``inference``, ``bridge_comparison``: the category), ``question``, ``answer``,
``context`` ``[[title, [sentences]], ...]``, ``supporting_facts`` ``[[title, sent_id], ...]``,
``evidences``), the Hugging Face layout (the same fields as objects ``{"title": [...],
"sentences": [...]}``, one JSON object a line), and the retrieval releases' separate corpus: a
file whose name contains ``corpus`` holding ``{"title", "text"}`` passages, beside the questions
in the folder given. With a corpus the pooled store is the corpus and the supporting titles
resolve against it (every corpus passage with that title; the question's own version when its
context has one). A record without ``type`` is categorised by its number of gold passages
(``2-hop``, ``4-hop``, ...).

Units, settings and gold: :mod:`.multihop`.
"""

from __future__ import annotations

import os
from typing import Any

from .base import Dataset
from .checks import need_field
from .hotpotqa import parse_item
from .multihop import Passage, load_files, record_id, text_field

__all__ = ["load_2wiki", "load_2wiki_distractor", "TWOWIKI_TYPES"]

#: 2WikiMultihopQA's question types, in report order.
TWOWIKI_TYPES = ("compositional", "comparison", "inference", "bridge_comparison")


def parse_passage(rec: Any, where: str) -> Passage:
    """One corpus passage ``{"title", "text"}`` (an id field is allowed and not used)."""
    if isinstance(rec, dict) and any(k in rec for k in ("id", "_id", "idx")):
        _, where = record_id(rec, where, ("id", "_id", "idx"))
    elif not isinstance(rec, dict):
        record_id(rec, where)  # the one-line "expected an object" error
    title = need_field(rec, "title", str, where, "the passage's title")
    text = text_field(rec, "text", where)
    return Passage(title=title, text=" ".join(text.split()), sentences=None)


def load_2wiki(path: str | os.PathLike | None, *, units: str | None = None,
               setting: str = "pooled") -> Dataset:
    """Load 2WikiMultihopQA from a file or a folder (questions, and optionally a corpus file).

    Parameters
    ----------
    path : path
    units : {"paragraphs", "sentences"}, optional
        Default paragraphs; sentences need the questions' contexts (a corpus has no sentences).
    setting : {"pooled", "distractor"}
    """
    name = "2wikimultihopqa" if setting == "pooled" else f"2wikimultihopqa-{setting}"
    return load_files(name, path, lambda rec, where, split: parse_item(
        rec, where, split, context_required=False), units=units, setting=setting,
        categories=TWOWIKI_TYPES, corpus=parse_passage)


def load_2wiki_distractor(path: str | os.PathLike | None, *,
                          units: str | None = None) -> Dataset:
    """:func:`load_2wiki` with ``setting="distractor"`` (each question's own paragraphs)."""
    return load_2wiki(path, units=units, setting="distractor")
