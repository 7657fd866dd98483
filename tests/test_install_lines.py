"""Every install line works before the first release: from a checkout, with an extra that exists.

``pip install "mempursuit[...]"`` finds nothing until the package is on the registry, so the
docs, the examples' *Run it*, the error messages (``mempursuit adapters`` among them) and the
tests' skip reasons say ``pip install -e ".[EXTRA]"`` (run in the checkout); the README's
*Install* alone names the line for after the release.
"""

import re
import sys
from pathlib import Path

import pytest

from mempursuit_core.install import install_line
from mempursuit_core.plugins import AdapterSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
             ["optional-dependencies"])
#: where install lines are written; benchmarks/results/ holds recorded runs, not instructions
SKIP = ("benchmarks/results/", "pyproject.toml")
SUFFIXES = {".py", ".md", ".sh", ".txt", ".toml", ".cfg", ".yml", ".yaml"}
BY_NAME = re.compile(r"mempursuit\[[a-z]")
FROM_CHECKOUT = re.compile(r"""pip install -e ["']?\.\[([A-Za-z0-9,-]+)\]""")
#: names standing for an extra in the docs (CONTRIBUTING's toyfw is a scratch plugin's, on purpose)
PLACEHOLDERS = {"EXTRA", "extra", "toyfw"}
RELEASE_LINE = 'After the release, and not before, this line will work from'


def _texts() -> dict[str, str]:
    found = {}
    for folder in ("", "adapters", "mempursuit_core", "mempursuit_eval", "docs", "examples",
                   "tests", "integration_tests", "benchmarks", ".ci"):
        base = ROOT / folder
        paths = ([p for p in base.iterdir() if p.is_file()] if not folder
                 else [p for p in base.rglob("*") if p.is_file()])
        for path in paths:
            rel = path.relative_to(ROOT).as_posix()
            if (path.suffix in SUFFIXES or path.parent.name == ".ci") and not rel.startswith(SKIP) \
                    and "__pycache__" not in rel:
                found[rel] = path.read_text(encoding="utf-8", errors="replace")
    return found


TEXTS = _texts()


def test_the_files_searched_include_the_places_install_lines_live():
    for rel in ("README.md", "docs/adapters/llamaindex.md", "examples/docs_qa_llamaindex.py",
                "integration_tests/test_llamaindex.py", "mempursuit_core/plugins.py",
                ".ci/extras_alone.sh"):
        assert rel in TEXTS


def test_no_line_installs_the_package_by_name_but_the_readmes_release_line():
    by_name = [f"{rel}:{n}: {line.strip()}" for rel, text in TEXTS.items()
               for n, line in enumerate(text.splitlines(), 1)
               if BY_NAME.search(line) and rel != "tests/test_install_lines.py"]
    readme = [line for line in by_name if line.startswith("README.md:")]
    assert len(readme) == 1, readme
    assert [line for line in by_name if not line.startswith("README.md:")] == []
    lines = TEXTS["README.md"].splitlines()
    at = int(readme[0].split(":")[1]) - 1
    assert RELEASE_LINE in lines[at - 1], "the README's one by-name line is the release line"


def test_every_checkout_install_line_names_extras_that_exist():
    lines = [(rel, m.group(1)) for rel, text in TEXTS.items()
             for m in FROM_CHECKOUT.finditer(text) if rel != "tests/test_install_lines.py"]
    assert len(lines) >= 40  # docs, examples, skip reasons
    unknown = sorted({(rel, e.strip()) for rel, extras in lines for e in extras.split(",")
                      if e.strip() not in EXTRAS | PLACEHOLDERS})
    assert unknown == [], f"extras not in pyproject.toml: {unknown}"


def test_every_example_says_how_to_install_it_from_the_checkout():
    examples = [rel for rel in TEXTS if rel.startswith("examples/") and rel.endswith(".py")
                and rel not in ("examples/quickstart.py", "examples/_sample.py")]
    assert examples
    for rel in examples:
        assert FROM_CHECKOUT.search(TEXTS[rel]), f"{rel} has no pip install -e \".[...]\" line"


def test_messages_name_the_checkout_line():
    assert install_line("mem0") == 'pip install -e ".[mem0]" (in a mempursuit checkout)'
    spec = AdapterSpec(name="x", module="x", framework="x", extra="llamaindex")
    assert spec.hint == install_line("llamaindex")


def test_the_shipped_adapters_hints_install_from_the_checkout():
    from shipped import shipped_adapters

    specs = shipped_adapters()
    assert specs
    for spec in specs.values():
        assert FROM_CHECKOUT.search(spec.hint) or spec.install_hint, spec
        if spec.extra:
            assert install_line(spec.extra) in spec.hint, spec.hint
