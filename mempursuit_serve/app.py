"""The ASGI application: routes, the token, the body limit, the deadline, logs and metrics.

=====================  =========================================================================
``POST /v1/rerank``    Cohere's v1 shape (``documents``: strings or ``{"text": ...}`` objects)
``POST /v2/rerank``    Cohere's v2 shape (the same answer, ``api_version`` 2)
``POST /rerank``       Hugging Face TEI's shape (``texts`` in, a list of ``{index, score}`` out)
``GET /v1/policies``   the registered read policies and the default
``GET /health``        200 while the process answers
``GET /ready``         200 once the embedder is loaded and the policy compiled, else 503
``GET /metrics``       Prometheus text (:mod:`mempursuit_serve.metrics`)
=====================  =========================================================================

Every error is one line of JSON, ``{"message": ..., "status": ...}``, with a 4xx status for bad
input; a failure of the service itself is a 500 with the same one line (the traceback goes to
the log, never to the client).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import os
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from mempursuit_core import list_selectors
from mempursuit_core.adapter import CandidatePool

from .config import ServeConfig
from .metrics import Metrics
from .reader import ReadResult, Reader, relevance_scores
from .request import BadRequest, RerankRequest, parse_request

__all__ = ["JsonFormatter", "configure_logging", "create_app", "create_app_from_env"]

logger = logging.getLogger("mempursuit.serve")

#: The response headers a client can read the read's own facts from (also in ``meta``).
HEADERS = {"policy": "X-Mempursuit-Policy", "embedded": "X-Mempursuit-Embedded",
           "cache_hits": "X-Mempursuit-Cache-Hits",
           "deadline_exceeded": "X-Mempursuit-Deadline-Exceeded"}


class JsonFormatter(logging.Formatter):
    """One JSON object per log line: ``ts``, ``level``, ``logger``, ``event`` and the record's
    ``fields`` (``logger.info("rerank", extra={"fields": {...}})``)."""

    def format(self, record: logging.LogRecord) -> str:
        line = {"ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                + f".{int(record.msecs):03d}Z", "level": record.levelname.lower(),
                "logger": record.name, "event": record.getMessage()}
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info).splitlines()[-1]
        return json.dumps(line, default=str)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """One line of JSON: ``{"message": ..., "status": ...}``."""
    return JSONResponse({"message": message, "status": status}, status_code=status,
                        headers=headers)


class Service:
    """One process's state: the settings, the reader, the worker threads, the metrics."""

    def __init__(self, config: ServeConfig):
        self.config = config
        self.token = config.token()  # fails at start-up, not at the first request
        self.reader = Reader(config.policy, config.embedder, cache_size=config.cache_size,
                             selector_cache=config.selector_cache,
                             embed_threads=config.embed_threads)
        self.reader.selector(None, {})  # a misspelt default policy fails at start-up too
        self.executor = ThreadPoolExecutor(config.threads, thread_name_prefix="mempursuit-read")
        self.metrics = Metrics()
        self.ready = threading.Event()
        self.embedder_error: str | None = None

    # -- start-up --------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Load the embedder and compile the default policy, then say ready (``/ready``)."""
        try:
            if self.config.warm_up:
                try:
                    self.reader.embedder()
                except Exception as exc:  # vectors sent with requests still work without it
                    self.embedder_error = f"{type(exc).__name__}: {exc}"
                    logger.warning("embedder unavailable", extra={"fields": {
                        "error": self.embedder_error}})
                rng = np.random.default_rng(0)
                pool = CandidatePool(list(range(8)), rng.normal(size=16), rng.normal(size=(8, 16)))
                pool.select(self.reader.selector(None, {}), 4)
        finally:
            self.ready.set()
            logger.info("ready", extra={"fields": {"policy": self.config.policy,
                                                   "embedder": self.config.embedder}})

    # -- the pieces of a request -----------------------------------------------------------
    def authorised(self, request: Request) -> bool:
        if self.token is None:
            return True
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(),
                                                                  self.token.encode())

    async def body(self, request: Request) -> Any:
        """The parsed JSON body, read no further than ``max_body_bytes``."""
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise BadRequest(413, f"the body has {declared} bytes: at most {limit}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BadRequest(413, f"the body is over {limit} bytes")
            chunks.append(chunk)
        try:
            return json.loads(b"".join(chunks))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            raise BadRequest(400, f"the body is not valid JSON: {exc}") from None

    async def read(self, req: RerankRequest, started: float) -> tuple[ReadResult, bool]:
        """The read in a worker thread; past the deadline, the input order and True."""
        if req.vectors is None and self.embedder_error:
            raise BadRequest(503, f"no embedder in this service ({self.embedder_error}): send "
                                  "query_vector and vectors")
        self.reader.selector(req.policy, req.policy_options)  # 422 now, not after the deadline
        left = self.config.deadline_s - (time.perf_counter() - started)
        loop = asyncio.get_running_loop()
        job = loop.run_in_executor(self.executor, self.reader.read, req)
        try:
            return await asyncio.wait_for(job, timeout=max(left, 0.0)), False
        except asyncio.TimeoutError:
            name = req.policy or self.config.policy
            return ReadResult(list(range(req.top_n)), name), True


def _answer(req: RerankRequest, result: ReadResult, exceeded: bool, version: str,
            request_id: str) -> tuple[dict, dict[str, str]]:
    """Cohere's response body (``results``, ``meta``) and the read's headers."""
    results = []
    for i, score in zip(result.order, relevance_scores(len(result.order))):
        item: dict[str, Any] = {"index": i, "relevance_score": score}
        if req.return_documents:
            item["document"] = {"text": req.texts[i]}
        results.append(item)
    facts = {"policy": result.policy, "embedded": result.embedded,
             "cache_hits": result.cache_hits, "deadline_exceeded": exceeded}
    body = {"id": request_id, "results": results,
            "meta": {"api_version": {"version": version},
                     "billed_units": {"search_units": 1},
                     "mempursuit": {**facts, "relevance_score": "1/(1+rank)"}}}
    headers = {HEADERS[k]: (str(v).lower() if isinstance(v, bool) else str(v))
               for k, v in facts.items()}
    return body, headers


def create_app(config: ServeConfig | None = None) -> Starlette:
    """The application for ``config`` (default settings when None).

    Raises
    ------
    ValueError
        When ``config.token_env`` names an unset variable, or the default policy is unknown.
    """
    service = Service(config or ServeConfig())

    def endpoint(shape: str):
        async def handle(request: Request) -> Response:
            started = time.perf_counter()
            request_id = request.headers.get("x-request-id") or uuid.uuid4().hex
            fields: dict[str, Any] = {"request_id": request_id, "path": request.url.path}
            counts: dict[str, int] = {}
            try:
                if not service.authorised(request):
                    response = error(401, "a valid bearer token is needed (Authorization: "
                                          "Bearer ...)", {"WWW-Authenticate": "Bearer"})
                else:
                    response = await rerank(request, shape, request_id, started, fields, counts)
            except BadRequest as exc:
                response = error(exc.status, exc.message)
                fields["error"] = exc.message
            except Exception as exc:  # the service's own failure: logged, one line out
                logger.error("failed", exc_info=True, extra={"fields": fields})
                response = error(500, f"internal error ({type(exc).__name__}); see the "
                                      f"service's log, request {request_id}")
            seconds = time.perf_counter() - started
            service.metrics.observe(request.url.path, response.status_code, seconds, **counts)
            response.headers["X-Request-Id"] = request_id
            fields.update(status=response.status_code, ms=round(seconds * 1000, 2))
            logger.info("rerank", extra={"fields": fields})
            return response
        return handle

    async def rerank(request: Request, shape: str, request_id: str, started: float,
                     fields: dict[str, Any], counts: dict[str, int]) -> Response:
        try:  # a client that stops sending its body holds the request no longer than this
            body = await asyncio.wait_for(service.body(request), service.config.deadline_s)
        except asyncio.TimeoutError:
            raise BadRequest(408, "the body did not arrive within the deadline") from None
        if shape == "tei" and isinstance(body, dict):
            body = {**body, "documents": body.get("texts"),
                    "return_documents": body.get("return_text", False)}
            body.pop("texts", None)
        req = parse_request(body, max_documents=service.config.max_documents)
        fields.update(documents=len(req.texts), top_n=req.top_n,
                      vectors=req.vectors is not None)
        result, exceeded = await service.read(req, started)
        counts.update(documents=len(req.texts), embedded_texts=result.embedded,
                      cache_hits=result.cache_hits, deadline_exceeded=int(exceeded))
        fields.update(policy=result.policy, embedded=result.embedded,
                      cache_hits=result.cache_hits, deadline_exceeded=exceeded)
        answer, headers = _answer(req, result, exceeded, "2" if shape == "v2" else "1",
                                  request_id)
        if shape == "tei":
            out = [{"index": r["index"], "score": r["relevance_score"],
                    **({"text": r["document"]["text"]} if "document" in r else {})}
                   for r in answer["results"]]
            return JSONResponse(out, headers=headers)
        return JSONResponse(answer, headers=headers)

    async def policies(request: Request) -> Response:
        if not service.authorised(request):
            return error(401, "a valid bearer token is needed", {"WWW-Authenticate": "Bearer"})
        return JSONResponse({"default": service.config.policy, "policies": list_selectors()})

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def ready(request: Request) -> Response:
        if service.ready.is_set():
            return JSONResponse({"status": "ready", "embedder": service.embedder_error is None})
        return JSONResponse({"status": "starting"}, status_code=503)

    async def metrics(request: Request) -> Response:
        gauges = {"mempursuit_cache_entries": (len(service.reader.cache),
                                               "Texts whose embedding is cached."),
                  "mempursuit_ready": (int(service.ready.is_set()), "1 once warmed up.")}
        return PlainTextResponse(service.metrics.render(gauges),
                                 media_type="text/plain; version=0.0.4")

    async def http_error(request: Request, exc: HTTPException) -> Response:
        return error(exc.status_code, str(exc.detail))

    @contextlib.asynccontextmanager
    async def lifespan(app):
        threading.Thread(target=service.warm_up, name="mempursuit-warm-up", daemon=True).start()
        yield
        service.executor.shutdown(wait=False, cancel_futures=True)

    routes = [Route("/v1/rerank", endpoint("v1"), methods=["POST"]),
              Route("/v2/rerank", endpoint("v2"), methods=["POST"]),
              Route("/rerank", endpoint("tei"), methods=["POST"]),
              Route("/v1/policies", policies, methods=["GET"]),
              Route("/health", health, methods=["GET"]),
              Route("/ready", ready, methods=["GET"]),
              Route("/metrics", metrics, methods=["GET"])]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error},
                    lifespan=lifespan)
    app.state.service = service
    return app


def configure_logging(level: str = "info") -> None:
    """JSON lines on stderr for the service's logger and uvicorn's."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    for name in ("mempursuit.serve", "uvicorn", "uvicorn.error"):
        log = logging.getLogger(name)
        log.handlers[:] = [handler]
        log.setLevel(level.upper())
        log.propagate = False


def create_app_from_env() -> Starlette:
    """The app of each uvicorn worker (``--factory``): settings from ``MEMPURSUIT_SERVE_*``,
    JSON logs at ``MEMPURSUIT_SERVE_LOG_LEVEL``."""
    configure_logging(os.environ.get("MEMPURSUIT_SERVE_LOG_LEVEL", "info"))
    return create_app(ServeConfig.from_env())
