"""CI checks what a user installs (issue 47): `.ci/run` runs `.ci/extras_alone.sh`, which covers
every framework extra the package declares (each alone in a fresh venv, importing its adapter
and running its example) and the README's fast subset on exactly `.[eval,test]`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (ROOT / ".ci" / "extras_alone.sh").read_text()


def _checks() -> list[str]:
    return re.search(r"^ALL=\(([^)]*)\)", SCRIPT, re.M).group(1).split()


def test_every_framework_extra_is_checked_alone():
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    # diversifiers, haystack-rankers: baselines for the harness, not a framework's adapter:
    # checked alone too, by their policies rather than an example
    baselines = {"diversifiers", "haystack-rankers"}
    # serve: the rerank service, checked alone by its quickstart (no adapter to import)
    services = {"serve"}
    frameworks = set(extras) - {"embed", "eval", "all", "test"} - baselines - services
    assert set(_checks()) == frameworks | baselines | services | {"fast"}
    listed = re.search(r'^BASELINES=" ([^"]*) "', SCRIPT, re.M).group(1).split()
    assert set(listed) == baselines
    assert set(re.search(r'^SERVICES=" ([^"]*) "', SCRIPT, re.M).group(1).split()) == services
    for extra in services:
        assert (ROOT / "examples" / f"{extra}_quickstart.py").is_file(), extra
    for extra in frameworks:  # the example the check runs
        # the example the check runs (a hyphen in the extra: "_")
        assert (ROOT / "examples" / f"{extra.replace('-', '_')}_quickstart.py").is_file(), extra


def test_ci_runs_the_check_and_fails_with_it():
    run = (ROOT / ".ci" / "run").read_text()
    assert "bash .ci/extras_alone.sh" in run
    assert 'wait "$extras_pid" || extras_rc=$?' in run and '[ "$extras_rc" = 0 ]' in run


def test_the_fast_check_installs_exactly_what_the_readme_says():
    readme = (ROOT / "README.md").read_text()
    line = next(l for l in readme.splitlines() if "not slow and not framework" in l
                and l.startswith("pip install"))
    assert line == 'pip install -e ".[eval,test]" && python -m pytest -m "not slow and not framework"'
    assert 'pip install -q -e ".[eval,test]"' in SCRIPT
    assert 'pytest -m "not slow and not framework"' in SCRIPT
