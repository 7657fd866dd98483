"""What an item's metadata gives its pool: the signals every document adapter reads the same
way, free of any framework (the read itself, :class:`~mempursuit_core.readpath.Reranker`
included, is :mod:`mempursuit_core.readpath`):

* :func:`metadata_signals`: item metadata -> signals, through a ``{signal: metadata key}``
  table (:data:`DEFAULT_METADATA_KEYS`), plus the document signals ``titles`` and
  ``session_ids`` from a title / file name / source (:func:`document_title`,
  :func:`document_source`);
* :func:`native_scores`: the framework's scores, or None when any is missing.
"""

from __future__ import annotations

import math
import posixpath
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["DEFAULT_METADATA_KEYS", "PATH_KEYS", "SOURCE_KEYS", "TITLE_KEYS", "document_source",
           "document_title", "metadata_signals", "native_scores"]

#: signal -> the metadata key it is read from (memories written by the framework's own memory)
DEFAULT_METADATA_KEYS: dict[str, str] = {"timestamps": "timestamp", "speakers": "speaker",
                                         "session_ids": "session_id"}
#: metadata keys naming a document, first found wins: a title as it is, a path or URL by its stem
TITLE_KEYS: tuple[str, ...] = ("title", "file_name", "filename", "file_path", "source", "url")
#: metadata keys naming the source document of a chunk, first found wins
SOURCE_KEYS: tuple[str, ...] = ("file_path", "source", "file_name", "filename", "url", "title")


#: the keys of :data:`TITLE_KEYS` that hold a path or URL (a title is their file's stem)
PATH_KEYS = frozenset(TITLE_KEYS) - {"title"}


def document_title(metadata: Mapping[str, Any] | None,
                   keys: Sequence[str] = TITLE_KEYS) -> str | None:
    """A document's title: ``metadata["title"]``, else the stem of its file name / path / URL
    (the one derivation every adapter uses).

    Parameters
    ----------
    metadata : mapping or None
    keys : sequence of str
        The keys read, first found wins (default :data:`TITLE_KEYS`); those of
        :data:`PATH_KEYS` give their file's stem, any other its value as it is.

    Returns
    -------
    str or None
        ``"handbook"`` for ``{"file_path": "/data/handbook.md"}``; None when no key holds a
        non-empty string.
    """
    for key in keys:
        value = (metadata or {}).get(key) if isinstance(metadata, Mapping) else None
        if isinstance(value, str) and value.strip():
            if key not in PATH_KEYS:
                return value.strip()
            name = posixpath.basename(value.replace("\\", "/").rstrip("/").split("?")[0])
            stem = name.rsplit(".", 1)[0] if "." in name.strip(".") else name
            return stem or value
    return None


def document_source(metadata: Mapping[str, Any] | None) -> str | None:
    """The source document a chunk comes from (its path, URL, file name or title), or None."""
    for key in SOURCE_KEYS:
        value = (metadata or {}).get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def metadata_signals(metadatas: Sequence[Mapping[str, Any] | None],
                     metadata_keys: Mapping[str, str] | None = None, *,
                     sources: Sequence[Any] | None = None) -> dict[str, list]:
    """Signals read from the items' metadata (each a list of length P, None where absent).

    Parameters
    ----------
    metadatas : sequence of mapping, length P
        Each item's metadata (None counts as empty).
    metadata_keys : mapping, optional
        ``{signal: metadata key}``, default :data:`DEFAULT_METADATA_KEYS`.
    sources : sequence, length P, optional
        Each item's source document where the framework knows it outside the metadata (a
        LlamaIndex node's ``ref_doc_id``); used after the metadata's :data:`SOURCE_KEYS`.

    Returns
    -------
    dict of str to list
        A signal is left out when no item has it. The table's signals, plus the document
        signals: ``titles`` (:func:`document_title`: str or None per item) and, where the
        table's ``session_ids`` key is absent from every item, ``session_ids``: one session per
        source document (:func:`document_source`, else ``sources``).
    """
    metadatas = [m or {} for m in metadatas]
    keys = DEFAULT_METADATA_KEYS if metadata_keys is None else metadata_keys
    out: dict[str, list] = {}
    for signal, key in keys.items():
        values = [m.get(key) for m in metadatas]
        if any(v is not None for v in values):
            out[signal] = values
    if "titles" not in out:
        titles = [document_title(m) for m in metadatas]
        if any(t is not None for t in titles):
            out["titles"] = titles
    if "session_ids" not in out:
        given = list(sources) if sources is not None else [None] * len(metadatas)
        if len(given) != len(metadatas):
            raise ValueError(f"sources has {len(given)} entries for {len(metadatas)} items")
        found = [document_source(m) or s for m, s in zip(metadatas, given)]
        if any(s is not None for s in found):
            out["session_ids"] = found
    return out


def native_scores(scores: Sequence[Any]) -> np.ndarray | None:
    """The framework's scores as a (P,) float array, or None when any is None or NaN."""
    scores = list(scores)
    if any(s is None or (isinstance(s, float) and math.isnan(s)) for s in scores):
        return None
    return np.asarray(scores, dtype=np.float64)
