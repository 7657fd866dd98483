"""The README's results table and docs/results.md are the committed results, regenerated."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_results_tables_are_generated_not_pasted():
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "readme_tables.py"), "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr


def test_readme_links_point_at_files_that_exist():
    import re

    text = (ROOT / "README.md").read_text()
    targets = {t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", text)
               if not t.startswith(("http", "#"))}
    missing = sorted(t for t in targets if not (ROOT / t).exists())
    assert not missing, missing
