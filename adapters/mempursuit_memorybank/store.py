"""A MemoryBank user's memory index: FAISS ``IndexFlatL2`` over MemoryBank's documents.

MemoryBank builds one LangChain FAISS store per user (``local_doc_qa.py``,
``LocalMemoryRetrieval.init_memory_vector_store`` -> ``FAISS.from_documents``: an
``IndexFlatL2`` whose ids follow the document order) and searches it by squared L2
(``similarity_search_with_score`` -> ``index.search(query, k)``). This store does the same with
``faiss-cpu`` and replaces only the seed choice when a read policy is used: the top-``pool``
documents by L2 form the pool, their stored vectors are read back from the index
(``reconstruct_batch``, never re-embedded), L2-normalised, and the selector picks ``k`` seeds;
expansion, merging, date order and joining are then exactly the native ones
(:mod:`mempursuit_memorybank.readpath`).

Index order. Neighbour expansion works on positions in MemoryBank's document order (dates in
history order; each date's turns, then its summary). Appending a turn to a date that already has
a summary, or a summary to an earlier date, would put the new vector at the end of the FAISS
index, while a full rebuild puts it inside. The store therefore keeps FAISS ids in insertion
order and a map from document positions (the rebuild order) to FAISS ids: an incremental append
embeds only the new documents, and every read sees the same positions as a full rebuild. When a
document changed or went away, the index is compacted from its own stored vectors (only changed
documents are embedded again).

Persistence. ``MemoryBankStore.open(path, user)`` keeps the index beside (never inside) the
memory file: ``<memory file>.mempursuit/<user>/index.faiss`` plus ``manifest.json`` (documents,
embedder, options; no pickle). A later ``open`` reloads it and embeds only what the file gained.
Nothing is written to the memory file unless :meth:`MemoryBankStore.save_memory` is called; it
merges with other writers under a file lock (:func:`~mempursuit_memorybank.memory.save_memory_file`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from mempursuit_core.adapter import (CandidatePool, DEFAULT_POOL, ReadOptions, ReadTrace,
                                     TraceSlot, blank_query, check_k, pool_signals, read_or_native,
                                     recording)

from .documents import Document, Templates, build_documents, detect_language, get_templates
from .embedding import EmbedderAdapter, resolve_embedder
from .memory import UserMemory, _exclusive, _is_single_user, check_user_name, parse_user, read_user, save_memory_file
from .readpath import (
    CHUNK_SIZE,
    DEFAULT_TOP_K,
    ReadResult,
    ResidentMemory,
    read_from_seeds,
    rewrite_query,
)

__all__ = ["MemoryBankStore", "DEFAULT_POOL_SIZE", "default_index_dir", "import_faiss",
           "memorybank_pool"]

logger = logging.getLogger(__name__)

#: Candidate pool for pursuit reads (the paper's P).
DEFAULT_POOL_SIZE = DEFAULT_POOL  # the old name
MANIFEST_FORMAT = "mempursuit-memorybank/1"


def import_faiss():
    """The ``faiss`` module, or :class:`AdapterNotInstalledError` naming the extra to install."""
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        from mempursuit_core.adapter import AdapterNotInstalledError, install_line

        raise AdapterNotInstalledError(
            f"the memorybank adapter needs faiss-cpu: {install_line('memorybank')}") from exc
    return faiss


def _slug(user: str) -> str:
    safe = re.sub(r"[^\w.-]+", "_", user.strip(), flags=re.UNICODE).strip("._") or "user"
    return f"{safe[:60]}-{hashlib.sha1(user.encode('utf-8')).hexdigest()[:8]}"


def default_index_dir(memory_path: str | os.PathLike, user: str) -> Path:
    """``<memory file>.mempursuit/<user slug>``: beside the memory file, one folder per user."""
    p = Path(memory_path)
    return p.with_name(p.name + ".mempursuit") / _slug(user)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _documents_sha256(docs: Any) -> str:
    """SHA-256 of a manifest's ``documents`` as compact JSON (lists and tuples alike)."""
    text = json.dumps(docs, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _manifest_documents_problem(docs: Any) -> str | None:
    """What is wrong with a manifest's ``documents`` list, or ``None``."""
    if not isinstance(docs, list):
        return f"'documents' must be a list, got {type(docs).__name__}"
    for i, doc in enumerate(docs):
        if not (isinstance(doc, list) and len(doc) == 3):
            return f"documents[{i}] must be a [key, text, date] list"
        key, text, date = doc
        if not (isinstance(key, list) and len(key) == 3 and isinstance(key[0], str)
                and key[1] in ("turn", "summary") and isinstance(key[2], int) and not isinstance(key[2], bool)):
            return f"documents[{i}] has a malformed key {key!r}"
        if not (isinstance(text, str) and isinstance(date, str)):
            return f"documents[{i}] needs a string text and date"
    return None


def _normalise_rows(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def memorybank_pool(positions: np.ndarray, distances: np.ndarray, vectors: np.ndarray,
                    texts: Sequence[str], dates: Sequence[str], query_vector: np.ndarray,
                    query: str | None = None) -> CandidatePool:
    """MemoryBank's L2 search result for one query as a :class:`CandidatePool`.

    The one read path of this adapter: :meth:`MemoryBankStore.candidate_pool` (and so
    ``read``) and the evaluation harness's MemoryBank store both build their pools here.

    Parameters
    ----------
    positions : ndarray of int, shape (P,)
        Document positions (MemoryBank's index order) of the hits, nearest first.
    distances : ndarray, shape (P,)
        Their squared L2 distances.
    vectors : ndarray, shape (P, d)
        Their stored vectors, read back from the index.
    texts, dates : sequence of str, one per document of the index
        The documents' texts and dates (MemoryBank's ``source``).
    query_vector : ndarray, shape (d,)
    query : str, optional
        The query text (after MemoryBank's rewrite).

    Returns
    -------
    CandidatePool
        ``items`` = positions; unit-length vectors and query; ``native_scores = -distance``;
        signals: ``texts``, ``query_text``, ``timestamps`` and ``session_ids`` (the document's
        date: MemoryBank keeps one history per day), ``positions`` (its index order, the order
        the turns were written) and ``dense`` (cosine), plus tf-idf features. No speakers:
        every turn document holds both the user's and the AI's message.
    """
    positions = np.asarray(positions, dtype=np.int64).reshape(-1)
    cand = _normalise_rows(np.asarray(vectors, dtype=np.float32).reshape(len(positions), -1))
    qn = _normalise_rows(np.asarray(query_vector, dtype=np.float32).reshape(1, -1))[0]
    days = [dates[i] for i in positions]
    signals = pool_signals([texts[i] for i in positions], query or "", timestamps=days,
                           session_ids=days, positions=positions,
                           dense=(cand @ qn).astype(np.float64))
    return CandidatePool(positions.tolist(), qn, cand,
                         native_scores=-np.asarray(distances, dtype=np.float64).reshape(-1),
                         signals=signals)


class MemoryBankStore:
    """One user's MemoryBank memory with its FAISS index and both read policies.

    Build it with :meth:`open` (a memory file, persisted index) or :meth:`from_memory` (a dict or
    :class:`UserMemory`, nothing on disk).

    Parameters
    ----------
    memory : UserMemory
    language : {"auto", "en", "cn", "cn-forget"} or Templates
        MemoryBank's document language; ``"auto"`` looks at the turns (CJK share).
    embedder : object, str or None
        ``encode(texts) -> (n, d)``; a name for ``mempursuit_core.embed.get_embedder``; or
        ``None`` for the packaged MiniLM.
    summary_value : {"literal", "content"}
        ``"literal"`` writes a ``{"content": ...}`` summary as MemoryBank's f-string does (its
        Python ``str()``); ``"content"`` writes its text.
    newline_to_space : bool
        Replace newlines by spaces in what is embedded (LangChain's ``HuggingFaceEmbeddings``).
    budget : int
        Neighbour-expansion budget in characters (MemoryBank's ``CHUNK_SIZE``, 200).
    window : {"literal", "full"}
        Neighbour walk: MemoryBank's literal one, or the whole index (see ``readpath``).
    rewrite_queries : bool
        Replace the speaker keywords in a text query by the user name and ``"AI"`` before
        embedding, as MemoryBank's prompt builders do.
    """

    def __init__(
        self,
        memory: UserMemory,
        *,
        language: str | Templates = "auto",
        embedder: Any = None,
        summary_value: str = "literal",
        newline_to_space: bool = True,
        budget: int = CHUNK_SIZE,
        window: str = "literal",
        rewrite_queries: bool = True,
        k: int | None = None,
        pool: int | None = None,
        policy: Any = None,
        policy_options: Mapping[str, Any] | None = None,
        strict: bool | None = None,
        budget_tokens: int | None = None,
    ):
        if summary_value not in ("literal", "content"):
            raise ValueError(f"summary_value must be 'literal' or 'content', got {summary_value!r}")
        if window not in ("literal", "full"):
            raise ValueError(f"window must be 'literal' or 'full', got {window!r}")
        if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget < 0:
            raise ValueError(f"budget must be a non-negative int, got {budget!r}")
        self.memory = memory
        if isinstance(language, str) and language == "auto":
            language = detect_language(memory)
        self.templates = get_templates(language)
        self.embedder: EmbedderAdapter = resolve_embedder(embedder)
        self.summary_value = summary_value
        self.newline_to_space = bool(newline_to_space)
        self.budget = int(budget)
        self.window = window
        self.rewrite_queries = bool(rewrite_queries)
        self._trace = TraceSlot()
        # how read() chooses its seeds unless a read says otherwise (the same for every adapter)
        self.options = ReadOptions.build("MemoryBankStore", k=k, pool=pool, policy=policy,
                                         policy_options=policy_options, strict=strict,
                                         budget_tokens=budget_tokens)
        self.memory_path: Path | None = None
        self.index_dir: Path | None = None
        self.status = "empty"
        self.embedded_count = 0  # documents embedded by this object (for tests and reports)
        self.unindexed_summaries: list[str] = []
        self._index = None
        self._dirty = False
        self._stored: list[Document] = []  # per FAISS id
        self._docs: list[Document] = []  # per position (MemoryBank's order)
        self._fids = np.zeros(0, dtype=np.int64)  # position -> FAISS id
        self._pos = np.zeros(0, dtype=np.int64)  # FAISS id -> position

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_memory(cls, memory: UserMemory | Mapping, user: str | None = None, **options: Any) -> "MemoryBankStore":
        """A store over an in-memory user (a :class:`UserMemory`, a whole memory dict, or one
        user's dict with ``user`` naming it); nothing is written anywhere."""
        if not isinstance(memory, UserMemory):
            if not isinstance(memory, Mapping):
                raise TypeError(f"memory must be a UserMemory or a mapping, got {type(memory).__name__}")
            check_user_name(user)
            if user is not None and _is_single_user(memory):
                memory = parse_user(user, memory)
            else:
                memory = read_user(memory, user)
        store = cls(memory, **options)
        store._sync()
        store.status = "built"
        return store

    @classmethod
    def open(
        cls,
        path: str | os.PathLike,
        user: str | None = None,
        *,
        index_dir: str | os.PathLike | None = None,
        persist: bool = True,
        rebuild: bool = False,
        **options: Any,
    ) -> "MemoryBankStore":
        """Read ``user`` from the memory file at ``path`` and load or build its index.

        Parameters
        ----------
        path : path
            A MemoryBank memory JSON file (read only).
        user : str, optional
            The user's key (may be omitted when the file holds one user).
        index_dir : path, optional
            Where the index lives; default :func:`default_index_dir` (beside the memory file).
        persist : bool
            Load an existing index from ``index_dir`` and save the built / updated one there.
        rebuild : bool
            Ignore an existing index and embed everything again.
        **options
            As for the class.

        Raises
        ------
        FileNotFoundError, MemoryBankFormatError, UnknownUserError
            For a missing or unreadable file or an unknown user.
        TypeError
            When ``user`` is not a ``str`` (or ``None``).
        """
        check_user_name(user)
        memory = read_user(path, user)
        store = cls(memory, **options)
        store.memory_path = Path(path)
        store.index_dir = Path(index_dir) if index_dir is not None else default_index_dir(path, memory.name)
        loaded = False
        if persist and (store.index_dir.is_file() or store.index_dir.is_symlink()
                        and not store.index_dir.is_dir()):
            store._reject(store.index_dir, "the index folder's path is a file; the index is kept "
                                           "in memory only: remove that file or pass index_dir=...")
            persist = False
        if persist and not rebuild:
            loaded = store._try_load(store.index_dir)
        before = store.embedded_count
        store._sync()
        if loaded:
            added = store.embedded_count - before
            store.status = "loaded" if not added else f"loaded, {added} new documents embedded"
        elif store.status == "empty":
            store.status = "built"
        if persist and (not loaded or store.embedded_count != before or store._dirty):
            store.save_index(store.index_dir)
        return store

    # ------------------------------------------------------------------ documents and index
    @property
    def documents(self) -> list[Document]:
        """Documents in MemoryBank's index order (positions)."""
        return list(self._docs)

    @property
    def language(self) -> str:
        return self.templates.language

    @property
    def user(self) -> str:
        return self.memory.name

    def __len__(self) -> int:
        return len(self._docs)

    @property
    def dim(self) -> int:
        return self.embedder.dim

    def resident(self) -> ResidentMemory:
        """The memory MemoryBank puts in every prompt (history summary, personality)."""
        return ResidentMemory.from_memory(
            self.memory.name, self.memory.overall_history, self.memory.overall_personality, self.templates
        )

    def _embed_docs(self, docs: Sequence[Document]) -> np.ndarray:
        texts = [d.text.replace("\n", " ") if self.newline_to_space else d.text for d in docs]
        out = self.embedder.encode(texts) if texts else np.zeros((0, self.dim), dtype=np.float32)
        self.embedded_count += len(texts)
        return out

    def embed_query(self, query: str) -> np.ndarray:
        """The query vector, shape ``(d,)`` (after MemoryBank's keyword rewrite, if enabled)."""
        if not isinstance(query, str):
            raise TypeError(f"query must be a str, got {type(query).__name__}")
        text = self._query_text(query)
        if self.newline_to_space:
            text = text.replace("\n", " ")
        return self.embedder.encode([text])[0]

    def _query_text(self, query: str) -> str:
        return rewrite_query(query, self.memory.name, self.templates) if self.rewrite_queries else query

    def _new_index(self, d: int):
        return import_faiss().IndexFlatL2(int(d))

    def _sync(self) -> None:
        """Bring the index in line with ``self.memory``: embed only new or changed documents."""
        docset = build_documents(self.memory, self.templates, summary_value=self.summary_value, warn=False)
        self.unindexed_summaries = list(docset.unindexed_summaries)
        docs = docset.documents
        lookup = {(d.key, d.text): fid for fid, d in enumerate(self._stored)}
        fids = [lookup.get((d.key, d.text), -1) for d in docs]
        new_pos = [p for p, f in enumerate(fids) if f < 0]
        self._dirty = bool(new_pos)
        if self._index is not None and len({f for f in fids if f >= 0}) == len(self._stored):
            # pure append: new vectors go to the end of the FAISS index
            if new_pos:
                vecs = self._embed_docs([docs[p] for p in new_pos])
                start = self._index.ntotal
                self._index.add(vecs)
                for j, p in enumerate(new_pos):
                    fids[p] = start + j
                self._stored.extend(docs[p] for p in new_pos)
        else:
            # first build, or something changed / went away: lay the index out in document order,
            # reusing stored vectors and embedding only what is new
            d = self.dim if self._index is None else self._index.d
            mat = np.zeros((len(docs), d), dtype=np.float32)
            keep = [p for p, f in enumerate(fids) if f >= 0]
            if keep:
                mat[keep] = self._reconstruct(np.asarray([fids[p] for p in keep], dtype=np.int64))
            if new_pos:
                mat[new_pos] = self._embed_docs([docs[p] for p in new_pos])
            if mat.shape[1] != d:
                raise ValueError(f"embedder dimension {mat.shape[1]} differs from the index's {d}")
            index = self._new_index(d)
            if len(docs):
                index.add(mat)
            self._index = index
            self._stored = list(docs)
            fids = list(range(len(docs)))
            self._dirty = True
        self._docs = docs
        self._fids = np.asarray(fids, dtype=np.int64)
        self._pos = np.empty(len(self._stored), dtype=np.int64)
        self._pos[self._fids] = np.arange(len(docs), dtype=np.int64)

    def _reconstruct(self, fids: np.ndarray) -> np.ndarray:
        if len(fids) == 0:
            return np.zeros((0, self._index.d), dtype=np.float32)
        return np.asarray(self._index.reconstruct_batch(np.ascontiguousarray(fids, dtype=np.int64)),
                          dtype=np.float32)

    def vectors(self, positions: Sequence[int] | None = None) -> np.ndarray:
        """Stored vectors read back from the index, rows in position order: shape ``(n, d)``."""
        pos = np.arange(len(self._docs)) if positions is None else np.asarray(positions, dtype=np.int64)
        return self._reconstruct(self._fids[pos])

    # ------------------------------------------------------------------ appends
    def add_turns(self, turns: Sequence[tuple[str, str, str]]) -> None:
        """Append ``(date, query, response)`` turns; embeds only the new documents.

        Dates are MemoryBank's ``%Y-%m-%d`` strings; a new date goes after the existing ones
        (the order of the history object, as ``save_local_memory`` does).
        """
        from .memory import Turn

        checked = []
        for i, item in enumerate(turns):
            if not (isinstance(item, (tuple, list)) and len(item) == 3 and all(isinstance(x, str) for x in item)):
                raise TypeError(f"turns[{i}] must be a (date, query, response) tuple of strings, got {item!r}")
            checked.append(tuple(item))
        hist = self.memory.raw.setdefault("history", {})
        if not isinstance(hist, dict):
            hist = self.memory.raw["history"] = {}
        for date, query, response in checked:
            self.memory.history.setdefault(date, []).append(Turn(query, response))
            hist.setdefault(date, []).append({"query": query, "response": response})
        self._sync()

    def add_turn(self, query: str, response: str, date: str | None = None) -> None:
        """Append one turn under ``date`` (default today, ``%Y-%m-%d``, as MemoryBank does)."""
        self.add_turns([(date or time.strftime("%Y-%m-%d", time.localtime()), query, response)])

    def add_summary(self, date: str, summary: str | Mapping, *, replace: bool = False) -> None:
        """Add (or with ``replace=True`` replace) the summary of ``date``.

        ``summary`` is a string or ``{"content": str}`` (what ``summarize_memory.py`` writes). A
        date without history keeps its summary in the memory but, as in MemoryBank, unindexed.
        """
        from .memory import _parse_summary_value

        value = _parse_summary_value(summary, f"summary for {date!r}")
        if date in self.memory.summary and not replace:
            raise ValueError(f"{date!r} already has a summary; pass replace=True to replace it")
        self.memory.summary[date] = value
        raw = self.memory.raw.get("summary")
        if not isinstance(raw, dict):
            raw = self.memory.raw["summary"] = {}
        raw[date] = value
        self._sync()

    def set_overall(self, *, history: str | None = None, personality: str | None = None) -> None:
        """Set ``overall_history`` / ``overall_personality`` (resident in the prompt, not indexed)."""
        if history is not None:
            self.memory.overall_history = self.memory.raw["overall_history"] = str(history)
        if personality is not None:
            self.memory.overall_personality = self.memory.raw["overall_personality"] = str(personality)

    # ------------------------------------------------------------------ persistence
    def _manifest(self) -> dict:
        return {
            **self._manifest_settings(),
            "dim": int(self._index.d) if self._index is not None else self.dim,
            "documents": [[list(d.key), d.text, d.date] for d in self._stored],
        }

    def save_index(self, index_dir: str | os.PathLike | None = None) -> Path:
        """Write ``index.faiss`` and ``manifest.json`` to ``index_dir`` (default: the store's).

        Each file goes through a unique temporary file and an atomic rename, under the same
        exclusive lock (``<index_dir>.lock``) that loading takes, so a concurrent ``open`` never
        pairs one writer's index with another's manifest; the manifest records the index file's
        SHA-256, which a load checks.
        """
        target = Path(index_dir) if index_dir is not None else self.index_dir
        if target is None:
            raise ValueError("no index_dir: pass one (the store was not opened from a file)")
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OSError(
                f"cannot create the index folder {target} ({exc}); pass index_dir=... or persist=False"
            ) from exc
        faiss = import_faiss()
        with _exclusive(os.path.realpath(target)):
            fd, tmp_index = tempfile.mkstemp(prefix=".index.faiss.", suffix=".tmp", dir=target)
            os.close(fd)
            fd, tmp_manifest = tempfile.mkstemp(prefix=".manifest.json.", suffix=".tmp", dir=target)
            try:
                faiss.write_index(self._index, tmp_index)
                manifest = self._manifest()
                manifest.update(index_sha256=_sha256(Path(tmp_index)),
                                documents_sha256=_documents_sha256(manifest["documents"]))
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    json.dump(manifest, fh, ensure_ascii=False)
                for name in ("index.faiss", "manifest.json"):  # a folder in a file's place
                    if (target / name).is_dir() and not (target / name).is_symlink():
                        shutil.rmtree(target / name)
                os.replace(tmp_index, target / "index.faiss")
                os.replace(tmp_manifest, target / "manifest.json")
            except BaseException:
                for tmp in (tmp_index, tmp_manifest):
                    try:
                        os.unlink(tmp)
                    except FileNotFoundError:
                        pass
                raise
        self._dirty = False
        return target

    def _try_load(self, index_dir: Path) -> bool:
        """Load the persisted index, or return ``False`` (the caller rebuilds).

        A folder with neither file is a first build. A damaged or unusable folder (one file
        missing, a manifest that is not an object or whose documents are malformed or edited
        (their SHA-256 is recorded), an index file that is empty, truncated, not a FAISS flat L2
        index, not the file the manifest names, or whose vectors are not finite, or a dimension
        other than the embedder's) is rebuilt with
        one warning on this module's logger naming the folder and the reason; changed settings
        (embedder, templates, ...) rebuild with an ``info`` line. Either way ``status`` says why.
        """
        manifest_path, index_path = index_dir / "manifest.json", index_dir / "index.faiss"
        present = [p.name for p in (index_path, manifest_path) if p.exists()]
        if not present:
            return False
        if len(present) == 1:
            return self._reject(index_dir, f"only {present[0]} is there")
        folders = [p.name for p in (index_path, manifest_path) if p.is_dir()]
        if folders:
            return self._reject(index_dir, f"{folders[0]} is a folder, not a file")
        with _exclusive(os.path.realpath(index_dir), required=False):  # a read-only folder loads unlocked
            return self._load_locked(index_dir, manifest_path, index_path)

    def _load_locked(self, index_dir: Path, manifest_path: Path, index_path: Path) -> bool:
        try:
            manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as exc:
            return self._reject(index_dir, f"manifest.json is unreadable: {exc}")
        if not isinstance(manifest, dict):
            return self._reject(index_dir, f"manifest.json holds a JSON {type(manifest).__name__}, not an object")
        for key, value in self._manifest_settings().items():
            if manifest.get(key) != value:
                self.status = f"rebuilt: {key} changed"
                logger.info("MemoryBank index in %s not used (%s changed); rebuilding it", index_dir, key)
                return False
        docs = manifest.get("documents")
        problem = _manifest_documents_problem(docs)
        if problem:
            return self._reject(index_dir, f"manifest.json: {problem}")
        dim = manifest.get("dim")
        if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
            return self._reject(index_dir, f"manifest.json: 'dim' must be a positive int, got {dim!r}")
        if dim != self.dim:
            return self._reject(
                index_dir, f"the index has dimension {dim}, embedder {self.embedder.name!r} gives {self.dim}"
            )
        want_sha = manifest.get("index_sha256")
        if not isinstance(want_sha, str):
            return self._reject(index_dir, "manifest.json has no 'index_sha256', so nothing says "
                                           "index.faiss is the index it was written with")
        if _sha256(index_path) != want_sha:
            return self._reject(index_dir, "index.faiss is not the file manifest.json was written with "
                                           "(its SHA-256 differs: truncated, overwritten or damaged)")
        faiss = import_faiss()
        try:
            index = faiss.read_index(str(index_path))
        except Exception as exc:  # FAISS raises RuntimeError with its C++ message
            return self._reject(index_dir, f"index.faiss is unreadable: {exc}")
        if not (isinstance(index, faiss.IndexFlat) and index.metric_type == faiss.METRIC_L2):
            return self._reject(index_dir, f"index.faiss is a {type(index).__name__}, not a flat L2 index")
        if index.ntotal != len(docs) or index.d != dim:
            return self._reject(
                index_dir, f"index.faiss holds {index.ntotal} vectors of dimension {index.d}, "
                           f"manifest.json {len(docs)} documents of dimension {dim}"
            )
        if index.ntotal and not np.isfinite(index.reconstruct_n(0, index.ntotal)).all():
            return self._reject(index_dir, "index.faiss holds non-finite vectors")
        # last: an edited document (its text, date or key changed in place, the shapes intact)
        # would pair a vector with a text it was not embedded from
        want_docs = manifest.get("documents_sha256")
        if not isinstance(want_docs, str):
            return self._reject(index_dir, "manifest.json has no 'documents_sha256', so nothing "
                                           "says its documents are the ones the index was built from")
        if _documents_sha256(docs) != want_docs:
            return self._reject(index_dir, "manifest.json's documents were edited (their SHA-256 "
                                           "differs from the one written with the index)")
        self._index = index
        self._stored = [Document(tuple(k), text, date) for k, text, date in docs]
        return True

    def _reject(self, index_dir: Path, reason: str) -> bool:
        reason = " ".join(str(reason).split())
        if len(reason) > 300:
            reason = reason[:297] + "..."
        self.status = f"rebuilt: {reason}"
        logger.warning("MemoryBank index in %s not used (%s); rebuilding it", index_dir, reason)
        return False

    def _manifest_settings(self) -> dict:
        return {
            "format": MANIFEST_FORMAT,
            "user": self.memory.name,
            "templates": asdict(self.templates),
            "summary_value": self.summary_value,
            "newline_to_space": self.newline_to_space,
            "embedder": self.embedder.name,
        }

    def save_memory(self, path: str | os.PathLike | None = None) -> Path:
        """Write this user's memory (with appends) into ``path`` (default: the file it came from).

        This is the only method that writes a memory file, through
        :func:`~mempursuit_memorybank.memory.save_memory_file`: under an exclusive lock, merged
        with what other writers (threads, processes, other stores) saved since this store read
        the file, atomically, keeping the file's mode and symlinks. Every other user in the file
        is kept as it is on disk.

        Saving to the file the store was opened from makes the store's memory what was written
        (other writers' turns and summaries included) and brings the index in line, embedding
        only the documents it gained. Saving to any other file merges the store's whole memory
        into that file (no common ancestor there) and leaves the store as it is.

        Raises
        ------
        ValueError
            When no ``path`` is given and the store was not opened from a file.
        MemoryBankFormatError, OSError
            As :func:`~mempursuit_memorybank.memory.save_memory_file` (the file is left as it is).
        """
        target = Path(path) if path is not None else self.memory_path
        if target is None:
            raise ValueError("no path: pass one (the store was not opened from a file)")
        if self.memory_path is not None and os.path.realpath(target) == os.path.realpath(self.memory_path):
            save_memory_file(target, self.memory)
            self._sync()
        else:
            save_memory_file(target, dataclasses.replace(self.memory, base=None))
        return target

    # ------------------------------------------------------------------ reads
    def search(self, query_vector: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` positions by squared L2 and their distances (FAISS ``IndexFlatL2.search``).

        Returns
        -------
        positions : ndarray of int64, shape (m,)
            ``m = min(k, len(self))``, nearest first.
        distances : ndarray of float32, shape (m,)
        """
        k = check_k(k)
        q = np.ascontiguousarray(np.asarray(query_vector, dtype=np.float32).reshape(1, -1))
        if q.shape[1] != self._index.d:
            raise ValueError(f"query vector has dimension {q.shape[1]}, the index {self._index.d}")
        if not np.isfinite(q).all():
            raise ValueError("query vector has non-finite values")
        if self._index.ntotal == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        dist, ids = self._index.search(q, min(k, self._index.ntotal))
        ok = ids[0] >= 0
        return self._pos[ids[0][ok]], dist[0][ok]

    def candidate_pool(self, query_vector: np.ndarray, size: int, *,
                       query: str | None = None) -> CandidatePool:
        """MemoryBank's top-``size`` documents for ``query_vector`` as a pool
        (:func:`memorybank_pool`; ``items`` are document positions)."""
        pool, dist = self.search(query_vector, size)
        return memorybank_pool(pool, dist, self.vectors(pool), [d.text for d in self._docs],
                               [d.date for d in self._docs], query_vector, query)

    def read(
        self,
        query: str,
        k: int | None = None,
        *,
        policy: Any = None,
        pool: int | None = None,
        strict: bool | None = None,
        policy_options: Mapping[str, Any] | None = None,
        budget: int | None = None,
        window: str | None = None,
        **options: Any,
    ) -> ReadResult:
        """What MemoryBank puts in its prompt for ``query``.

        Parameters
        ----------
        query : str
        k : int, optional
            Number of seeds (MemoryBank's ``top_k``; its CLI default is 2, the default here
            unless the store was given ``k``).
        policy : None, str or Selector
            How the ``k`` seeds are chosen; ``None`` uses the store's (default
            ``mempursuit_core.DEFAULT_POLICY``). ``"native"`` is MemoryBank's own top-``k`` by
            L2; any other selector name (``"mempursuit"``, the paper's rule, ``"mmr"``, ...) or
            object chooses the ``k`` seeds from the top-``pool`` pool.
        pool, strict, policy_options : optional
            Override the store's read options for this read (:class:`~mempursuit_core.options.
            ReadOptions`: ``pool`` = P, default 200; ``strict=False`` falls back to
            MemoryBank's own seeds with a logged warning when the policy fails).
        budget, window : optional
            Override the store's expansion settings for this read.
        **options
            Selector options.
        """
        return self.read_vector(
            self.embed_query(query), k, policy=policy, pool=pool, strict=strict,
            policy_options=policy_options, budget=budget, window=window,
            query=self._query_text(query) if query.strip() else query, **options,
        )

    def _read_options(self, given: dict[str, Any], policy_options, extra: dict[str, Any]
                      ) -> ReadOptions:
        """This read's options: what it gives, else the store's."""
        if all(v is None for v in given.values()) and policy_options is None and not extra:
            return self.options
        o = self.options
        extra = dict(extra)
        tokens = extra.pop("budget_tokens", o.budget_tokens)
        if policy_options is None and not extra and given["policy"] is None:
            policy_options = o.policy_options  # the store's policy, with its options
        return ReadOptions(
            k=o.k if given["k"] is None else given["k"],
            pool=o.pool if given["pool"] is None else given["pool"],
            policy=o.policy if given["policy"] is None else given["policy"],
            policy_options={**(policy_options or {}), **extra},
            strict=o.strict if given["strict"] is None else given["strict"],
            budget_tokens=tokens,
        )

    def read_vector(
        self,
        query_vector: np.ndarray,
        k: int | None = None,
        *,
        policy: Any = None,
        pool: int | None = None,
        strict: bool | None = None,
        policy_options: Mapping[str, Any] | None = None,
        budget: int | None = None,
        window: str | None = None,
        query: str | None = None,
        **options: Any,
    ) -> ReadResult:
        """:meth:`read` for a query vector of shape ``(d,)`` computed elsewhere."""
        opts = self._read_options(dict(k=k, pool=pool, policy=policy, strict=strict),
                                  policy_options, options)
        k = check_k(opts.k if opts.k is not None else DEFAULT_TOP_K)
        budget = self.budget if budget is None else budget
        window = self.window if window is None else window
        texts = [d.text for d in self._docs]
        dates = [d.date for d in self._docs]
        common = dict(query=query, budget=budget, window=window)

        def native() -> ReadResult:
            seeds, dist = self.search(query_vector, k)
            return read_from_seeds(seeds, texts, dates, self.resident(), seed_distances=dist,
                                   policy="native", **common)

        if opts.is_native or blank_query(query, "MemoryBankStore", log=logger):
            with recording(self._trace, int, _seeds) as record:
                got = native()
                record.done(got)
            return got
        sel = opts.selector()
        name = getattr(sel, "name", "selector")

        def ours() -> ReadResult:
            cand = self.candidate_pool(query_vector, opts.pool_size(k), query=query)
            pool = np.asarray(cand.items, dtype=np.int64)
            if len(pool) == 0:
                return read_from_seeds([], texts, dates, self.resident(), pool=pool,
                                       policy=name, **common)
            chosen = cand.select(sel, k)
            dist = -cand.native_scores
            return read_from_seeds(pool[chosen.order], texts, dates, self.resident(),
                                   seed_distances=dist[chosen.order], pool=pool, policy=name,
                                   selection=chosen.selection, **common)

        return read_or_native(ours, native, strict=opts.strict, framework="MemoryBank",
                              log=logger, trace=self._trace, ids=int, result_items=_seeds)

    @property
    def last_trace(self) -> ReadTrace | None:
        """What the last read on this thread did (a :class:`~mempursuit_core.trace.ReadTrace`:
        the seeds and the pool by document position), or None."""
        return self._trace.last

    def __repr__(self) -> str:
        return (f"<MemoryBankStore user={self.memory.name!r} language={self.language!r} "
                f"documents={len(self._docs)} embedder={self.embedder.name!r} status={self.status!r}>")


def _seeds(result: ReadResult) -> tuple[int, ...]:
    """A read's seeds, in the order they were chosen (the trace's final order)."""
    return result.seeds
