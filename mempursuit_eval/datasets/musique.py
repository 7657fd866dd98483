"""MuSiQue: Wikipedia paragraphs as memory units, gold evidence from ``is_supporting``.

Reads the official ``.jsonl`` files (one object a line: ``id``, ``question``, ``answer``,
``answer_aliases``, ``answerable``, ``paragraphs`` ``[{"idx", "title", "paragraph_text",
"is_supporting"}, ...]``, ``question_decomposition``). Paragraphs only (the format has no
sentences). Category: the number of supporting paragraphs (``2-hop``, ``3-hop``, ``4-hop``);
questions marked ``answerable: false`` (MuSiQue-Full) are ``unanswerable``, left out unless
``--categories`` asks for them. The question's decomposition is kept in
``Question.meta["decomposition"]``.

Units, settings and gold: :mod:`.multihop`.
"""

from __future__ import annotations

import os
from typing import Any

from .base import Dataset
from .checks import need_field, need_type
from .multihop import Item, Passage, load_files, record_id, text_field

__all__ = ["load_musique", "load_musique_distractor"]


def parse_item(rec: Any, where: str, split: str) -> Item:
    qid, where = record_id(rec, where)
    question = text_field(rec, "question", where)
    answer = text_field(rec, "answer", where, required=False)
    answerable = need_field(rec, "answerable", bool, where, "true or false", required=False,
                            default=True)
    paras = need_field(rec, "paragraphs", list, where,
                       "a list of {idx, title, paragraph_text, is_supporting}")
    passages: list[Passage] = []
    gold: list[int] = []
    for i, p in enumerate(paras):
        at = f"{where}: 'paragraphs'[{i}]"
        need_type(p, dict, at, "an object {idx, title, paragraph_text, is_supporting}")
        title = need_field(p, "title", str, at, "the paragraph's title")
        text = need_field(p, "paragraph_text", str, at, "the paragraph's text")
        if need_field(p, "is_supporting", bool, at, "true or false", required=False,
                      default=False):
            gold.append(i)
        passages.append(Passage(title=title, text=" ".join(text.split()), sentences=None))
    steps = need_field(rec, "question_decomposition", list, where, "a list of steps",
                       required=False, default=[])
    category = f"{len(gold)}-hop" if answerable else "unanswerable"
    meta = {"answerable": answerable, "n_gold": len(gold), "hops": len(steps) or None,
            "decomposition": steps}
    aliases = rec.get("answer_aliases")
    if isinstance(aliases, list):
        meta["answer_aliases"] = aliases
    return Item(qid=qid, question=question, answer=answer, category=category,
                passages=passages, gold=gold, gold_sentences=[], split=split, where=where,
                meta=meta)


def load_musique(path: str | os.PathLike | None, *, units: str | None = None,
                 setting: str = "pooled") -> Dataset:
    """Load MuSiQue from a ``.jsonl`` file or a folder of them.

    Parameters
    ----------
    path : path
    units : {"paragraphs"}, optional
    setting : {"pooled", "distractor"}
    """
    name = "musique" if setting == "pooled" else f"musique-{setting}"
    if units == "sentences":
        raise ValueError(f"{name}: MuSiQue gives paragraphs, not sentences; use --units "
                         "paragraphs")
    return load_files(name, path, parse_item, units=units, setting=setting,
                      categories=("2-hop", "3-hop", "4-hop"))


def load_musique_distractor(path: str | os.PathLike | None, *,
                            units: str | None = None) -> Dataset:
    """:func:`load_musique` with ``setting="distractor"`` (each question's own paragraphs)."""
    return load_musique(path, units=units, setting="distractor")
