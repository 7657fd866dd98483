import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import clustered
from mempursuit_core import select
from mempursuit_core.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_select_prints_order_and_trace(tmp_path, rng, capsys):
    q, M = clustered(rng, P=40, d=16)
    np.save(tmp_path / "q.npy", q)
    np.save(tmp_path / "M.npy", M.astype(np.float32))
    paper = ["select", str(tmp_path / "q.npy"), str(tmp_path / "M.npy"), "--policy", "mempursuit"]
    assert main(paper + ["-k", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["order"] == select(q, M.astype(np.float32), 5).order.tolist()
    assert len(out["gaps"]) == 5 and abs(sum(out["weights"]) - 1) < 1e-9
    assert main(paper + ["-k", "3"]) == 0
    table = capsys.readouterr().out
    assert "step" in table and "gap" in table and len(table.strip().splitlines()) == 5
    assert main(["select", str(tmp_path / "q.npy"), str(tmp_path / "M.npy"), "--policy", "mmr",
                 "-k", "3"]) == 0


def test_select_uses_the_default_policy(tmp_path, rng, capsys):
    from mempursuit_core import DEFAULT_POLICY, get_selector

    q, M = clustered(rng, P=40, d=16)
    np.save(tmp_path / "q.npy", q)
    np.save(tmp_path / "M.npy", M)
    assert main(["select", str(tmp_path / "q.npy"), str(tmp_path / "M.npy"), "-k", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["order"] == get_selector(DEFAULT_POLICY).select(q, M, 5).order.tolist()
    assert out["order"] != select(q, M, 5).order.tolist()  # not the paper's rule on this pool


def test_select_reports_bad_input(tmp_path, capsys):
    np.save(tmp_path / "q.npy", np.ones(4))
    np.save(tmp_path / "M.npy", np.ones((3, 5)))
    assert main(["select", str(tmp_path / "q.npy"), str(tmp_path / "M.npy")]) == 2
    assert "dimension mismatch" in capsys.readouterr().err
    assert main(["select", str(tmp_path / "q.npy"), str(tmp_path / "M.npy"), "--policy", "zzz"]) == 2
    assert "registered" in capsys.readouterr().err


def test_adapters_and_selectors_commands(capsys):
    assert main(["selectors"]) == 0
    out = capsys.readouterr().out
    kept, experimental = out.split("experimental (", 1)
    assert "* centered-fusion" in kept and "mempursuit" in kept and "pursuit-rank" not in kept
    assert "experimental/pursuit-rank" in experimental
    assert "deprecated" not in out and "mempursuit-adaptive" not in out
    assert main(["adapters", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    for name, spec in listing.items():
        assert isinstance(spec["installed"], bool) and spec["install"]
        # which plugin registered it, from which distribution (the built-ins: this one)
        assert spec["plugin"] == name and spec["distribution"].startswith("mempursuit ")


def test_adapters_say_whether_they_have_the_second_read(capsys):
    assert main(["adapters", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["haystack"]["second_read"] and listing["langgraph"]["second_read"]
    assert listing["cognee"]["second_read"] is None
    assert main(["adapters"]) == 0
    out = capsys.readouterr().out
    assert out.count("second read: ") == len(listing) and "second read: no" in out


def test_python_dash_m_entry_point():
    res = subprocess.run([sys.executable, "-m", "mempursuit_core", "selectors"], cwd=ROOT,
                         capture_output=True, text=True)
    assert res.returncode == 0 and "native" in res.stdout


def test_bench_writes_no_file_unless_asked(tmp_path, monkeypatch):
    from mempursuit_core.cli import build_parser

    monkeypatch.chdir(tmp_path)
    assert build_parser().parse_args(["bench"]).out is None


@pytest.mark.slow
def test_bench_quick_writes_json(tmp_path):
    from mempursuit_eval import bench

    lines = []
    result = bench.run(quick=True, out=tmp_path / "b.json", reference=False, echo=lines.append)
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["latency"] and all(r["median_ms"] > 0 for r in data["latency"])
    assert {r["dtype"] for r in data["latency"]} == {"float32", "float64"}
    assert data["jit"]["warm_cache"]["first_call_ms"] > 0
    assert result["batch_queries_per_s"]


@pytest.mark.parametrize("argv, needles", [
    (["eval", "--polices", "native"], ["mempursuit eval: unrecognized arguments: --polices native",
                                       "(did you mean '--policies'?)",
                                       "(see 'mempursuit eval --help')"]),
    (["eval", "--pol=3"], ["did you mean '--pool'?", "see 'mempursuit eval --help'"]),
    (["select", "q.npy", "M.npy", "--polcy", "mmr"], ["mempursuit select: unrecognized",
                                                      "did you mean '--policy'?",
                                                      "see 'mempursuit select --help'"]),
    (["selectors", "--verbose"], ["mempursuit selectors: unrecognized arguments: --verbose",
                                  "see 'mempursuit selectors --help'"]),
])
def test_an_unknown_flag_is_named_by_its_command_with_the_closest_flag(argv, needles, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and len(err.splitlines()) == 1, err
    for needle in needles:
        assert needle in err, (needle, err)
    if argv[0] == "selectors":
        assert "did you mean" not in err  # nothing close: no guess


def _closed_stdout(*args):
    """Run the command with a stdout nobody reads any more (``| head`` once it has quit)."""
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "mempursuit_core", *map(str, args)],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=300,
                              cwd=ROOT)
    finally:
        os.close(write)


def test_a_closed_stdout_is_quiet_exit_141_not_a_traceback():
    res = _closed_stdout("selectors")
    assert res.returncode == 141 and res.stderr == "", res.stderr


@pytest.mark.slow  # one evaluation run in a subprocess (a few seconds)
def test_eval_piped_into_head_ends_quietly_with_its_run_written(tmp_path):
    pytest.importorskip("onnxruntime", reason='needs pip install -e ".[embed]"')
    res = _closed_stdout("eval", "--dataset", "locomo", "--data",
                         ROOT / "tests" / "fixtures" / "dialogue.json", "--out", tmp_path / "run",
                         "--cache-dir", tmp_path / "cache", "--quiet", "--no-plots",
                         "--bootstrap", "20", "--latency-sample", "0", "--k", "2")
    assert res.returncode == 141, res.stderr
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr, res.stderr
    assert (tmp_path / "run" / "summary.md").exists()
