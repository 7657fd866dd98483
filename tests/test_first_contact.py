"""What a new user meets first (issue 47): misspelt names get the closest one, abbreviations
are not guessed, a benchmark flag on your own file names ``--dataset custom``, errors name the
data file or the environment variable, a QA run without one answer fails, and the adapters
listing says how to swap each one in.

In process (``mempursuit_core.cli.main(argv)``), a tiny LoCoMo file and the hash embedder where
a run is needed.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from mempursuit_core.cli import main
from mempursuit_core.plugins import UnknownNameError
from mempursuit_eval.runner import run_eval

from eval_samples import HashEmbedder, sample


def _cli(capsys, *argv):
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse's usage errors
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err.strip()


def _locomo(tmp_path):
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([sample("conv-1"), sample("conv-2")]))
    return path


def _eval_args(tmp_path, data, *extra, dataset="locomo"):
    return ["eval", "--dataset", dataset, "--data", data, "--cache-dir", tmp_path / "cache",
            "--k", "2", "--pool", "4", "--bootstrap", "10", "--latency-sample", "0",
            "--no-plots", "--no-download", "--quiet", *extra]


def test_no_abbreviations(tmp_path, capsys):
    """``--policy bogus`` was read as ``--policy-opt bogus`` (argparse's prefix matching)."""
    rc, _, err = _cli(capsys, *_eval_args(tmp_path, _locomo(tmp_path), "--policy", "bogus"))
    assert rc == 2 and "unrecognized arguments: --policy bogus" in err, err
    assert "policy-opt" not in err and "did you mean '--policies'?" in err


def test_a_misspelt_dataset_gets_the_closest_name(tmp_path, capsys):
    rc, _, err = _cli(capsys, *_eval_args(tmp_path, _locomo(tmp_path), dataset="locmo"))
    assert rc == 2 and "did you mean 'locomo'?" in err and len(err.splitlines()) == 1, err


def test_misspelt_selectors_and_frameworks_get_the_closest_name(tmp_path):
    from mempursuit_core import get_selector

    with pytest.raises(UnknownNameError, match="did you mean 'centered-fusion'"):
        get_selector("centred-fusion")
    with pytest.raises(UnknownNameError) as info:
        run_eval(dataset="locomo", data=str(_locomo(tmp_path)), framework="graphitti",
                 embedder=HashEmbedder(), no_cache=True, progress=False)
    message = str(info.value)
    assert "did you mean 'graphiti'?" in message
    assert "mem0+config" not in message  # internal (--mem0-config), not a framework to pick
    with pytest.raises(UnknownNameError) as info:  # a product, by the name it is known by
        run_eval(dataset="locomo", data=str(_locomo(tmp_path)), framework="zep",
                 embedder=HashEmbedder(), no_cache=True, progress=False)
    assert "unknown framework 'zep' (did you mean 'graphiti'? Graphiti is" in str(info.value)


def test_a_missing_data_file_names_the_nearest_one_beside_it(tmp_path, capsys):
    data = _locomo(tmp_path)
    rc, _, err = _cli(capsys, *_eval_args(tmp_path, tmp_path / "locomo_10.json"))
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert f"does not exist (did you mean {str(data)!r}?)" in err
    rc, _, err = _cli(capsys, *_eval_args(tmp_path, tmp_path / "nowhere" / "locomo10.json"))
    assert rc == 2 and f"(nor does its folder {tmp_path / 'nowhere'})" in err, err


def test_the_help_shows_the_demo_and_where_the_docs_are(capsys):
    rc, out, _ = _cli(capsys, "--help")
    assert rc == 0
    demo = "mempursuit eval --dataset locomo --data tests/fixtures/dialogue.json --out runs/demo"
    assert demo in out and "docs: README.md and docs/" in out
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert demo in readme  # the README's first command, word for word


def test_your_own_file_as_a_benchmark_names_dataset_custom(tmp_path, capsys):
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"memories": [], "questions": []}))
    rc, _, err = _cli(capsys, *_eval_args(tmp_path, mine))
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert "is not LoCoMo" in err and "--dataset custom" in err and "mine.json" in err


def test_no_questions_selected_names_the_data_file(tmp_path):
    data = _locomo(tmp_path)
    with pytest.raises(ValueError, match="no questions selected") as info:
        run_eval(dataset="locomo", data=str(data), categories=("temporal",),
                 embedder=HashEmbedder(), no_cache=True, progress=False)
    assert str(data) in str(info.value)


def test_questions_about_a_group_with_no_units_name_the_data_file(tmp_path):
    data = [sample("conv-1"), sample("conv-2")]
    for key in [k for k in data[1]["conversation"] if k.startswith("session_")]:
        del data[1]["conversation"][key]  # conv-2 keeps its questions, loses every turn
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"questions ask groups with no units: \['conv-2'\]") as info:
        run_eval(dataset="locomo", data=str(path), embedder=HashEmbedder(), k=(1,), pool=4,
                 no_cache=True, progress=False)
    assert str(path) in str(info.value)


def test_a_bad_thread_count_in_the_environment_names_the_variable(monkeypatch):
    from mempursuit_core import select_batch

    rng = np.random.default_rng(0)
    monkeypatch.setenv("MEMPURSUIT_THREADS", "abc")
    with pytest.raises(ValueError, match=r"MEMPURSUIT_THREADS='abc': expected a whole number"):
        select_batch([rng.standard_normal(8)], [rng.standard_normal((5, 8))], 2)
    monkeypatch.setenv("MEMPURSUIT_THREADS", "0")
    with pytest.raises(ValueError, match="MEMPURSUIT_THREADS"):
        select_batch([rng.standard_normal(8)], [rng.standard_normal((5, 8))], 2)
    monkeypatch.setenv("MEMPURSUIT_THREADS", "1")
    assert len(select_batch([rng.standard_normal(8)], [rng.standard_normal((5, 8))], 2)) == 1


def test_a_qa_run_without_one_answer_fails(tmp_path, capsys):
    """Every answerer request fails (nothing listens at the URL): the retrieval results are
    written, and the command says why it failed with a non-zero status."""
    pytest.importorskip("onnxruntime", reason="needs the [embed] extra")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once closed
    fixture = Path(__file__).resolve().parent / "fixtures" / "dialogue.json"
    rc, _, err = _cli(capsys, *_eval_args(
        tmp_path, fixture, "--units", "summaries", "--limit", "2", "--out", tmp_path / "run",
        "--answerer-url", f"http://127.0.0.1:{port}/v1", "--model", "tiny", "--no-judge",
        "--qa-retries", "0", "--qa-timeout", "2"))
    assert rc == 1, err  # not 2: not bad input, a run that measured nothing (results written)
    assert "no QA answer at all" in err.splitlines()[-1] and "--answerer-url" in err
    assert (tmp_path / "run" / "summary.md").exists()
    reliability = " ".join((Path(__file__).resolve().parents[1] / "docs" / "reliability.md")
                           .read_text().split())
    assert "answerer never answered" in reliability and "the exit status is 1" in reliability


def test_mem0_wrap_without_mem0_names_the_extra(monkeypatch):
    import mempursuit_mem0
    from mempursuit_core.plugins import AdapterNotInstalledError

    monkeypatch.setitem(sys.modules, "mem0", None)  # as if Mem0 were not installed
    with pytest.raises(AdapterNotInstalledError, match=r'Mem0.*not installed: pip install '
                                                       r'-e "\.\[mem0\]"'):
        mempursuit_mem0.wrap(object())


def test_a_bogus_policy_fails_when_the_settings_are_made():
    from mempursuit_mem0 import MemPursuitSettings

    with pytest.raises(UnknownNameError) as info:
        MemPursuitSettings(policy="bogus")
    assert "centered-fusion" in str(info.value) and "native" in str(info.value)
    with pytest.raises(UnknownNameError, match="did you mean 'centered-fusion'"):
        MemPursuitSettings(policy="centred-fusion")
    assert MemPursuitSettings(policy="native").policy == "native"


PENDING_SWAP: set[str] = set()  # adapters whose AdapterSpec does not say its swap yet


def test_the_adapters_listing_says_how_to_swap_each_one_in(capsys):
    from shipped import shipped_adapters

    rc, out, _ = _cli(capsys, "adapters", "--json")
    assert rc == 0
    listed = json.loads(out)
    root = Path(__file__).resolve().parents[1]
    for name in shipped_adapters():
        if name in PENDING_SWAP:
            continue
        entry = listed[name]
        assert entry["swap"], name
        assert (root / entry["docs"]).is_file(), (name, entry["docs"])
    rc, text, _ = _cli(capsys, "adapters")
    assert "swap: graphiti = MemPursuitGraphiti(graphiti)" in text
    assert "docs: docs/adapters/graphiti.md" in text
    # LightMem is installed as its page says: its extra, then LightMem without its pins
    page = (root / "docs" / "adapters" / "lightmem.md").read_text()
    line = "pip install --no-deps git+https://github.com/zjunlp/LightMem.git"
    assert line in page and line in listed["lightmem"]["install"]
