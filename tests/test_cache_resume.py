"""Ctrl-C during the embedding keeps every finished batch: a rerun embeds only the rest (issue 47).

The embedder raises ``KeyboardInterrupt`` (what Ctrl-C raises in the main thread) after some
batches; the same run again must embed exactly the texts the first one did not finish, and the
command line's message promises a cache only when there is one.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from mempursuit_eval.cache import CachedEmbedder
from mempursuit_eval.runner import run_eval

from eval_samples import HashEmbedder

DIALOGUE = Path(__file__).parent / "fixtures" / "dialogue.json"


class Interrupted(HashEmbedder):
    """HashEmbedder that raises KeyboardInterrupt on the call that would pass ``stop`` texts."""

    def __init__(self, stop=None):
        self.stop, self.done = stop, 0

    def encode(self, texts, **kw):
        if self.stop is not None and self.done + len(texts) > self.stop:
            raise KeyboardInterrupt
        self.done += len(texts)
        return super().encode(texts, **kw)


def test_an_interrupted_fill_keeps_its_finished_batches(tmp_path):
    texts = [f"memory {i} " + "x" * (i % 7) for i in range(300)]
    first = Interrupted(stop=100)
    with pytest.raises(KeyboardInterrupt):
        CachedEmbedder(first, tmp_path, chunk=2048).encode(texts, batch_size=32)
    assert first.done == 96  # three batches of 32 finished, the fourth was interrupted
    again = CachedEmbedder(Interrupted(), tmp_path)
    assert again.missing(texts) == 300 - 96
    out = again.encode(texts, batch_size=32)
    assert again.inner.done == 300 - 96
    np.testing.assert_array_equal(out, HashEmbedder().encode(texts))  # same vectors, input order


def _run(tmp_path, embedder, capsys):
    run_eval(dataset="locomo", data=str(DIALOGUE), embedder=embedder, k=(2,), pool=8,
             out=str(tmp_path / "run"), cache_dir=str(tmp_path / "cache"), bootstrap=20,
             latency_sample=0, progress=True, plots=False)
    err = capsys.readouterr().err
    return int(re.search(r"(\d+) new texts to embed", err).group(1)), err


def test_a_rerun_after_ctrl_c_embeds_only_what_was_not_cached(tmp_path, capsys):
    first = Interrupted(stop=100)
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, first, capsys)
    err = capsys.readouterr().err
    total = int(re.search(r"(\d+) new texts to embed", err).group(1))
    assert 0 < first.done < total
    second = Interrupted()
    new, _ = _run(tmp_path, second, capsys)
    assert new == total - first.done
    questions = second.done - new  # the rest of the second run's texts are the questions
    assert 0 < questions < total


def test_the_ctrl_c_line_promises_a_cache_only_when_there_is_one(tmp_path, monkeypatch, capsys):
    import mempursuit_eval.runner as runner
    from mempursuit_core.cli import main

    def interrupt(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_eval", interrupt)
    argv = ["eval", "--dataset", "locomo", "--data", str(DIALOGUE), "--out", str(tmp_path / "r")]
    assert main(argv) == 130
    cached = capsys.readouterr().err
    assert "cached" in cached and "run the same command again" in cached
    assert main([*argv, "--no-cache"]) == 130
    line = capsys.readouterr().err.strip()
    assert line == "mempursuit eval: interrupted", line
