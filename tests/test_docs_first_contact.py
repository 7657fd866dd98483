"""The docs as a new user reads them from a clone (issue 47): counts and lists that name every
framework, an install line for every extra, no paths of the machine a run was made on, no
leftover placeholders."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from shipped import shipped_adapters

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8")
        for p in [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]}
NUMBERS = {7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve",
           13: "thirteen", 14: "fourteen"}


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n## ", 1)[0]


def test_the_readme_counts_its_frameworks_right():
    n = len(shipped_adapters())
    swaps = [r for r in _section(README, "## The one-line swaps").splitlines()
             if r.startswith("| ") and not r.startswith(("| framework", "|---"))]
    assert len(swaps) == n
    assert f"each of these {NUMBERS[n]} frameworks" in README
    for doc, text in DOCS.items():
        for k, word in NUMBERS.items():
            if k != n:
                assert not re.search(rf"\b{word} (frameworks|adapters)\b", text, re.I), (doc, word)


def test_the_readme_has_an_install_line_for_every_extra():
    tomllib = pytest.importorskip("tomllib")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    install = _section(README, "## Install")
    for extra in set(extras) - {"embed", "test"}:
        assert f"[{extra}]" in install, extra


def test_the_framework_lists_name_every_evaluation_store():
    from mempursuit_eval.backends import list_eval_backends

    stores = {n for n in list_eval_backends() if "+" not in n and n != "plain"}
    harness = (ROOT / "docs" / "harness.md").read_text(encoding="utf-8")
    listing = README.split("mempursuit eval --framework mem0 ...", 1)[1].split("\n```", 1)[0]
    for store in stores:
        assert store in listing, ("README", store)
        assert f"`{store}`" in _section(harness, "- **Stores**"), ("docs/harness.md", store)


def test_the_architecture_diagram_shows_every_adapter():
    diagram = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("```")[1]
    for name in shipped_adapters():
        assert re.search(rf"\b_?{name}\b", diagram), name


@pytest.mark.parametrize("doc", sorted(DOCS))
def test_no_path_of_another_machine_and_no_placeholder(doc):
    text = DOCS[doc]
    # an absolute path of the machine a run was made on, or a benchmark file under ../shared
    # shown as if a user had one (say "a copy of the benchmark file")
    assert not re.findall(r"(?<![\w.~])/(?:work|home|root|tmp|Users)/\w", text), doc
    if doc != "CONTRIBUTING.md":  # a contributor's set-up may have the benchmark folder beside
        assert "../shared/data/" not in text, doc
    assert not re.findall(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$", text, re.M), doc  # a stray placeholder


@pytest.mark.parametrize("page, example, variables", [
    ("haystack", "haystack_quickstart", ["HAYSTACK_TELEMETRY_ENABLED"]),
    ("crewai", "crewai_quickstart", ["CREWAI_DISABLE_TELEMETRY", "CREWAI_TRACING_ENABLED"]),
])
def test_telemetry_and_tracing_are_off_in_the_page_and_its_example(page, example, variables):
    """Issue 64: a framework's own telemetry (Haystack) and tracing (CrewAI: a 5 s timeout per
    save without it) are turned off by the page's commands and by the example that runs it."""
    code = (ROOT / "examples" / f"{example}.py").read_text()
    for name in variables:
        assert name in DOCS[f"docs/adapters/{page}.md"], (page, name)
        assert f'os.environ.setdefault("{name}"' in code, (example, name)


def test_the_readme_opens_with_what_it_is_its_set_up_and_a_three_line_result():
    """Issue 64: what it is, then the set-up commands and what the first one prints (three
    lines: the summary's heading and verdict), then the tables."""
    setup, table = README.index("## Set-up: three commands"), README.index("<!-- results table")
    assert README.index("\n## ") + 1 == setup < table  # the first section, before the tables
    shown = README[setup:table].split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    assert len(shown) == 3 and shown[0] == "# mempursuit eval: locomo (dialogue.json)"
    assert shown[2].startswith("**centered-fusion (the default) vs native at K=10, locomo")
