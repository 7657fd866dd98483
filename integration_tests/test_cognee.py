"""mempursuit_cognee on a real cognee: its default embedded stores (SQLite, LanceDB, the Ladybug
graph) in a temporary directory, the fixture's first conversation added and cut into chunks by
cognee's own tasks, the packaged MiniLM as cognee's embedding engine, no LLM.

cognee configures itself from the environment at import and keeps process-wide engines and
logging, so ``cognee_driver.py`` runs everything in one subprocess and writes a report; these
tests check that report (one cognee run per module). Also the example.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("cognee", reason='needs the [cognee] extra: pip install -e ".[cognee]"')

from paraphrase_facts import run_example  # noqa: E402

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cognee")
    out = tmp / "report.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, str(HERE / "cognee_driver.py"), str(out),
                          str(tmp / "store")], capture_output=True, text=True, timeout=900,
                         env=env, cwd=tmp)
    assert res.returncode == 0, res.stderr[-4000:]
    return json.loads(out.read_text())


def test_an_empty_store_raises_cognees_own_no_data_error(report):
    assert report["empty_native"] == report["empty_ours"] == "NoDataError"


def test_every_turn_is_a_chunk(report):
    assert report["chunks"] == report["turns"] + 3  # the dialogue and the three pet memories


def test_policy_native_is_cognees_own_order(report):
    for q in report["queries"]:
        assert q["passthrough"] == q["native"], q["query"]


def test_the_pool_is_cognees_search_with_its_stored_vectors(report):
    for q in report["queries"]:
        assert q["pool"] == q["search"], q["query"]  # cognee's order, P = 200 (all 119 here)
        assert len(q["pool"]) == report["chunks"]
        assert q["stored_gap"] == 0.0  # the LanceDB rows themselves, not re-embedded
        assert q["unscored"] == 0
        for key in ("texts", "timestamps", "session_ids", "positions", "node_sets", "query_text"):
            assert key in q["signals"], key


def test_the_default_picks_from_that_pool(report):
    moved = 0
    for q in report["queries"]:
        assert q["ours"] == q["expected"], q["query"]  # the policy's order on the adapter's pool
        assert len(q["ours"]) == len(set(q["ours"])) == 3
        assert q["capped"] == q["ours"][:2]  # the k option caps cognee's top_k
        # the retriever's last_trace: what it returned, from cognee's own order of the pool
        assert q["trace"]["final"] == q["ours"] and q["trace"]["native"] == q["pool"]
        assert q["trace"]["vectors"] == {"store": len(q["pool"])} and q["trace"]["fallback"] is None
        moved += q["ours"] != q["native"]
    assert moved >= 2  # not a pass-through


def test_the_one_line_swap_through_cognee_search(report):
    s = report["search"]
    assert s["after"] != s["before"]
    assert s["after"] == report["completion_texts"]  # the retriever cognee.search registered
    assert s["native_again"] == s["before"]  # use_mempursuit(policy="native")
    assert all(isinstance(x, float) for x in s["scores"])  # cognee's payload shape, with scores
    assert report["registered_after_bad"] == 0


def test_a_pool_shorter_than_k_returns_every_chunk_once(report):
    assert report["short_pool"] == {"n": report["chunks"], "distinct": report["chunks"]}


def test_the_node_set_filter_reaches_the_pool(report):
    assert report["node_set"] == [["pets"]] * 3


def test_an_empty_query_does_what_cognee_does(report):
    """And says so once (issue 64), for an empty and a blank query."""
    for blank, e in report["empty_query"].items():
        assert e["ours"] == e["native"], blank
        assert e["native_warnings"] == [] and len(e["ours_warnings"]) == 1, (blank, e)
        assert "MemPursuitChunksRetriever: the query is" in e["ours_warnings"][0]
    assert sorted(report["empty_query"]) == ["", "   "]


def test_bad_stored_vectors_fall_back_to_cognee_with_one_warning(report):
    f = report["fault"]
    assert f["same_as_native"]
    assert len(f["warnings"]) == 1 and "size 10 for a 384-d query" in f["warnings"][0]
    assert "size 10 for a 384-d query" in f["trace"]["fallback"]  # the trace says so
    assert f["trace"]["final"] == report["queries"][0]["native"]
    assert f["strict"].startswith("CogneeReadError")


def test_an_engine_without_stored_vectors_embeds_the_pool_once(report):
    e = report["embedded"]
    assert e["orders"][0] == report["queries"][0]["ours"]  # the same vectors, from the texts
    assert len(e["warnings"]) == 1 and "does not return stored vectors" in e["warnings"][0]


def test_bad_options_fail_at_registration(report):
    assert report["bad_policy"] == "UnknownNameError"
    assert report["bad_type"] == "TypeError"
    assert report["bad_pool"] == "ValueError"


def test_example_runs_offline():
    out = run_example("cognee_quickstart.py")
    native, rest = out.split("MemPursuit's 3 (the default policy")
    ours, paper = rest.split("the paper's rule")
    assert "cognee's own top 3" in native and "reproduction" in paper.splitlines()[0]
    # cognee's top 3 are the three paraphrases of the job; the default ranks the shifts (the
    # answer) first; the paper's rule keeps one paraphrase and adds the shifts
    assert native.count("nurse") == 3 and "six in the morning" in ours.splitlines()[1]
    assert paper.count("nurse") == 1 and "six in the morning" in paper


def test_the_same_read_options_as_every_adapter(report):
    for where, params in report["surface"].items():
        assert sorted(params) == sorted(["k", "pool", "policy", "policy_options", "strict"]), where
        for name, (kind, default) in params.items():
            assert (kind, default) == ("KEYWORD_ONLY", None), (where, name)
