"""``mempursuit_eval.datasets.DATASETS`` is the one table of datasets: every row loads a tiny file
of its format with every unit kind it declares, the command line offers exactly its names, the
default selection leaves out exactly its excluded categories, and the benchmark loaders and the
custom format report a bad field through the same check, in the same words."""

import json
import re
from pathlib import Path

import pytest

from mempursuit_core.cli import main as cli_main
from mempursuit_eval.datasets import (DATASETS, UNIT_KINDS, DatasetFormatError, checks,
                                      load_dataset, select_questions)
from mempursuit_eval.datasets.custom import CustomDataError, load_custom, write_custom
from eval_samples import beam_root, lme_record, locomo_file

CUSTOM = {"memories": [{"id": "m1", "text": "Rex is a dog.", "session": "s1"},
                       {"id": "m2", "text": "I like hiking.", "session": "s2"}],
          "questions": [{"id": "q1", "question": "Who is Rex?", "gold": ["m1"],
                         "category": "pets"},
                        {"id": "q2", "question": "Any hobby?", "gold": ["m2"],
                         "category": "skip"}],
          "default_excluded": ["skip"]}


def _lme_file(tmp_path, name):
    rec = lme_record("q1")
    abstain = {**lme_record("q2_abs"), "answer_session_ids": []}
    path = tmp_path / name
    path.write_text(json.dumps([rec, abstain]))
    return path


def _custom(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(CUSTOM))
    return path


def _beam_file(tmp_path):
    abstain = [{"question": "What is my cat's name?", "answer": "not mentioned",
                "source_chat_ids": []}]
    return beam_root(tmp_path, None, lambda probing: probing.update(abstention=abstain))


FIXTURES = Path(__file__).resolve().parent / "fixtures"

#: A small file of each dataset's format (a new row of DATASETS needs one here).
FILES = {
    "locomo": lambda t: FIXTURES / "dialogue.json",
    "longmemeval": lambda t: _lme_file(t, "longmemeval_s.json"),
    "longmemeval-oracle": lambda t: _lme_file(t, "longmemeval_oracle.json"),
    "beam": _beam_file,
    "hotpotqa": lambda t: FIXTURES / "hotpotqa_small.jsonl",
    "hotpotqa-distractor": lambda t: FIXTURES / "hotpotqa_small.jsonl",
    "2wikimultihopqa": lambda t: FIXTURES / "twowiki_small.json",
    "2wikimultihopqa-distractor": lambda t: FIXTURES / "twowiki_small.json",
    "musique": lambda t: FIXTURES / "musique_small.jsonl",
    "musique-distractor": lambda t: FIXTURES / "musique_small.jsonl",
    "custom": _custom,
}


def test_every_row_has_a_file_here():
    assert list(FILES) == list(DATASETS)
    assert all(spec.name == name for name, spec in DATASETS.items())


@pytest.mark.parametrize("name", list(DATASETS))
def test_every_row_loads_each_unit_kind_it_declares(name, tmp_path):
    spec = DATASETS[name]
    path = FILES[name](tmp_path)
    for units in spec.units:
        ds = load_dataset(name, path, units=units, download=False)
        assert ds.name == name and ds.units and ds.questions
        assert {q.group for q in ds.questions} <= set(ds.groups())
    for units in set(UNIT_KINDS) - set(spec.units):
        with pytest.raises(ValueError, match=f"{units}"):
            load_dataset(name, path, units=units, download=False)


@pytest.mark.parametrize("name", list(DATASETS))
def test_the_default_selection_leaves_out_the_rows_exclusions(name, tmp_path):
    ds = load_dataset(name, FILES[name](tmp_path), download=False)
    excluded = set(getattr(ds, "default_excluded", None) or DATASETS[name].default_excluded)
    chosen = select_questions(ds)
    assert chosen == [q for q in ds.questions if q.category not in excluded]
    # the LoCoMo fixture has no adversarial question; the document sets but MuSiQue exclude none
    if name != "locomo" and DATASETS[name].default_excluded:
        assert len(chosen) < len(ds.questions)


def test_the_command_line_offers_exactly_the_tables_names(capsys):
    with pytest.raises(SystemExit) as info:
        cli_main(["eval", "--help"])
    assert info.value.code == 0
    text = capsys.readouterr().out
    offered = re.search(r"--dataset \{([^}]*)\}", text).group(1).split(",")
    assert offered == list(DATASETS)
    help_text = " ".join(text.split())
    for name, spec in DATASETS.items():
        assert f"{name}: {spec.description}" in help_text
    with pytest.raises(SystemExit):
        cli_main(["convert", "--help"])
    text = capsys.readouterr().out
    offered = re.search(r"--dataset \{([^}]*)\}", text).group(1).split(",")
    assert offered == [n for n, s in DATASETS.items() if not s.path_only]


def test_an_unknown_name_lists_the_tables_names():
    with pytest.raises(ValueError, match="known: " + ", ".join(DATASETS)):
        load_dataset("locomo2")


# --------------------------------------------------------------------------------------------
# one check, one message shape, for the benchmarks and the custom format
# --------------------------------------------------------------------------------------------

WRONG_TYPE = re.compile(r"^(?P<file>\S+): (?P<record>.+): 'text' is a number 42, "
                        r"expected (?P<expected>.+) \(fix or remove that record\)$")
MISSING = re.compile(r"^(?P<file>\S+): (?P<record>.+): 'text' is missing "
                     r"\(expected (?P<expected>.+); fix or remove that record\)$")


def _locomo_turn_text(tmp_path, value):
    def mutate(data):
        turn = data[0]["conversation"]["session_1"][0]
        if value is None:
            del turn["text"]
        else:
            turn["text"] = value
    return locomo_file(tmp_path, mutate)


def _custom_memory_text(tmp_path, value):
    obj = json.loads(json.dumps(CUSTOM))
    if value is None:
        del obj["memories"][0]["text"]
    else:
        obj["memories"][0]["text"] = value
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(obj))
    return path


def _error(load, path) -> DatasetFormatError:
    with pytest.raises(DatasetFormatError) as info:
        load(path)
    return info.value


@pytest.mark.parametrize("value, shape", [(42, WRONG_TYPE), (None, MISSING)],
                         ids=["wrong type", "missing"])
def test_benchmark_and_custom_report_a_bad_field_through_the_same_check(
        value, shape, tmp_path, monkeypatch):
    calls = []
    wrong_type = checks.wrong_type

    def spy(*args, **kw):
        calls.append(args[1])
        return wrong_type(*args, **kw)

    monkeypatch.setattr(checks, "wrong_type", spy)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bench = _error(lambda p: load_dataset("locomo", p),
                   _locomo_turn_text(tmp_path / "a", value))
    custom = _error(load_custom, _custom_memory_text(tmp_path / "b", value))
    assert isinstance(custom, CustomDataError)
    bench, custom = str(bench), str(custom)
    b, c = shape.match(bench), shape.match(custom)
    assert b and c, (bench, custom)
    assert b["file"].endswith("locomo10.json") and c["file"].endswith("mine.json")
    assert b["record"] == "conversation 0 (sample_id conv-1): session_1[0]"
    assert c["record"] == "memory #0 (id 'm1')"
    if value is not None:  # both went through checks.wrong_type
        assert calls == [f"{tmp_path / 'a' / 'locomo10.json'}: conversation 0 (sample_id "
                         "conv-1): session_1[0]: 'text'",
                         f"{tmp_path / 'b' / 'mine.json'}: memory #0 (id 'm1'): 'text'"]


def test_a_converted_benchmark_reads_back_with_the_same_checks(tmp_path):
    ds = load_dataset("beam", beam_root(tmp_path), download=False)
    back = load_dataset("custom", write_custom(ds, tmp_path / "beam.jsonl"))
    assert [(u.uid, u.text, u.session_id) for u in back.units] == \
        [(u.uid, u.text, u.session_id) for u in ds.units]
    assert [(q.qid, q.gold_sessions, q.gold_turns) for q in back.questions] == \
        [(q.qid, q.gold_sessions, q.gold_turns) for q in ds.questions]


def test_a_repeated_record_id_is_refused_by_each_benchmark(tmp_path):
    def repeat(data):
        data[1]["sample_id"] = data[0]["sample_id"]
    with pytest.raises(DatasetFormatError, match="sample_id 'conv-1' repeats conversation 0"):
        load_dataset("locomo", locomo_file(tmp_path, repeat))
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps([lme_record("q1"), lme_record("q1")]))
    with pytest.raises(DatasetFormatError, match="question_id 'q1' repeats record 0"):
        load_dataset("longmemeval", path)
