"""Conformance checks for a framework adapter, for the adapter's own test suite.

Every adapter, built in or a plugin, makes the same promises (``CONTRIBUTING.md``, "Add an
adapter"); these functions check them on a real adapter over a real framework object, the
same functions this repository's tests call on its own adapters:

==============================  =============================================================
:func:`check_read_options`      the class takes ``k``, ``pool``, ``policy``,
                                ``policy_options``, ``strict``, keyword-only, default None
                                (or, for a settings dataclass, the shared defaults)
:func:`check_bad_options`       bad options fail when the adapter is built, not at a read
:func:`check_native`            ``policy="native"`` returns exactly the framework's own result
:func:`check_fallback`          a read whose policy fails returns the framework's own result
                                with one WARNING; with ``strict=True`` it raises
:func:`check_trace`             after a read, the adapter's ``last_trace`` says what it did:
                                ``final`` is what it returned, ``native`` starts with the
                                framework's own order, a fallback says why
:func:`check_adapter`           all four (and :func:`check_trace` when given ``ids``)
==============================  =============================================================

In a plugin's tests (any test runner; the checks raise :class:`ConformanceError`, an
``AssertionError``, and import no test framework)::

    from mempursuit_core import testing

    def test_toyfw_conforms(memory):
        testing.check_adapter(
            ToyReader,
            build=lambda **options: ToyReader(memory, **options),  # the adapter, these options
            read=lambda reader: reader.search(QUERY, limit=3),     # one read through it
            native=lambda: memory.search(QUERY, 3),                # the framework's own read
        )

``build`` receives the options under test as keywords (``policy=``, ``strict=``, ...); ``read``
may return an awaitable (an async read), which is run to completion; ``same(ours, theirs)``
compares two results when ``==`` does not (objects without equality: compare their ids).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import warnings
from collections.abc import Callable
from typing import Any

from .builtins import DEFAULT_POLICY
from .options import DEFAULT_POOL
from .selectors import Selector

__all__ = ["BAD_OPTIONS", "ConformanceError", "FailingSelector", "SHARED_OPTIONS",
           "check_adapter", "check_bad_options", "check_fallback", "check_native",
           "check_read_options", "check_trace"]

#: The read options every adapter takes, keyword-only, each defaulting to None.
SHARED_OPTIONS = ("k", "pool", "policy", "policy_options", "strict")

#: Options an adapter must refuse when it is built (``TypeError`` or ``ValueError``; an unknown
#: policy name is a ``KeyError`` naming the registered ones).
BAD_OPTIONS: tuple[dict[str, Any], ...] = (
    {"k": 0}, {"k": 2.5}, {"pool": 0}, {"pool": "200"}, {"strict": "yes"}, {"policy": ""},
    {"policy": 3}, {"policy": "no-such-policy"}, {"policy_options": 3},
    {"policy_options": {"no_such_option": 1}},
)

#: The message of :class:`FailingSelector`'s error: the fallback warning must name it.
FAILURE = "mempursuit_core.testing.FailingSelector fails on purpose"


class ConformanceError(AssertionError):
    """An adapter breaks one of the promises every adapter makes; the message says which."""


class FailingSelector(Selector):
    """A policy whose every call raises ``RuntimeError(FAILURE)``; ``calls`` counts them."""

    name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    def select(self, *args: Any, **kwargs: Any):
        self.calls += 1
        raise RuntimeError(FAILURE)

    def select_batch(self, *args: Any, **kwargs: Any):
        self.calls += 1
        raise RuntimeError(FAILURE)


def _fail(message: str) -> None:
    raise ConformanceError(message)


def check_read_options(cls: type) -> None:
    """``cls`` takes the shared read options: keyword-only with default None in its
    ``__init__``, or, for a settings dataclass (fields, not parameters), fields holding the
    shared defaults (``k=None``, ``pool=DEFAULT_POOL``, ``policy=DEFAULT_POLICY``,
    ``strict=False``).

    Raises
    ------
    ConformanceError
        Naming the class and the options that differ.
    """
    where = getattr(cls, "__qualname__", repr(cls))
    if dataclasses.is_dataclass(cls):
        fields = {f.name for f in dataclasses.fields(cls)}
        missing = [p for p in SHARED_OPTIONS if p not in fields]
        if missing:
            _fail(f"{where} lacks the read options {missing}")
        settings = cls()
        got = (settings.k, settings.pool, settings.policy, settings.strict)
        if got != (None, DEFAULT_POOL, DEFAULT_POLICY, False):
            _fail(f"{where}'s defaults (k, pool, policy, strict) are {got}, not "
                  f"{(None, DEFAULT_POOL, DEFAULT_POLICY, False)}")
        return
    params = inspect.signature(cls.__init__).parameters
    missing = [p for p in SHARED_OPTIONS if p not in params]
    if missing:
        _fail(f"{where} lacks the read options {missing}")
    positional = [p for p in SHARED_OPTIONS if params[p].kind is not inspect.Parameter.KEYWORD_ONLY]
    if positional:
        _fail(f"{where} takes {positional} by position too: make them keyword-only (after *)")
    not_none = [p for p in SHARED_OPTIONS if params[p].default is not None]
    if not_none:
        _fail(f"{where}: {not_none} must default to None (ReadOptions.build fills in the shared "
              "defaults)")


def check_bad_options(build: Callable[..., Any]) -> None:
    """Each of :data:`BAD_OPTIONS` makes ``build(**options)`` raise (``TypeError``,
    ``ValueError`` or, for an unknown policy name, ``KeyError``), so that a mistake shows when
    the adapter is set up, not at its first read.

    Raises
    ------
    ConformanceError
        Naming the options that were accepted.
    """
    accepted = []
    for options in BAD_OPTIONS:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build(**options)
        except (TypeError, ValueError, KeyError):
            continue
        accepted.append(options)
    if accepted:
        _fail(f"building the adapter accepted {accepted}: take the options with "
              "ReadOptions.build and build the selector (options.selector()) in the constructor")


def _run(result: Any) -> Any:
    """``result``, or what it resolves to when it is an awaitable (an async read)."""
    if not inspect.isawaitable(result):
        return result

    async def wait():
        return await result

    return asyncio.run(wait())


def _compare(same: Callable[[Any, Any], bool] | None, ours: Any, theirs: Any, what: str) -> None:
    equal = (ours == theirs) if same is None else same(ours, theirs)
    if not equal:
        _fail(f"{what} is not the framework's own result:\n  adapter:   {ours!r}\n"
              f"  framework: {theirs!r}")


def check_native(build: Callable[..., Any], read: Callable[[Any], Any],
                 native: Callable[[], Any], *,
                 same: Callable[[Any, Any], bool] | None = None) -> None:
    """``read(build(policy="native", strict=True))`` equals ``native()``, the framework's own
    read for the same arguments.

    Raises
    ------
    ConformanceError
        When the two differ (both shown).
    """
    ours = _run(read(build(policy="native", strict=True)))
    _compare(same, ours, _run(native()), 'the read with policy="native"')


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def check_fallback(build: Callable[..., Any], read: Callable[[Any], Any],
                   native: Callable[[], Any], *,
                   same: Callable[[Any, Any], bool] | None = None) -> None:
    """With a policy that fails (:class:`FailingSelector`), ``read`` returns ``native()``, the
    framework's own result, and logs exactly one WARNING naming the failure (any logger: the
    core's is ``mempursuit``); with ``strict=True`` the read raises, the failure in its chain.

    ``read`` must reach the policy (give it a query that finds something).

    Raises
    ------
    ConformanceError
        When the policy is never called, the result differs, the warnings are not exactly one,
        or the strict read does not raise.
    """
    failing = FailingSelector()
    adapter = build(policy=failing, strict=False)
    handler, root = _Records(), logging.getLogger()
    root.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            ours = _run(read(adapter))
    finally:
        root.removeHandler(handler)
    if failing.calls == 0:
        _fail("the read never called the policy: give check_fallback a read whose pool is not "
              "empty")
    _compare(same, ours, _run(native()), "the read whose policy failed")
    told = [r.getMessage() for r in handler.records if FAILURE in r.getMessage()]
    told += [str(w.message) for w in warned if FAILURE in str(w.message)]
    if len(told) != 1:
        _fail(f"a failed read must log one WARNING naming the failure (read_or_native does), "
              f"got {len(told)}: {told}")

    strict = build(policy=FailingSelector(), strict=True)
    try:
        _run(read(strict))
    except Exception as exc:  # noqa: BLE001 - any error, as long as it carries the failure
        chain, seen = exc, set()
        while chain is not None and id(chain) not in seen:
            if FAILURE in str(chain):
                return
            seen.add(id(chain))
            chain = chain.__cause__ or chain.__context__
        _fail(f"the strict read raised {type(exc).__name__}: {exc}, which does not carry the "
              "policy's failure (raise from it)")
    _fail("with strict=True a read whose policy fails must raise; it returned")


def check_trace(build: Callable[..., Any], read: Callable[[Any], Any],
                native: Callable[[], Any], ids: Callable[[Any], list], *,
                trace_of: Callable[[Any], Any] = lambda adapter: adapter.last_trace) -> None:
    """After a read, ``trace_of(adapter)`` (default ``adapter.last_trace``) is a
    :class:`~mempursuit_core.trace.ReadTrace` that says what the read did: with the default
    policy, ``final`` is what the read returned and ``native`` starts with the framework's own
    order, no fallback; with ``policy="native"`` the same, ``final`` the framework's own
    result; with a failing policy, ``fallback`` names the failure and ``final`` is the
    framework's own result.

    Parameters
    ----------
    ids : callable
        ``ids(result) -> list``: the short ids (as the adapter's trace shows them) of the
        items a result holds, in order.

    Raises
    ------
    ConformanceError
        Naming what the trace got wrong.
    """
    from .trace import ReadTrace

    theirs = list(ids(_run(native())))
    for policy in (DEFAULT_POLICY, "native"):
        adapter = build(policy=policy)
        ours = list(ids(_run(read(adapter))))
        trace = trace_of(adapter)
        if not isinstance(trace, ReadTrace):
            _fail(f"after a read with policy={policy!r} last_trace is {trace!r}, not a ReadTrace")
        if list(trace.final) != ours:
            _fail(f"the trace's final order {list(trace.final)} is not what the read returned "
                  f"{ours} (policy={policy!r})")
        if list(trace.native[:len(theirs)]) != theirs:
            _fail(f"the trace's native order {list(trace.native)} does not start with the "
                  f"framework's own {theirs} (policy={policy!r})")
        if trace.fallback is not None:
            _fail(f"a read that worked has a fallback in its trace: {trace.fallback}")
        if policy == "native" and ours != theirs:
            _fail(f'the trace of policy="native" returned {ours}, not the framework\'s {theirs}')
    adapter = build(policy=FailingSelector())
    handler, root = _Records(), logging.getLogger()
    root.addHandler(handler)  # the one fallback warning, kept off the test's output
    try:
        _run(read(adapter))
    finally:
        root.removeHandler(handler)
    trace = trace_of(adapter)
    if trace is None or FAILURE not in str(trace.fallback):
        _fail(f"after a fallback the trace must say why; got {trace!r}")
    if list(trace.final) != theirs:
        _fail(f"after a fallback the trace's final {list(trace.final)} is not the framework's "
              f"own result {theirs}")


def check_adapter(cls: type | None = None, *, build: Callable[..., Any],
                  read: Callable[[Any], Any], native: Callable[[], Any],
                  same: Callable[[Any, Any], bool] | None = None,
                  ids: Callable[[Any], list] | None = None,
                  trace_of: Callable[[Any], Any] | None = None) -> None:
    """Every check: :func:`check_read_options` on ``cls`` (when given), then
    :func:`check_bad_options`, :func:`check_native` and :func:`check_fallback` with ``build``,
    ``read``, ``native`` and ``same``.

    Parameters
    ----------
    cls : type, optional
        The class whose constructor (or dataclass fields) takes the read options.
    build : callable
        ``build(**options)`` -> the adapter built with those read options (on the framework
        object under test).
    read : callable
        ``read(adapter)`` -> the result of one read through it (or an awaitable of it).
    native : callable
        ``native()`` -> the framework's own result for the same read, without the adapter.
    same : callable, optional
        ``same(ours, theirs) -> bool`` where ``==`` does not compare two results.
    ids : callable, optional
        ``ids(result) -> list`` of the items' short ids: also runs :func:`check_trace`.
    trace_of : callable, optional
        ``trace_of(adapter)``: where the trace is (default ``adapter.last_trace``).

    Raises
    ------
    ConformanceError
        The first broken promise.
    """
    if cls is not None:
        check_read_options(cls)
    check_bad_options(build)
    check_native(build, read, native, same=same)
    check_fallback(build, read, native, same=same)
    if ids is not None:
        check_trace(build, read, native, ids, **({} if trace_of is None else
                                                 {"trace_of": trace_of}))

