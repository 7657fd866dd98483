"""MemoryBank adapter, pure-Python parts: file reading, documents, expansion, merging, ordering.

No FAISS and no embedder needed. Expected values are worked out by hand from MemoryBank's
``local_doc_qa.py`` (``JsonMemoryLoader.load``, ``similarity_search_with_score_by_vector``,
``search_memory``); the comments give the reasoning. ``integration_tests/test_memorybank.py``
checks the whole path, including a comparison with digests produced by MemoryBank's own code.
"""

import json
import os
from pathlib import Path

import pytest

from mempursuit_memorybank import (
    TEMPLATES,
    MemoryBankFormatError,
    ResidentMemory,
    UnknownUserError,
    build_documents,
    detect_language,
    list_users,
    read_from_seeds,
    read_user,
)
from mempursuit_memorybank.documents import summary_text, turn_text
from mempursuit_memorybank.memory import merge_user, parse_user, save_memory_file
from mempursuit_memorybank.readpath import (
    assemble,
    contiguous_runs,
    expand_seeds,
    group_by_date,
    neighbour_offsets,
    rewrite_query,
)

ROOT = Path(__file__).resolve().parents[1]
#: The project's own MemoryBank-format files (invented users, named like MemoryBank's samples).
FIXTURES = ROOT / "tests" / "fixtures" / "memorybank"
#: MemoryBank's published sample files, for the tests that check those files themselves.
DATA = Path(os.environ.get("MEMPURSUIT_MEMORYBANK_DATA", ROOT.parent / "shared/data/memorybank"))
EN = TEMPLATES["en"]
CN = TEMPLATES["cn"]


def sample(name):
    path = DATA / name
    if not path.exists():
        pytest.skip(f"checks MemoryBank's published sample {path}, not found "
                    "(set MEMPURSUIT_MEMORYBANK_DATA)")
    return path


def tiny_user(**extra):
    user = {
        "name": "Ann",
        "history": {
            "2023-05-01": [{"query": " hi ", "response": "hello "}, ["q2", "r2"]],
            "2023-05-02": [{"query": "films?", "response": "yes", "memory_strength": 2}],
        },
    }
    user.update(extra)
    return user


# ------------------------------------------------------------------------------ reading files
def test_fixture_files_parse():
    expected = {"memory_bank_en.json": {"Emily": 10, "Frank": 3, " Jason ": 2},
                "memory_bank_cn.json": {"张曼婷": 3, "王峰": 7}}
    for name, dates in expected.items():
        data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
        users = list_users(data)
        assert users == list(dates)
        for user in users:
            mem = read_user(data, user)
            assert len(mem.history) == dates[user]
            assert mem.summary == {} and mem.overall_personality is None
    assert read_user(FIXTURES / "memory_bank_en.json", "Emily").n_turns == 49


def test_sample_files_parse():
    for name in ("memory_bank_en.json", "memory_bank_cn.json"):
        data = json.loads(sample(name).read_text(encoding="utf-8"))
        users = list_users(data)
        assert len(users) == 15
        for user in users:
            mem = read_user(data, user)
            assert len(mem.history) == 10
            assert mem.summary == {} and mem.overall_personality is None


def test_turn_shapes_and_extra_keys():
    mem = parse_user("Ann", tiny_user())
    assert [t.query for t in mem.history["2023-05-01"]] == [" hi ", "q2"]
    assert mem.history["2023-05-02"][0].response == "yes"  # bookkeeping keys ignored
    assert mem.n_turns == 3


def test_user_name_fallbacks_and_errors():
    data = {" Jason ": tiny_user(), "Ann": tiny_user()}
    assert read_user(data, "Jason").name == " Jason "  # unique match after strip
    assert read_user(data, " Jason ").name == " Jason "
    with pytest.raises(UnknownUserError, match="'Bob' is not in memory; users there: ' Jason ', 'Ann'"):
        read_user(data, "Bob")
    with pytest.raises(MemoryBankFormatError, match="holds 2 users; name one"):
        read_user(data)
    # a single user's object at the top level
    assert read_user(tiny_user()).name == "Ann"
    assert read_user({"Ann": tiny_user()}).name == "Ann"  # the only user


def test_null_sections_are_empty():
    mem = parse_user("Ann", tiny_user(summary=None, personality=None, overall_history=None))
    assert mem.summary == {} and mem.personality == {} and mem.overall_history is None


@pytest.mark.parametrize(
    "patch, message",
    [
        ({"history": []}, r"'history' must be an object keyed by date, got list"),
        ({"history": {"2023-05-01": {"query": "a"}}}, r"history\['2023-05-01'\] must be a list of turns"),
        ({"history": {"d": [{"query": "a"}]}}, r"history\['d'\]\[0\]: a turn needs 'query' and 'response', missing \['response'\]"),
        ({"history": {"d": [["a", "b", "c"]]}}, r"\[query, response\] pair, got 3 items"),
        ({"history": {"d": [{"query": 1, "response": "b"}]}}, r"the turn's query must be a string, got int"),
        ({"history": {"d": ["ab"]}}, r"a turn must be an object \{query, response\} or a \[query, response\] pair, got str"),
        ({"summary": {"d": {"text": "x"}}}, r"summary\['d'\]: a summary object needs a string 'content'"),
        ({"summary": {"d": 3}}, r"a summary must be a string or an object with 'content', got int"),
        ({"summary": ["x"]}, r"'summary' must be an object keyed by date"),
        ({"personality": {"d": {"a": 1}}}, r"personality\['d'\] must be a string"),
        ({"overall_history": ["x"]}, r"'overall_history' must be a string, got list"),
    ],
)
def test_bad_user_objects(patch, message):
    with pytest.raises(MemoryBankFormatError, match=message):
        read_user({"Ann": tiny_user(**patch)}, "Ann")


def test_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="memory file not found"):
        read_user(tmp_path / "missing.json", "Ann")
    bad = tmp_path / "bad.json"
    bad.write_text('{"Ann": {"history": }', encoding="utf-8")
    with pytest.raises(MemoryBankFormatError, match=r"bad.json: not valid JSON \(line 1, column 21"):
        read_user(bad, "Ann")
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(MemoryBankFormatError, match="top level must be an object keyed by user name, got list"):
        read_user(bad, "Ann")
    bad.write_bytes(b'{"Ann": "\xff"}')
    with pytest.raises(MemoryBankFormatError, match="not UTF-8"):
        read_user(bad, "Ann")
    bad.write_text('{"Ann": 3}', encoding="utf-8")
    with pytest.raises(MemoryBankFormatError, match=r"bad.json, user 'Ann': a user's memory must be an object"):
        read_user(bad, "Ann")
    with pytest.raises(MemoryBankFormatError, match="is a directory"):
        read_user(tmp_path, "Ann")


def test_user_must_be_a_string():
    data = {"123": tiny_user()}
    with pytest.raises(TypeError, match=r"user must be a str \(the user's key in the memory file\) or None, "
                                        r"got int 123; pass user='123'"):
        read_user(data, 123)
    assert read_user(data, "123").name == "123"


@pytest.mark.parametrize("depth", [600, 5000])
def test_deeply_nested_files_are_format_errors(tmp_path, depth):
    # 600 levels pass json.loads but not copy.deepcopy; 5000 stop json.loads itself. Both used to
    # escape as RecursionError.
    path = tmp_path / "deep.json"
    path.write_text('{"Ann": {"history": {}, "extra": ' + "[" * depth + "]" * depth + "}}", encoding="utf-8")
    with pytest.raises(MemoryBankFormatError, match=r"deep.json.*nested too deeply"):
        read_user(path, "Ann")


def test_save_memory_file_keeps_other_users(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"Ann": tiny_user(), "Bob": {"name": "Bob"}}), encoding="utf-8")
    mem = read_user(path, "Ann")
    mem.raw["overall_history"] = "new"
    save_memory_file(path, mem)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["Bob"] == {"name": "Bob"} and data["Ann"]["overall_history"] == "new"


def _t(q, r="ok"):
    return {"query": q, "response": r}


def test_merge_history_three_way():
    base = {"history": {"d1": [_t("a")]}}
    disk = {"history": {"d1": [_t("a"), _t("theirs")], "d0": [_t("old")]}}
    mine = {"history": {"d1": [_t("a"), _t("a"), _t("mine")], "d2": [_t("new day")]}}
    out = merge_user(disk, mine, base)
    # the file's turns and order first; our additions after them; a turn said twice kept twice
    assert out["history"] == {"d1": [_t("a"), _t("theirs"), _t("a"), _t("mine")], "d0": [_t("old")],
                              "d2": [_t("new day")]}
    # a retry (our additions already on disk, base not updated) writes nothing twice
    assert merge_user(out, mine, base)["history"] == out["history"]
    # the same turn added by both writers since the base is written once
    both = merge_user({"history": {"d1": [_t("a"), _t("x")]}}, {"history": {"d1": [_t("a"), _t("x")]}}, base)
    assert both["history"] == {"d1": [_t("a"), _t("x")]}
    # a turn another writer removed (MemoryBank's forgetting) is not brought back
    assert merge_user({"history": {"d1": []}}, {"history": {"d1": [_t("a"), _t("b")]}}, base)["history"] == {
        "d1": [_t("b")]}
    # without a base everything of ours counts as ours, less what the file already has
    assert merge_user({"history": {"d1": [_t("a")]}}, mine, None)["history"]["d1"] == [_t("a"), _t("a"), _t("mine")]


def test_merge_dated_sections_and_other_keys():
    base = {"summary": {"d1": "s1", "d2": "s2"}, "overall_history": "o", "name": "Ann"}
    disk = {"summary": {"d1": "s1 (theirs)", "d2": "s2", "d3": "s3"}, "overall_history": "o (theirs)",
            "name": "Ann", "memory_strength": 2}
    mine = {"summary": {"d1": "s1 (mine)", "d4": {"content": "s4"}}, "overall_history": "o", "name": "Ann"}
    out = merge_user(disk, mine, base)
    # d1 changed by both: ours; d2 removed here and untouched there: removed; d3, d4 from each side
    assert out["summary"] == {"d1": "s1 (mine)", "d3": "s3", "d4": {"content": "s4"}}
    assert out["overall_history"] == "o (theirs)" and out["memory_strength"] == 2 and out["name"] == "Ann"
    assert "personality" not in out  # no side has one
    assert merge_user(disk, {**mine, "overall_history": "o (mine)"}, base)["overall_history"] == "o (mine)"


def test_save_memory_file_merges_and_updates_the_memory(tmp_path):
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"Ann": tiny_user(), "Bob": {"name": "Bob"}}), encoding="utf-8")
    mine, theirs = read_user(path, "Ann"), read_user(path, "Ann")
    theirs.raw["history"]["2023-05-02"].append(_t("theirs"))
    save_memory_file(path, theirs)
    mine.raw["history"]["2023-05-02"].append(_t("mine"))
    save_memory_file(path, mine)
    saved = json.loads(path.read_text(encoding="utf-8"))["Ann"]["history"]["2023-05-02"]
    assert [t["query"] for t in saved] == ["films?", "theirs", "mine"]
    assert [t.query for t in mine.history["2023-05-02"]] == ["films?", "theirs", "mine"]
    assert mine.base == mine.raw and mine.base is not mine.raw
    bad = parse_user("Ann", tiny_user())
    bad.raw["history"] = []
    with pytest.raises(MemoryBankFormatError, match=r"the memory to save, user 'Ann': 'history' must be an object"):
        save_memory_file(path, bad)


# ------------------------------------------------------------------------------ documents
def test_english_fixture_documents_hand_checked():
    mem = read_user(FIXTURES / "memory_bank_en.json", "Emily")
    docs = build_documents(mem, "en").documents
    assert len(docs) == mem.n_turns == 49
    assert docs[0].text == (
        "Conversation content on 2023-04-27:[|User|]: Hello, my name is Emily. I just moved into a "
        "small flat near the harbour.; [|AI|]: Hello, Emily! Welcome to your new home. How are you "
        "finding the harbour so far?"
    )
    assert docs[0].date == "2023-04-27" and docs[0].key == ("2023-04-27", "turn", 0)
    assert docs[-1].key == ("2023-05-06", "turn", 4)
    assert [d.date for d in docs] == sorted(d.date for d in docs)  # history order (sorted in the file)


def test_chinese_fixture_documents_hand_checked():
    mem = read_user(FIXTURES / "memory_bank_cn.json", "张曼婷")
    assert detect_language(mem) == "cn"
    docs = build_documents(mem, "cn").documents
    assert docs[0].text == (
        "时间2023-04-27的对话内容：[|用户|]： 你好，我叫张曼婷，是一名小学美术老师。; "
        "[|AI恋人|]： 你好，张曼婷！教孩子们画画一定很有趣。"
    )
    forget = build_documents(mem, "cn-forget").documents
    assert "[|AI伴侣|]： 你好，张曼婷" in forget[0].text
    assert detect_language(read_user(FIXTURES / "memory_bank_en.json", "Emily")) == "en"


def test_english_documents_hand_checked():
    mem = read_user(sample("memory_bank_en.json"), "Emily")
    docs = build_documents(mem, "en").documents
    assert len(docs) == mem.n_turns == 49
    assert docs[0].text == (
        "Conversation content on 2023-04-27:[|User|]: Hello, my name is Emily. Nice to meet you.; "
        "[|AI|]: Hello, Emily. I'm your AI companion. Can I assist you in any way?"
    )
    assert docs[0].date == "2023-04-27" and docs[0].key == ("2023-04-27", "turn", 0)
    assert [d.date for d in docs] == sorted(d.date for d in docs)  # history order (sorted in the sample)


def test_chinese_documents_hand_checked():
    mem = read_user(sample("memory_bank_cn.json"), "张曼婷")
    assert detect_language(mem) == "cn"
    docs = build_documents(mem, "cn").documents
    assert docs[0].text == (
        "时间2023-04-27的对话内容：[|用户|]： 你好，我叫张曼婷，很高兴认识你。; "
        "[|AI恋人|]： 你好，张曼婷，我是你的AI伴侣，有什么能帮到你的吗？"
    )
    forget = build_documents(mem, "cn-forget").documents
    assert "[|AI伴侣|]： 你好，张曼婷" in forget[0].text


def test_turns_are_stripped_and_pairs_accepted():
    mem = parse_user("Ann", tiny_user())
    docs = build_documents(mem, EN).documents
    assert docs[0].text == "Conversation content on 2023-05-01:[|User|]: hi; [|AI|]: hello"
    assert docs[1].text == "Conversation content on 2023-05-01:[|User|]: q2; [|AI|]: r2"
    assert turn_text("D", "a\nb", "c", CN) == "时间D的对话内容：[|用户|]： a\nb; [|AI恋人|]： c"


def test_summary_documents_string_dict_and_order():
    summaries = {"2023-05-02": "plain", "2023-05-01": {"content": "it's 'quoted'", "memory_strength": 1}}
    mem = parse_user("Ann", tiny_user(summary=summaries))
    docs = build_documents(mem, EN).documents
    # turns of a date, then its summary; dates in history order (not summary order)
    assert [d.key for d in docs] == [
        ("2023-05-01", "turn", 0), ("2023-05-01", "turn", 1), ("2023-05-01", "summary", 0),
        ("2023-05-02", "turn", 0), ("2023-05-02", "summary", 0),
    ]
    # MemoryBank's f-string writes the dict itself (Python's str of a dict)
    assert docs[2].text == (
        "The summary of the conversation on 2023-05-01 is: "
        "{'content': \"it's 'quoted'\", 'memory_strength': 1}"
    )
    assert docs[4].text == "The summary of the conversation on 2023-05-02 is: plain"
    content = build_documents(mem, EN, summary_value="content").documents
    assert content[2].text == "The summary of the conversation on 2023-05-01 is: it's 'quoted'"
    assert summary_text("D", {"content": "x"}, CN) == "时间D的对话总结为：{'content': 'x'}"
    assert summary_text("D", {"content": "x"}, CN, "content") == "时间D的对话总结为：x"


def test_summary_without_history_is_reported_not_indexed():
    mem = parse_user("Ann", tiny_user(summary={"2030-01-01": "orphan"}))
    with pytest.warns(UserWarning, match="not indexed.*2030-01-01"):
        docset = build_documents(mem, EN)
    assert docset.unindexed_summaries == ["2030-01-01"]
    assert all(d.kind == "turn" for d in docset)


def test_language_detection_and_names():
    assert detect_language(parse_user("Ann", tiny_user())) == "en"
    with pytest.raises(ValueError, match="unknown MemoryBank language 'fr'"):
        build_documents(parse_user("Ann", tiny_user()), "fr")


# ------------------------------------------------------------------------------ expansion
def test_literal_offsets_follow_the_empty_result_list():
    # range(1, max(i, len(docs) - i)) with len(docs) == 0 while seeds are expanded
    assert list(neighbour_offsets(0, 10)) == []
    assert list(neighbour_offsets(1, 10)) == []
    assert list(neighbour_offsets(4, 10)) == [1, 2, 3]
    assert list(neighbour_offsets(4, 10, "full")) == [1, 2, 3, 4, 5]
    assert list(neighbour_offsets(0, 1, "full")) == []
    with pytest.raises(ValueError, match="window"):
        neighbour_offsets(1, 3, "wide")


def test_expansion_literal_vs_full_hand_checked():
    lengths = [10] * 8
    dates = ["d"] * 8
    # literal: seed 3 walks offsets 1, 2 -> 4, 2, 5, 1; never position 0, never past 2*3-1 = 5
    assert expand_seeds([3], lengths, dates, budget=1000) == [1, 2, 3, 4, 5]
    # full: every position of the index
    assert expand_seeds([3], lengths, dates, budget=1000, window="full") == list(range(8))
    # seeds 0 and 1 are never expanded in the literal walk
    assert expand_seeds([0, 1], lengths, dates, budget=1000) == [0, 1]
    assert expand_seeds([0], lengths, dates, budget=1000, window="full") == list(range(8))


def test_budget_break_leaves_only_the_current_pair():
    # seed 4 (len 50): offset 1 looks at 5 (len 200): 50 + 200 > 200 -> break: 3 is not looked at
    # at this offset; offset 2 goes on: 6 (len 60): 110 <= 200 kept; 2 (len 60): 170 kept;
    # offset 3: 7 (len 40): 210 > 200 -> break (1 not looked at); offset 4: 8 is outside the
    # index, 0 (len 10): 180 kept.
    lengths = [10, 10, 60, 10, 50, 200, 60, 40]
    assert expand_seeds([4], lengths, ["d"] * 8, window="full") == [0, 2, 4, 6]
    # a seed longer than the budget keeps no neighbour
    assert expand_seeds([4], [10, 10, 10, 10, 250, 10, 10, 10], ["d"] * 8, window="full") == [4]


def test_other_dates_are_passed_over_not_stopping_the_walk():
    lengths = [10] * 7
    dates = ["a", "a", "b", "a", "b", "a", "a"]
    # seed 3 (date a), full window: 4 (b) passed, 2 (b) passed, 5 and 1 kept, 6 and 0 kept
    assert expand_seeds([3], lengths, dates, window="full") == [0, 1, 3, 5, 6]
    # but their length still counts against the budget check (not the running total)
    long_b = [10, 10, 195, 10, 10, 10, 10]
    assert expand_seeds([3], long_b, dates, window="full") == [0, 1, 3, 5, 6]
    # a too-long neighbour ends its offset's pair: position 2 (same date, short) is never kept,
    # because at offset 1 the walk looks at 4 first and breaks
    same = ["a", "a", "a", "a", "b", "a", "a"]
    assert expand_seeds([3], [10, 10, 10, 10, 195, 10, 10], same, window="full") == [0, 1, 3, 5, 6]
    assert expand_seeds([3], [10, 10, 10, 10, 10, 10, 10], same, window="full") == [0, 1, 2, 3, 5, 6]


def test_repeated_neighbours_count_and_missing_seeds():
    # a neighbour that is another seed still uses budget; -1 (FAISS: no result) is skipped
    assert expand_seeds([-1, 2], [10, 10, 10], ["d"] * 3, window="full") == [0, 1, 2]
    with pytest.raises(IndexError, match="outside the index of 3"):
        expand_seeds([3], [10, 10, 10], ["d"] * 3)
    with pytest.raises(ValueError, match="3 lengths but 2 dates"):
        expand_seeds([0], [1, 2, 3], ["a", "b"])


def test_runs_merge_sort_and_join():
    assert contiguous_runs([0, 1, 2, 5, 7, 8]) == [[0, 1, 2], [5], [7, 8]]
    assert contiguous_runs([]) == []
    texts = ["时间b的对话内容：x1", "时间b的对话内容：x2", "y", "时间a的对话内容：z", "时间c的对话内容：w"]
    dates = ["b", "b", "c", "a", "c"]
    pieces = assemble([[0, 1, 2], [3], [4]], texts, dates)
    # run [0, 1, 2] crosses from date b to c: dated b (its first document), texts glued with no
    # separator, the prefix of b removed everywhere; the sort by date is stable
    assert [(p.date, p.text, p.positions) for p in pieces] == [
        ("a", "z", (3,)), ("b", "x1x2y", (0, 1, 2)), ("c", "w", (4,)),
    ]
    memos, ds = group_by_date(pieces + [pieces[-1]])
    assert memos == ["z", "x1x2y", "w\nw"] and ds == ["a", "b", "c"]


def test_english_prefix_is_kept_in_the_output():
    texts = [turn_text("2023-05-01", "a", "b", EN), turn_text("2023-05-01", "c", "d", EN)]
    res = read_from_seeds([1], texts, ["2023-05-01"] * 2, ResidentMemory("Ann", "", ""), window="full")
    assert res.runs == ((0, 1),)
    assert res.related_memos == (
        "Conversation content on 2023-05-01:[|User|]: a; [|AI|]: bConversation content on 2023-05-01:[|User|]: c; [|AI|]: d",
    )


def test_read_from_seeds_result_and_prompt_fields():
    texts = ["A" * 50, "B" * 50, "C" * 50, "D" * 50, "E" * 50]
    dates = ["2023-05-02", "2023-05-02", "2023-05-02", "2023-05-01", "2023-05-01"]
    resident = ResidentMemory.from_memory("Ann", "old times", "kind", EN)
    res = read_from_seeds([4, 2], texts, dates, resident, seed_distances=[0.5, 0.7])
    # literal: seed 4 walks offsets 1..3: 3 (same date) kept, 2, 1 other date; seed 2 walks
    # offset 1: 3 is another date, 1 same date kept
    assert res.expanded == (1, 2, 3, 4)
    assert res.runs == ((1, 2, 3, 4),)  # one run across the date boundary, dated 2023-05-02
    assert res.dates == ("2023-05-02",) and res.memo_dates == "2023-05-02"
    assert res.seeds == (4, 2) and res.seed_distances == (0.5, 0.7)
    assert res.related_memory_content == "\n" + "B" * 50 + "C" * 50 + "D" * 50 + "E" * 50 + "\n"
    fields = res.prompt_fields()
    assert fields["history_summary"] == "The summary of your past memories with the user is: old times"
    assert fields["personality"] == "kind" and fields["user_name"] == "Ann"
    assert res.uses_memory_prompt
    assert res.as_memorybank() == (["B" * 50 + "C" * 50 + "D" * 50 + "E" * 50], "2023-05-02")
    # the seed order does not matter; only the seeds do
    again = read_from_seeds([2, 4], texts, dates, resident)
    assert again.related_memos == res.related_memos and again.expanded == res.expanded
    assert "seeds=[4, 2]" in repr(res)


def test_resident_memory_rules():
    assert ResidentMemory.from_memory("Ann", None, None, EN) == ResidentMemory("Ann", "", "")
    assert ResidentMemory.from_memory("Ann", "", None, CN).history_summary == "你和用户过去的回忆总结是："
    res = read_from_seeds([], [], [], ResidentMemory.from_memory("Ann", "x", None, EN))
    assert res.related_memos == () and res.memo_dates == "" and res.related_memory_content == "\n\n"
    assert not res.uses_memory_prompt  # no personality -> MemoryBank's new-user prompt


def test_query_rewrite():
    assert rewrite_query("[|User|] asked [|AI|]", "Ann", EN) == "Ann asked AI"
    assert rewrite_query("[|用户|]问[|AI伴侣|]", "安", CN) == "安问AI"
