"""The examples teach the default read policy (issue 47).

An example's swap line is what a user copies: it must not pass ``policy="mempursuit"`` (the
paper's rule, which loses to the frameworks' hybrid orders with small embedders). The paper's
rule may appear only as a named reproduction, on a line or under a comment that says so.
"""

from __future__ import annotations

import re
from pathlib import Path

#: the examples, not the module of sample memories they import (examples/_sample.py)
EXAMPLES = sorted(p for p in (Path(__file__).parents[1] / "examples").glob("*.py")
                  if not p.name.startswith("_"))


def test_no_example_swaps_in_the_papers_rule_unnamed():
    assert EXAMPLES
    bad = []
    for path in EXAMPLES:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if re.search(r"""policy\s*=\s*["']mempursuit["']""", line) and not line.lstrip().startswith(("``", "#")):
                context = " ".join(lines[max(0, i - 2): i + 1])
                if "reproduction" not in context:
                    bad.append(f"{path.name}:{i + 1}: {line.strip()}")
    assert not bad, "the paper's rule as an example's policy, not named as a reproduction:\n" + "\n".join(bad)


def test_every_example_documents_its_install_line():
    """.ci/extras_alone.sh installs what each example's docstring says, then runs it."""
    for path in EXAMPLES:
        if path.name == "quickstart.py":
            continue
        text = path.read_text()
        assert re.search(r'^\s+pip install -e "\.\[[a-z0-9,-]+\]"', text, re.M), path.name
