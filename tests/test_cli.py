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
    from mempursuit_core import bench

    lines = []
    result = bench.run(quick=True, out=tmp_path / "b.json", reference=False, echo=lines.append)
    data = json.loads((tmp_path / "b.json").read_text())
    assert data["latency"] and all(r["median_ms"] > 0 for r in data["latency"])
    assert {r["dtype"] for r in data["latency"]} == {"float32", "float64"}
    assert data["jit"]["warm_cache"]["first_call_ms"] > 0
    assert result["batch_queries_per_s"]
