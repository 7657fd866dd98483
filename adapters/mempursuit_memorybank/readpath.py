"""MemoryBank's read path after the seeds are chosen (pure Python, no FAISS).

Re-implemented (clean room) from ``memory_bank/memory_retrieval/local_doc_qa.py``:

``similarity_search_with_score_by_vector`` (patched onto LangChain's FAISS store)
    For every seed position ``i`` (FAISS id; the document order of the index), keep ``i`` and
    walk outwards, offset ``k = 1, 2, ...``, looking at ``i + k`` then ``i - k``. A neighbour
    inside the index is looked at as follows: if the seed's running length plus the neighbour's
    length exceeds the budget (``CHUNK_SIZE = 200`` characters), the rest of *this offset's pair*
    is skipped (the ``break`` leaves only the two-element inner loop; the walk goes on with the
    next offset); otherwise a neighbour of the seed's date is kept and its length added. A
    neighbour of another date is passed over (the walk goes on past it). The kept positions of
    all seeds are pooled, sorted, cut into runs of consecutive positions, and each run becomes one
    text: its documents' texts concatenated with no separator, dated by the run's first document.

    The offset range there is ``range(1, max(i, len(docs) - i))`` where ``docs`` is the
    (still empty) result list, so it is ``range(1, i)``: seeds at positions 0 and 1 are never
    expanded, the walk never reaches position 0, and it never goes past ``2 i - 1``. That is
    ``window="literal"``, the default, which reproduces MemoryBank. The code it derives from
    meant the whole index (``len(index) - i``); ``window="full"`` walks every offset that reaches
    a position inside the index, ``k = 1 .. max(i, n - 1 - i)``.

``LocalMemoryRetrieval.search_memory``
    Stable sort of the run texts by date string; remove the Chinese turn prefix of the text's
    own date (``时间{date}的对话内容：``) wherever it occurs, then ``str.strip()``; texts of the same
    date (adjacent after the sort) joined with ``"\\n"``; the dates joined with ``", "``.

``utils/prompt_utils.py``, ``build_prompt_with_search_memory_chatglm_app``
    The prompt gets ``related_memory_content = "\\n" + "\\n".join(texts).strip() + "\\n"``, the
    dates, ``overall_personality`` (or ``""``) and, when the user has ``overall_history``, the
    sentence "The summary of your past memories with the user is: ..." (the app's template does
    not print it; other templates do). The app uses its memory prompt only when the history
    summary, the memory content and the personality are all non-empty, otherwise its new-user
    prompt (no memories).

Known MemoryBank defects *not* reproduced: the merged text is appended to the stored document
object itself, and the prefix removal edits it too, so later queries in the same session see
longer, already-merged documents (LangChain's in-memory docstore hands out its own objects);
every returned text carries the score of the last seed. Each read here is independent, as the
first query after MemoryBank loads its index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from .documents import READ_STRIP_PREFIX, Templates

__all__ = [
    "CHUNK_SIZE",
    "DEFAULT_TOP_K",
    "neighbour_offsets",
    "expand_seeds",
    "contiguous_runs",
    "MemoryPiece",
    "assemble",
    "group_by_date",
    "ResidentMemory",
    "ReadResult",
    "rewrite_query",
    "read_from_seeds",
]

Window = Literal["literal", "full"]

#: ``CHUNK_SIZE`` in ``memory_retrieval/configs/model_config.py``: the expansion budget (characters).
CHUNK_SIZE = 200
#: ``memory_search_top_k`` default in ``utils/sys_args.py`` (the CLI and app pass it as ``top_k``).
DEFAULT_TOP_K = 2


def neighbour_offsets(i: int, n: int, window: Window = "literal") -> range:
    """Offsets walked around seed position ``i`` in an index of ``n`` documents."""
    if window == "literal":
        return range(1, max(i, -i))  # local_doc_qa.py: len(docs) is 0 while seeds are expanded
    if window == "full":
        return range(1, max(i, n - 1 - i) + 1)
    raise ValueError(f"window must be 'literal' or 'full', got {window!r}")


def expand_seeds(
    seeds: Sequence[int],
    lengths: Sequence[int],
    dates: Sequence[str],
    *,
    budget: int = CHUNK_SIZE,
    window: Window = "literal",
) -> list[int]:
    """Seeds plus their same-date neighbours within the budget, sorted, without repeats.

    Parameters
    ----------
    seeds : sequence of int
        Seed positions (index order); ``-1`` entries (FAISS's "no result") are skipped.
    lengths : sequence of int, length n
        Character length of each document's text.
    dates : sequence of str, length n
        Each document's date.
    budget : int
        Characters a seed and its kept neighbours may add up to (MemoryBank: 200).
    window : {"literal", "full"}
        See the module notes.

    Returns
    -------
    list of int
        Sorted positions.
    """
    n = len(lengths)
    if len(dates) != n:
        raise ValueError(f"got {n} lengths but {len(dates)} dates")
    kept: set[int] = set()
    for seed in seeds:
        i = int(seed)
        if i == -1:
            continue
        if not 0 <= i < n:
            raise IndexError(f"seed position {i} is outside the index of {n} documents")
        kept.add(i)
        used = lengths[i]
        for k in neighbour_offsets(i, n, window):
            for j in (i + k, i - k):
                if not 0 <= j < n:
                    continue
                if used + lengths[j] > budget:
                    break  # leaves this offset's pair only, as in MemoryBank
                if dates[j] == dates[i]:
                    used += lengths[j]
                    kept.add(j)
    return sorted(kept)


def contiguous_runs(positions: Sequence[int]) -> list[list[int]]:
    """Cut sorted positions into runs of consecutive integers (``seperate_list`` there)."""
    runs: list[list[int]] = []
    for p in positions:
        if runs and runs[-1][-1] + 1 == p:
            runs[-1].append(p)
        else:
            runs.append([p])
    return runs


@dataclass(frozen=True)
class MemoryPiece:
    """One merged run of documents as it reaches the prompt.

    Attributes
    ----------
    date : str
        The date of the run's first document (a run can cross a date boundary when seeds of two
        dates sit next to each other in the index; MemoryBank dates it by its first document).
    text : str
        The documents' texts concatenated, the Chinese prefix of ``date`` removed, stripped.
    positions : tuple of int
        The run's positions in the index.
    """

    date: str
    text: str
    positions: tuple[int, ...]


def assemble(runs: Sequence[Sequence[int]], texts: Sequence[str], dates: Sequence[str]) -> list[MemoryPiece]:
    """Merge each run's texts, sort the runs by date (stable), clean their texts."""
    merged = [(dates[run[0]], "".join(texts[p] for p in run), tuple(run)) for run in runs]
    merged.sort(key=lambda item: item[0])  # list.sort is stable, as sorted() there
    return [
        MemoryPiece(date, text.replace(READ_STRIP_PREFIX.format(date=date), "").strip(), run)
        for date, text, run in merged
    ]


def group_by_date(pieces: Sequence[MemoryPiece]) -> tuple[list[str], list[str]]:
    """Join the texts of adjacent same-date pieces with newlines: ``(texts, dates)``."""
    texts: list[str] = []
    dates: list[str] = []
    for piece in pieces:
        if dates and dates[-1] == piece.date:
            texts[-1] += "\n" + piece.text
        else:
            texts.append(piece.text)
            dates.append(piece.date)
    return texts, dates


def rewrite_query(text: str, user_name: str, templates: Templates) -> str:
    """The search query the prompt builder makes: speaker keywords replaced by names."""
    return text.replace(templates.query_user_keyword, user_name).replace(templates.query_ai_keyword, "AI")


@dataclass(frozen=True)
class ResidentMemory:
    """What MemoryBank puts in every prompt, whatever the query.

    Attributes
    ----------
    user_name : str
    history_summary : str
        ``overall_history`` inside the language's sentence, or ``""`` when the user has none.
    personality : str
        ``overall_personality``, or ``""``.
    """

    user_name: str
    history_summary: str
    personality: str

    @classmethod
    def from_memory(cls, user_name: str, overall_history: str | None, overall_personality: str | None,
                    templates: Templates) -> "ResidentMemory":
        history = templates.overall_history.format(overall=overall_history) if overall_history is not None else ""
        return cls(user_name, history, overall_personality or "")


@dataclass(frozen=True)
class ReadResult:
    """One read: what MemoryBank would put in its prompt, plus how it was chosen.

    Attributes
    ----------
    query : str or None
        The search query as embedded (after :func:`rewrite_query`), if a text query was given.
    policy : str
        ``"native"`` (top-k by L2) or the selector's name.
    seeds : tuple of int
        Seed positions, in the order they were chosen.
    seed_distances : tuple of float
        Squared L2 distance of each seed to the query (FAISS ``IndexFlatL2``).
    pool : tuple of int
        The candidate pool (top-P by L2) a selector chose from; empty for native reads.
    expanded : tuple of int
        Seeds and kept neighbours, sorted.
    runs : tuple of tuple of int
        Runs of consecutive positions, each merged into one text.
    pieces : tuple of MemoryPiece
        The merged runs, sorted by date, cleaned.
    related_memos : tuple of str
        One text per date (what ``search_memory`` returns first).
    dates : tuple of str
        The dates, in order (``memo_dates`` is them joined with ``", "``).
    resident : ResidentMemory
    selection : object or None
        The selector's :class:`mempursuit_core.selectors.Selection`, for pursuit reads.
    """

    query: str | None
    policy: str
    seeds: tuple[int, ...]
    seed_distances: tuple[float, ...]
    pool: tuple[int, ...]
    expanded: tuple[int, ...]
    runs: tuple[tuple[int, ...], ...]
    pieces: tuple[MemoryPiece, ...]
    related_memos: tuple[str, ...]
    dates: tuple[str, ...]
    resident: ResidentMemory
    selection: Any = field(default=None, repr=False, compare=False)

    @property
    def memo_dates(self) -> str:
        return ", ".join(self.dates)

    @property
    def related_memory_content(self) -> str:
        """The memory block as the prompt builder formats it."""
        return "\n" + "\n".join(self.related_memos).strip() + "\n"

    @property
    def uses_memory_prompt(self) -> bool:
        """Whether the ChatGLM/BELLE app would use its memory prompt (else its new-user prompt)."""
        return bool(self.resident.history_summary and self.related_memory_content and self.resident.personality)

    def as_memorybank(self) -> tuple[list[str], str]:
        """``(date_docs, memo_dates)``: the return value of MemoryBank's ``search_memory``."""
        return list(self.related_memos), self.memo_dates

    def prompt_fields(self) -> dict[str, str]:
        """The values MemoryBank's prompt templates are formatted with (same names)."""
        return {
            "user_name": self.resident.user_name,
            "related_memory_content": self.related_memory_content,
            "memo_dates": self.memo_dates,
            "personality": self.resident.personality,
            "history_summary": self.resident.history_summary,
        }

    def __repr__(self) -> str:
        return (
            f"ReadResult(policy={self.policy!r}, seeds={list(self.seeds)}, dates={list(self.dates)}, "
            f"chars={sum(len(t) for t in self.related_memos)})"
        )


def read_from_seeds(
    seeds: Sequence[int],
    texts: Sequence[str],
    dates: Sequence[str],
    resident: ResidentMemory,
    *,
    seed_distances: Sequence[float] = (),
    pool: Sequence[int] = (),
    policy: str = "native",
    query: str | None = None,
    budget: int = CHUNK_SIZE,
    window: Window = "literal",
    selection: Any = None,
) -> ReadResult:
    """Everything after the seed choice: expansion, merging, date order, joining."""
    seeds = [int(s) for s in seeds if int(s) != -1]
    expanded = expand_seeds(seeds, [len(t) for t in texts], dates, budget=budget, window=window)
    runs = contiguous_runs(expanded)
    pieces = assemble(runs, texts, dates)
    memos, memo_dates = group_by_date(pieces)
    return ReadResult(
        query=query,
        policy=policy,
        seeds=tuple(seeds),
        seed_distances=tuple(float(d) for d in seed_distances),
        pool=tuple(int(p) for p in pool),
        expanded=tuple(expanded),
        runs=tuple(tuple(r) for r in runs),
        pieces=tuple(pieces),
        related_memos=tuple(memos),
        dates=tuple(memo_dates),
        resident=resident,
        selection=selection,
    )
