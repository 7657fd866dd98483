"""A rerank request's body -> a checked :class:`RerankRequest`, or one :class:`BadRequest`.

Cohere's fields (``query``, ``documents``, ``top_n``, ``model``, ``return_documents``; the
rest of Cohere's are accepted and ignored) and the extension fields a client sends when it has
them: ``query_vector`` and ``vectors`` (the stored vectors, together: nothing is embedded;
JSON numbers, or each a base64 string of little-endian float32 values, as OpenAI's
``encoding_format="base64"``: a quarter of the bytes and no number parsing),
``titles`` (one per document, a string or null), ``policy`` and ``policy_options``.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["BadRequest", "RerankRequest", "parse_request"]


class BadRequest(Exception):
    """Input the service refuses: an HTTP status (4xx) and a one-line message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass
class RerankRequest:
    """A checked request.

    Attributes
    ----------
    query : str
    texts : list of str, length P
    top_n : int
        ``K``: at most P.
    titles : list of (str or None), length P, or None
    query_vector : ndarray, shape (d,), or None
    vectors : ndarray, shape (P, d), or None
    policy : str or None
        None: the service's default.
    policy_options : dict
    return_documents : bool
    budget_tokens : int or None
        A context budget in tokens: the results are the longest prefix of the policy's
        ``top_n`` whose texts fit (the core's token count), never more.
    """

    query: str
    texts: list[str]
    top_n: int
    titles: list[str | None] | None = None
    query_vector: np.ndarray | None = None
    vectors: np.ndarray | None = None
    policy: str | None = None
    policy_options: dict[str, Any] = field(default_factory=dict)
    return_documents: bool = False
    budget_tokens: int | None = None


def _document_text(doc: Any, i: int) -> tuple[str, str | None]:
    """A document's text and title: a string, or an object with ``text`` (and ``title``)."""
    if isinstance(doc, str):
        return doc, None
    if isinstance(doc, dict) and isinstance(doc.get("text"), str):
        title = doc.get("title")
        return doc["text"], title if isinstance(title, str) else None
    raise BadRequest(422, f"documents[{i}] must be a string or an object with a string 'text'")


def _base64_floats(text: str, what: str) -> np.ndarray:
    """A base64 string of little-endian float32 values -> a 1-d float32 array."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise BadRequest(422, f"{what} is a string but not base64") from None
    if not raw or len(raw) % 4:
        raise BadRequest(422, f"{what}: {len(raw)} bytes, not a whole number of float32 values")
    out = np.frombuffer(raw, dtype="<f4")
    if not np.isfinite(out).all():
        raise BadRequest(422, f"{what} must hold finite numbers (no NaN, no infinity)")
    return out


def _stored_vectors(query_vector: Any, vectors: Any, P: int) -> tuple[np.ndarray, np.ndarray]:
    """The checked ``(query_vector (d,), vectors (P, d))``, from JSON numbers or base64."""
    if isinstance(query_vector, str) != isinstance(vectors, str):
        raise BadRequest(422, "query_vector and vectors must be both lists of numbers or both "
                              "base64 strings")
    if isinstance(vectors, str):
        query_vector = _base64_floats(query_vector, "query_vector")
        flat = _base64_floats(vectors, "vectors")
        d = query_vector.shape[0]
        if flat.shape[0] != P * d:
            raise BadRequest(422, f"vectors holds {flat.shape[0]} float32 values, not {P} "
                                  f"documents x {d} (the query_vector's size): every vector "
                                  "must have the same size")
        return query_vector, flat.reshape(P, d)
    query_vector = _finite_floats([query_vector], "query_vector", one=True)[0]
    if not isinstance(vectors, list) or len(vectors) != P:
        raise BadRequest(422, f"vectors must be a list of {P} vectors, one per document")
    d = query_vector.shape[0]
    if not P:
        return query_vector, np.zeros((0, d))
    checked = _finite_floats(vectors, "vectors")
    if checked is None or checked.shape[1] != d:
        i = next(i for i, v in enumerate(vectors) if len(v) != d)
        raise BadRequest(422, f"vectors[{i}] has {len(vectors[i])} numbers, the query_vector "
                              f"{d}: every vector must have the same size")
    return query_vector, checked


def _finite_floats(rows: list, what: str, *, one: bool = False) -> np.ndarray | None:
    """Lists of finite JSON numbers -> a float64 array of shape (n, d); None when the rows'
    lengths differ (the caller names the first of another size). ``one``: ``rows`` holds
    the single vector named ``what`` (the query's).

    The types are checked before numpy sees them (numpy would read ``"1"`` and ``true`` as
    numbers, and ``null`` as NaN)."""
    types: set = set()
    for i, row in enumerate(rows):
        if not isinstance(row, list) or not row:
            raise BadRequest(422, f"{what if one else f'{what}[{i}]'} must be a non-empty "
                                  "list of numbers")
        types.update(map(type, row))
    if not types <= {int, float}:
        odd = next(t for t in types if t not in (int, float))
        raise BadRequest(422, f"{what} must hold numbers only, got "
                              f"{_TYPE_NAMES.get(odd, odd.__name__)}")
    if len({len(row) for row in rows}) > 1:
        return None
    try:
        out = np.asarray(rows, dtype=np.float64)
    except OverflowError:  # an integer beyond float64
        out = np.full(1, np.inf)
    if not np.isfinite(out).all():
        raise BadRequest(422, f"{what} must hold finite numbers (no NaN, no infinity)")
    return out


_TYPE_NAMES = {type(None): "null", bool: "a boolean", str: "a string", list: "a list",
               dict: "an object"}


def json_type(x: Any) -> str:
    """The JSON name of a parsed value's type, for messages."""
    return _TYPE_NAMES.get(type(x), type(x).__name__)


def parse_request(body: Any, *, max_documents: int) -> RerankRequest:
    """Check a parsed JSON body.

    Raises
    ------
    BadRequest
        413 for more than ``max_documents`` documents; 422 for any other bad field.
    """
    if not isinstance(body, dict):
        raise BadRequest(422, f"the body must be a JSON object, got {json_type(body)}")
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest(422, "query must be a non-empty string")
    docs = body.get("documents")
    if not isinstance(docs, list):
        raise BadRequest(422, "documents must be a list of strings (or of objects with 'text')")
    if len(docs) > max_documents:
        raise BadRequest(413, f"{len(docs)} documents: at most {max_documents} per request")
    pairs = [_document_text(d, i) for i, d in enumerate(docs)]
    texts = [t for t, _ in pairs]
    P = len(texts)
    top_n = body.get("top_n")
    if top_n is None:
        top_n = P
    elif isinstance(top_n, bool) or not isinstance(top_n, int) or top_n < 1:
        raise BadRequest(422, f"top_n must be an integer >= 1, got {top_n!r}")
    titles = body.get("titles")
    if titles is not None:
        if not isinstance(titles, list) or len(titles) != P or not all(
                t is None or isinstance(t, str) for t in titles):
            raise BadRequest(422, f"titles must be a list of {P} strings or nulls, one per "
                                  "document")
    elif any(t is not None for _, t in pairs):
        titles = [t for _, t in pairs]
    query_vector, vectors = body.get("query_vector"), body.get("vectors")
    if (query_vector is None) != (vectors is None):
        raise BadRequest(422, "query_vector and vectors go together (send both, or neither to "
                              "have the texts embedded)")
    if vectors is not None:
        query_vector, vectors = _stored_vectors(query_vector, vectors, P)
    policy = body.get("policy")
    if policy is not None and (not isinstance(policy, str) or not policy):
        raise BadRequest(422, "policy must be a policy name (GET /v1/policies lists them)")
    options = body.get("policy_options") or {}
    if not isinstance(options, dict):
        raise BadRequest(422, "policy_options must be an object of the policy's options")
    return_documents = body.get("return_documents", False)
    if not isinstance(return_documents, bool):
        raise BadRequest(422, "return_documents must be true or false")
    budget = body.get("budget_tokens")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                               or budget < 1):
        raise BadRequest(422, "budget_tokens must be a whole number of tokens >= 1 (or null)")
    return RerankRequest(query=query, texts=texts, top_n=min(top_n, P), titles=titles,
                         query_vector=query_vector, vectors=vectors, policy=policy,
                         policy_options=options, return_documents=return_documents,
                         budget_tokens=budget)
