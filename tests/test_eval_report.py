"""What a user reads after ``mempursuit eval``: the legend at the top of ``summary.md``, the
warning when K reaches the pool, LongMemEval's metric names, and plots that say what they show.

Runs use the Python API with a small deterministic embedder (no model) on a tiny LoCoMo file.
"""

import json

import numpy as np
import pytest

from mempursuit_eval.metrics import LONGMEMEVAL_NAMES, ndcg_any, selection_metrics
from mempursuit_eval.runner import run_eval

from eval_samples import HashEmbedder, sample


def _run(tmp_path, k, **kw):
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps([sample("conv-1"), sample("conv-2")]))
    out = tmp_path / f"run-{'-'.join(map(str, k))}"
    run_eval(dataset="locomo", data=str(data), embedder=HashEmbedder(), k=k, pool=4, out=str(out),
             no_cache=True, bootstrap=50, latency_sample=0, progress=False, plots=False, **kw)
    return out, json.loads((out / "summary.json").read_text())


def test_summary_md_starts_with_a_legend_and_warns_when_k_reaches_the_pool(tmp_path):
    out, summary = _run(tmp_path, (1, 4))
    md = (out / "summary.md").read_text()
    head = md.split("## Run", 1)[0]
    for term in ("*recall*", "*complete coverage*", "recall_all@K", "*native top-K replaced*",
                 "*95% CI*", "percentile bootstrap", "50 resamples, seed 0", "*p* and *test*",
                 "McNemar", "sign test"):
        assert term in head, term
    assert summary["mean_pool_size"] == 4.0
    (warning,) = summary["warnings"]
    assert warning.startswith("K = 4 is at least the mean pool size (4.0)")
    assert f"**Warning:** {warning}" in head
    _, fine = _run(tmp_path, (1, 2))
    assert fine["warnings"] == []


def test_longmemeval_names_in_summary_json_and_md(tmp_path):
    out, summary = _run(tmp_path, (1, 2))
    assert summary["metric_names"] == LONGMEMEVAL_NAMES
    assert summary["metric_names"]["complete_coverage"] == "recall_all@k (session)"
    overall = summary["results"]["native"]["2"]["overall"]
    for key in LONGMEMEVAL_NAMES:
        assert overall[key] is not None and 0 <= overall[key] <= 100, key
    assert overall["session_recall_any"] >= overall["complete_coverage"]
    md = (out / "summary.md").read_text()
    assert "## In LongMemEval's names (%)" in md and "session ndcg_any" in md


def test_longmemevals_metrics_on_one_question():
    # LongMemEval's discount: rank 1 and 2 weigh 1, rank i >= 2 weighs 1 / log2(i)
    assert ndcg_any(["a", "b", "c"], {"a"}, 3) == 1.0
    assert ndcg_any(["b", "c", "a"], {"a"}, 3) == pytest.approx(1 / np.log2(3))
    assert ndcg_any(["b", "a", "a", "c"], {"a", "c"}, 4) == pytest.approx((1 + 1 / np.log2(3)) / 2)
    assert ndcg_any(["x"], {"a"}, 1) == 0.0
    m = selection_metrics(["S2", "S1", "S2"], ["t3", "t1", "t4"], ["S1", "S3"], ["t1", "t9"],
                          selected_uids=["u3", "u1", "u4"], native_uids=["u1", "u2", "u3"])
    assert m["session_recall_any"] == 1.0 and m["complete_coverage"] == 0.0
    assert m["session_ndcg_any"] == pytest.approx(1 / (1 + 1))  # S1 at rank 2 of ideal 2 items
    assert m["turn_recall_any"] == 1.0 and m["turn_coverage"] == 0.0


def _figures(monkeypatch, summary, tmp_path):
    """The figures ``plot_report`` draws, in order, made from matplotlib's defaults whatever an
    earlier test left (open figures, rcParams), and closed as ``plot_report`` closes them (a
    closed figure draws on a canvas of its own), so that no state outlives the test."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from mempursuit_eval.report import plot_report

    figs, close = [], plt.close

    def keep(fig=None):
        figs.append(fig)
        close(fig)

    plt.close("all")
    monkeypatch.setattr(plt, "close", keep)
    with plt.style.context("default"):  # matplotlib's defaults, not what a test set
        plot_report(summary, tmp_path)
    assert not plt.get_fignums(), "plot_report left a figure open"
    return figs


def test_category_gains_title_fits_and_a_chart_of_zeros_says_so(tmp_path, monkeypatch):
    _, summary = _run(tmp_path, (4,))  # K = the pool: every difference is zero
    fig = _figures(monkeypatch, summary, tmp_path)[-1]
    ax = fig.axes[0]
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # its own canvas: the figure is closed, pyplot holds nothing
    canvas.draw()
    box = ax.title.get_window_extent(canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width, "title cut at the figure's edge"
    assert "complete coverage" in ax.get_title()
    assert any("no difference from native" in t.get_text() for t in ax.texts)
    assert (tmp_path / "category_gains.png").exists()


def test_mem0s_own_chatter_stays_out_of_a_run(tmp_path, monkeypatch, caplog, capsys):
    """The harness builds its own fresh store: Mem0's "Resetting all memories" (a WARNING on
    mem0.memory.main) would alarm a user; it is held back during the run, and the level of
    Mem0's logger is restored afterwards."""
    import logging

    import mempursuit_eval.stages as stages
    from mempursuit_eval.store import PlainStore

    class Chatty(PlainStore):
        name = "mem0"
        loggers = ("mem0",)  # a store declares the loggers held back while it is open

        def build(self, *a, **kw):
            logging.getLogger("mem0.memory.main").warning("Resetting all memories")
            return super().build(*a, **kw)

    # open_store builds the store through stages.build_backend: the stand-in needs no Mem0
    monkeypatch.setattr(stages, "build_backend", lambda *a, **kw: Chatty())
    before = logging.getLogger("mem0").level
    with caplog.at_level(logging.INFO):
        _run(tmp_path, (1, 2), framework="mem0")
    assert "Resetting all memories" not in caplog.text + capsys.readouterr().err
    assert logging.getLogger("mem0").level == before
    logging.getLogger("mem0.memory.main").warning("after the run")  # Mem0 speaks again
    assert "after the run" in caplog.text


def test_the_first_look_says_what_changed_in_one_sentence(tmp_path, monkeypatch):
    """Issue 47: the line under the title names the default policy, K, the data file and each
    level's before -> after, the level that moved first; significant differences are bold; the
    category chart shows both levels and its title names the data file."""
    from mempursuit_eval.report import markdown_report, verdict

    _, summary = _run(tmp_path, (1, 2), policies=("native", "centered-fusion"))
    st = summary["paired"]["centered-fusion"]["1"]["overall"]
    st["turn_coverage"].update(baseline=65.86, policy=82.93, diff=17.07, p_value=0.0156)
    st["complete_coverage"].update(baseline=97.56, policy=100.0, diff=2.44, p_value=1.0)
    line = verdict(summary)
    assert line == ("centered-fusion (the default) vs native at K=1, locomo (locomo10.json): "
                    "turn coverage 65.9 → 82.9 (+17.1, p = 0.0156); "
                    "session coverage 97.6 → 100.0 (+2.4, n.s.).")
    md = markdown_report(summary)
    title, blank, first = md.splitlines()[:3]
    assert title == "# mempursuit eval: locomo (locomo10.json)" and first == f"**{line}**"
    row = next(r for r in md.splitlines() if r.startswith("| centered-fusion | 1 | turn_coverage"))
    assert "| **+17.07** |" in row and "| **0.0156** |" in row
    row = next(r for r in md.splitlines()
               if r.startswith("| centered-fusion | 1 | complete_coverage"))
    assert "**" not in row
    summary["paired"] = {}
    assert verdict(summary) is None  # only the baseline ran: nothing to say

    _, summary = _run(tmp_path, (1, 2), policies=("native", "centered-fusion"))
    fig = _figures(monkeypatch, summary, tmp_path)[-1]
    assert [ax.get_title().split(":")[0] for ax in fig.axes] == ["session level", "turn level"]
    assert "locomo10.json" in fig._suptitle.get_text()


def test_the_run_log_counts_units_once(tmp_path, capsys):
    run_eval(dataset="locomo", data=str(_data(tmp_path)), embedder=HashEmbedder(), k=(1,), pool=4, no_cache=True,
             bootstrap=10, latency_sample=0, progress=True, plots=False)
    err = capsys.readouterr().err
    assert "8 units (turns) in 2 group(s)" in err and "turns units" not in err


def _data(tmp_path):
    data = tmp_path / "locomo10.json"
    data.write_text(json.dumps([sample("conv-1"), sample("conv-2")]))
    return data
