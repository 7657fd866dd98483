"""HotpotQA (distractor setting): Wikipedia paragraphs as memory units, gold evidence from the
``supporting_facts``.

Reads the Hugging Face format, one JSON object a line (``.jsonl``): ``id``, ``question``,
``answer``, ``type`` (``bridge`` / ``comparison``: the category), ``level``,
``supporting_facts`` ``{"title": [...], "sent_id": [...]}`` and ``context`` ``{"title": [...],
"sentences": [[...], ...]}``; also the official JSON files (a list of records with ``_id``,
``supporting_facts`` ``[[title, sent_id], ...]`` and ``context`` ``[[title, [sentences]],
...]``). ``path`` is one file or a folder of them (``train``, ``dev``, ``test`` first); each
question's split is its file's name (``Question.meta["split"]``, selected with ``--split``).

Units, settings and gold: :mod:`.multihop` (paragraphs ``"Title: text"`` by default, or
sentences; ``pooled``: one shared store of every question's paragraphs, deduplicated;
``distractor``: each question's own paragraphs).
"""

from __future__ import annotations

import os
from typing import Any

from .base import Dataset
from .checks import FIX, bad, need_field, need_type
from .multihop import Item, Passage, joined, load_files, record_id, text_field

__all__ = ["load_hotpotqa", "load_hotpotqa_distractor", "parse_context", "parse_supporting",
           "HOTPOTQA_TYPES"]

#: HotpotQA's question types (the categories), in report order.
HOTPOTQA_TYPES = ("bridge", "comparison")


def _strings(value: Any, where: str) -> list[str]:
    need_type(value, list, where, "a list of strings")
    for i, s in enumerate(value):
        need_type(s, str, f"{where}[{i}]", "a string")
    return value


def _by_title(columns: dict, field: str, key: str, noun: str, where: str,
              expected: str | None = None) -> list[tuple[str, Any]]:
    """``(title, value)`` pairs of the record's ``field`` in Hugging Face's form, the columns
    ``{"title": [...], key: [...]}``: one ``noun`` per title."""
    at = f"{where}: {field!r}"
    titles = _strings(need_field(columns, "title", list, at, "a list of titles"),
                      f"{at}['title']")
    values = need_field(columns, key, list, at, expected or f"a list of {noun}s")
    if len(titles) != len(values):
        raise bad(where, f"{field!r} has {len(titles)} titles and {len(values)} {noun}s, "
                         f"expected one {noun} per title ({FIX})")
    return list(zip(titles, values))


def parse_context(rec: dict, where: str, *, required: bool = True) -> list[Passage]:
    """The record's ``context`` as passages: ``{"title": [...], "sentences": [[...]]}`` (Hugging
    Face) or ``[[title, [sentences]], ...]`` (the official files, 2WikiMultihopQA)."""
    ctx = need_field(rec, "context", (dict, list), where,
                     "{'title': [...], 'sentences': [[...]]} or [[title, [sentences]], ...]",
                     required=required)
    if ctx is None:
        return []
    at = f"{where}: 'context'"
    if isinstance(ctx, dict):
        pairs = _by_title(ctx, "context", "sentences", "sentence list", where)
        for i, (_, s) in enumerate(pairs):
            _strings(s, f"{at}['sentences'][{i}]")
    else:
        pairs = []
        for i, entry in enumerate(ctx):
            if (not isinstance(entry, list) or len(entry) != 2 or not isinstance(entry[0], str)):
                raise bad(where, f"'context'[{i}] is {entry!r:.60}, expected [title, "
                                 f"[sentences]] ({FIX})")
            pairs.append((entry[0], _strings(entry[1], f"{at}[{i}][1]")))
    return [Passage(title=t, text=joined(s), sentences=tuple(s)) for t, s in pairs]


def parse_supporting(rec: dict, where: str) -> list[tuple[str, int | None]]:
    """``supporting_facts`` as (title, sentence index) pairs, from ``{"title": [...], "sent_id":
    [...]}``, ``[[title, sent_id], ...]`` or a list of titles (the retrieval releases of GFM-RAG
    and HippoRAG: paragraph-level gold, sentence index None); missing: none (the question is
    not scored)."""
    sf = need_field(rec, "supporting_facts", (dict, list), where,
                    "{'title': [...], 'sent_id': [...]} or [[title, sent_id], ...]",
                    required=False)
    if sf is None:
        return []
    at = f"{where}: 'supporting_facts'"
    if isinstance(sf, dict):
        pairs = _by_title(sf, "supporting_facts", "sent_id", "sent_id", where,
                          "a list of sentence indices")
    else:
        pairs = []
        for i, entry in enumerate(sf):
            if isinstance(entry, str):  # a title only
                pairs.append((entry, None))
                continue
            if not isinstance(entry, list) or len(entry) != 2:
                raise bad(where, f"'supporting_facts'[{i}] is {entry!r:.60}, expected [title, "
                                 f"sent_id] or a title ({FIX})")
            pairs.append((entry[0], entry[1]))
    for i, (t, s) in enumerate(pairs):
        need_type(t, str, f"{at}: title {i}", "a string")
        if s is not None:
            need_type(s, int, f"{at}: sent_id {i}", "an integer")
    return pairs


def parse_item(rec: Any, where: str, split: str, *, category: str | None = None,
               type_required: bool = False, context_required: bool = True) -> Item:
    """One HotpotQA-style record (also 2WikiMultihopQA's) as an :class:`Item`: gold passages =
    the context passages whose title a supporting fact names (each title once, the first passage
    with that title), gold sentences the (passage, sent_id) pairs; a title or sentence index
    not in the context is unresolved."""
    qid, where = record_id(rec, where)
    question = text_field(rec, "question", where)
    answer = text_field(rec, "answer", where, required=False)
    qtype = need_field(rec, "type", str, where, "a string (e.g. bridge, comparison)",
                       required=type_required)
    passages = parse_context(rec, where, required=context_required)
    facts = parse_supporting(rec, where)
    index: dict[str, int] = {}
    for i, p in enumerate(passages):
        index.setdefault(p.title, i)
    gold: list[int] = []
    gold_sentences: list[tuple[int, int]] = []
    unresolved: list[str] = []
    titles: list[str] = []
    for t, s in facts:
        i = index.get(t)
        if i is None:
            if passages:
                unresolved.append(t if s is None else f"{t}#{s}")
            elif t not in titles:
                titles.append(t)  # no context: resolved against a corpus
            continue
        if i not in gold:
            gold.append(i)
        if s is None:  # paragraph-level gold only
            continue
        sents = passages[i].sentences or ()
        if 0 <= s < len(sents):
            gold_sentences.append((i, s))
        else:
            unresolved.append(f"{t}#{s}")
    meta = {k: rec[k] for k in ("type", "level") if isinstance(rec.get(k), str)}
    n_gold = len(gold) + len(titles)
    cat = category or qtype or f"{n_gold}-hop"
    return Item(qid=qid, question=question, answer=answer, category=cat, passages=passages,
                gold=gold, gold_sentences=gold_sentences, split=split, where=where,
                meta={**meta, "n_gold": n_gold}, unresolved=unresolved, gold_titles=titles)


def load_hotpotqa(path: str | os.PathLike | None, *, units: str | None = None,
                  setting: str = "pooled") -> Dataset:
    """Load HotpotQA from a ``.jsonl`` / ``.json`` file or a folder of them.

    Parameters
    ----------
    path : path
        A file, or a folder (every ``.jsonl`` / ``.json`` in it; ``train``, ``dev``, ``test``
        first).
    units : {"paragraphs", "sentences"}, optional
        Default paragraphs.
    setting : {"pooled", "distractor"}
        One shared store of every question's paragraphs, or each question's own.

    Raises
    ------
    DatasetFormatError
        A record with a missing or malformed field (one line: file, line, id, field).
    """
    name = "hotpotqa" if setting == "pooled" else f"hotpotqa-{setting}"
    return load_files(name, path, lambda rec, where, split: parse_item(
        rec, where, split, type_required=True), units=units, setting=setting,
        categories=HOTPOTQA_TYPES)


def load_hotpotqa_distractor(path: str | os.PathLike | None, *,
                             units: str | None = None) -> Dataset:
    """:func:`load_hotpotqa` with ``setting="distractor"`` (each question's own paragraphs)."""
    return load_hotpotqa(path, units=units, setting="distractor")
