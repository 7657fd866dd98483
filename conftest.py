"""Session rule for the integration tests: in CI, a framework module must not vanish silently.

(A root conftest on purpose: a second ``conftest.py`` outside a package would shadow
``tests/conftest.py`` in ``sys.modules``, which the unit tests import helpers from.)

With ``CI=true`` (GitHub Actions and most CI services set it) every extra is installed, so an
integration module skipped as a whole means the real framework never ran although the run is
green. Such a run fails, naming the module and the skip reason, when

* the module is skipped at collection (a module-level ``pytest.importorskip`` or
  ``pytest.skip(..., allow_module_level=True)``), or
* every test the module collected was skipped (e.g. an autouse fixture skipping all of them),

unless the skipped node ids are listed in :data:`ALLOWED_CI_SKIPS` with the reason. Outside CI
nothing changes: skips stay skips, with their reasons in the ``-ra`` summary.

Every test under ``integration_tests/`` is marked ``framework`` here, by directory, so that
``-m "not framework"`` can never keep one by mistake; the long ones (:data:`SLOW_INTEGRATION`)
are also marked ``slow``. ``python -m pytest -m "not slow and not framework"`` is the fast
subset (CONTRIBUTING.md).

Only modules under ``integration_tests/`` are concerned by the CI rule. Their fixtures and helpers live in the
modules that use them (``mem0_fixtures.py``, ``dialogue_fixture.py``, ``signal_probe.py``);
this file holds only this rule.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

#: Node ids (a module or a single test) allowed to be skipped in CI, and why.
ALLOWED_CI_SKIPS: dict[str, str] = {}
if sys.version_info < (3, 12):  # falkordblite, the embedded FalkorDB, needs Python >= 3.12
    ALLOWED_CI_SKIPS["integration_tests/test_graphiti_falkordb.py"] = "falkordblite needs Python >= 3.12"


#: Integration modules whose framework installs only from a wheel in ``../shared/wheels/`` (not on
#: the registry): ``{module node id: wheel file glob}``. In CI such a module may be skipped as a
#: whole only when that wheel is absent (a user's clone with nothing beside it); where the wheel
#: is there, ``.ci/run`` installs it and the module must run.
NEEDS_SHARED_WHEEL: dict[str, str] = {
    # the real LightMem: the registry's "lightmem" is an empty placeholder
    "integration_tests/test_lightmem_real.py": "lightmem-*.whl",
    # llama.cpp's OpenAI-compatible server for the end-to-end QA test (source build: 10-12 min)
    "integration_tests/test_qa_llama_server.py": "llama_cpp_python-*.whl",
}

SHARED_WHEELS = Path(__file__).resolve().parent.parent / "shared" / "wheels"


def shared_wheel(pattern: str) -> Path | None:
    """The newest wheel in ``../shared/wheels`` matching ``pattern``, or None."""
    found = sorted(SHARED_WHEELS.glob(pattern)) if SHARED_WHEELS.is_dir() else []
    return found[-1] if found else None


for _module, _pattern in NEEDS_SHARED_WHEEL.items():
    if shared_wheel(_pattern) is None:
        ALLOWED_CI_SKIPS.setdefault(_module, f"needs ../shared/wheels/{_pattern}, absent here")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


INTEGRATION = "integration_tests/"
LANGGRAPH_SUITE = "integration_tests/conformance/langgraph/"


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, lineno, "Skipped: ...")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


#: Integration modules whose tests each take more than a few seconds even with the framework
#: warm (a server started per test, a model answering, many stores built): marked ``slow``.
SLOW_INTEGRATION = {
    "integration_tests/test_qa_llama_server.py",
    "integration_tests/test_lightmem_real.py",
    "integration_tests/test_readme.py",
}


def _no_framework_test_selected(config) -> bool:
    """Whether the ``-m`` expression rules out every ``framework`` test (``not framework``)."""
    expr = config.getoption("markexpr", "") or ""
    if "framework" not in expr:
        return False
    try:
        from _pytest.mark.expression import Expression
        compiled = Expression.compile(expr)
    except Exception:  # pytest reports a bad expression itself
        return False
    marks = ({"framework"}, {"framework", "slow"})
    return not any(compiled.evaluate(lambda name, *a, m=m, **kw: name in m) for m in marks)


def pytest_ignore_collect(collection_path, config):
    """Under ``-m "not framework"`` the modules of integration_tests/ are not even imported
    (importing them imports the frameworks, which takes longer than the fast subset runs)."""
    root = Path(str(config.rootpath))
    try:
        rel = Path(str(collection_path)).resolve().relative_to(root).as_posix() + "/"
    except ValueError:
        return None
    if rel.startswith(INTEGRATION) and _no_framework_test_selected(config):
        return True
    if rel.startswith(LANGGRAPH_SUITE) and not in_ci() and importlib.util.find_spec("langgraph") is None:
        # LangGraph's own test files cannot skip themselves (they are vendored unchanged) and
        # their conftest imports LangGraph: without it the folder is left out (in CI, never)
        return True
    return None


def pytest_collection_modifyitems(config, items):
    root = Path(str(config.rootpath))
    for item in items:
        try:
            rel = Path(str(item.path)).resolve().relative_to(root).as_posix()
        except ValueError:
            continue
        if rel.startswith(INTEGRATION):
            item.add_marker(pytest.mark.framework)
            if rel in SLOW_INTEGRATION:
                item.add_marker(pytest.mark.slow)


_module_skips: dict[str, str] = {}  # module node id -> reason
_outcomes: dict[str, dict[str, tuple[str, str]]] = {}  # module -> test node id -> (outcome, reason)


def pytest_collectreport(report):
    if report.skipped and report.nodeid.endswith(".py") and report.nodeid.startswith(INTEGRATION):
        _module_skips[report.nodeid] = _reason(report.longrepr)


def pytest_runtest_logreport(report):
    if not report.nodeid.startswith(INTEGRATION):
        return
    tests = _outcomes.setdefault(_module_of(report.nodeid), {})
    if report.skipped:
        tests[report.nodeid] = ("skipped", _reason(report.longrepr))
    elif report.failed:
        tests[report.nodeid] = ("failed", "")
    elif report.when == "call":
        tests.setdefault(report.nodeid, ("passed", ""))


def violations() -> list[str]:
    """One line per module skipped as a whole and not allowed by ``ALLOWED_CI_SKIPS``."""
    out = []
    for module, reason in sorted(_module_skips.items()):
        if module not in ALLOWED_CI_SKIPS:
            out.append(f"{module}: skipped at collection: {reason}")
    for module, tests in sorted(_outcomes.items()):
        if module in _module_skips or module in ALLOWED_CI_SKIPS or not tests:
            continue
        if all(outcome == "skipped" for outcome, _ in tests.values()):
            if all(nodeid in ALLOWED_CI_SKIPS for nodeid in tests):
                continue
            reasons = sorted({r for _, r in tests.values()})
            out.append(f"{module}: all {len(tests)} tests skipped: {'; '.join(reasons)}")
    return out


_found: list[str] = []


def pytest_sessionfinish(session, exitstatus):
    if not in_ci():
        return
    _found[:] = violations()
    if _found and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if not _found:
        return
    terminalreporter.section("integration modules skipped as a whole (CI=true)", sep="=", red=True)
    for line in _found:
        terminalreporter.line(line, red=True)
    terminalreporter.line("CI installs every extra, so these skips fail the run; install what the "
                          "reason names, or list the node id in ALLOWED_CI_SKIPS "
                          "(conftest.py at the repository root) with why.")
