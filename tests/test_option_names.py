"""A misspelt option is one line naming it, its nearest valid name and every valid one: the
check a policy's options meet wherever they come from (``get_selector``, ``ReadOptions`` and
its ``policy_options``, an adapter's keywords through ``ReadOptions.build(own=...)``)."""

import pytest

from mempursuit_core import get_selector
from mempursuit_core.options import ReadOptions
from mempursuit_core.plugins import selector_options, signature_options
from mempursuit_core.policies import CenteredFusion
from mempursuit_core.selectors import PoolSelector


def _one_line(excinfo) -> str:
    message = str(excinfo.value)
    assert "\n" not in message
    return message


def test_get_selector_names_a_misspelt_option_and_the_valid_ones():
    with pytest.raises(TypeError) as excinfo:
        get_selector("centered-fusion", brige=8)
    message = _one_line(excinfo)
    assert message.startswith("unknown policy option 'brige' (did you mean 'bridge'?); valid: ")
    assert "follow_from" in message and "(policy 'centered-fusion')" in message
    assert "CenteredFusion.__init__" not in message
    with pytest.raises(TypeError, match="policy 'native' takes no options"):
        get_selector("native", lam=0.5)
    assert get_selector("mmr", lam=0.3).lam == 0.3  # a valid option still passes


def test_policy_options_are_checked_when_the_options_are_built():
    with pytest.raises(TypeError) as excinfo:
        ReadOptions.build("MemPursuitToy", policy="mmr", policy_options={"lamb": 0.3})
    assert _one_line(excinfo) == ("MemPursuitToy: unknown policy option 'lamb' (did you mean "
                                  "'lam'?); valid: lam (policy 'mmr')")


def test_an_adapter_keyword_is_named_with_the_adapters_own_and_the_policys():
    def __init__(self, top_k=10, *, document_store=None, k=None, **options):
        """An adapter's constructor: its own names, and the policy's through ``**options``."""

    with pytest.raises(TypeError) as excinfo:
        ReadOptions.build("MemPursuitToy", own=__init__, documnet_store=3)
    message = _one_line(excinfo)
    assert message.startswith("MemPursuitToy: unknown option 'documnet_store' (did you mean "
                              "'document_store'?); valid: budget_tokens, document_store, "
                              "follow_timeout, k, policy, policy_options, pool, strict, top_k "
                              "(MemPursuitToy) and "
                              "adjacent, ")  # its own, the shared ones build takes, the policy's
    with pytest.raises(TypeError, match=r"'follow_timout' \(did you mean 'follow_timeout'\?\)"):
        ReadOptions.build("MemPursuitToy", own=__init__, follow_timout=1.0)
    with pytest.raises(TypeError, match=r"'budget_token' \(did you mean 'budget_tokens'\?\)"):
        ReadOptions.build("MemPursuitToy", own=__init__, budget_token=500)
    assert ReadOptions.build("MemPursuitToy", own=__init__, budget_tokens=500).budget_tokens == 500
    assert message.endswith("(policy 'centered-fusion')")
    assert ReadOptions.build("MemPursuitToy", own=__init__, bridge=3).policy_options == {
        "bridge": 3}
    with pytest.raises(TypeError, match="a selector object takes no options"):
        ReadOptions.build("MemPursuitToy", policy=get_selector("mmr"), own=("top_k",), topk=3)


def test_a_policy_subclass_takes_its_bases_options_and_a_catch_all_takes_any():
    class RecencyFusion(CenteredFusion):  # CONTRIBUTING.md's channel in a package of one's own
        def __init__(self, *, recency: float = 0.0, **options):
            super().__init__(**options)
            self.recency = float(recency)

    class Anything(PoolSelector):
        def __init__(self, **params):
            self.params = params

    names = signature_options(RecencyFusion)
    assert names[0] == "recency" and "bridge" in names
    assert signature_options(Anything) is None  # its **params are its own: nothing to check
    assert signature_options(PoolSelector) == ()
    assert selector_options("mmr") == ("lam",)


def test_mem0_metadata_keys_is_checked_in_one_line():
    """Mem0's title key (``metadata_keys={"titles": key}``, the document adapters' option): a
    bad mapping fails when the settings are made, in one line naming the fix; the default is
    ``title`` (no Mem0 import: the settings are Mem0-free)."""
    from mempursuit_mem0.settings import MemPursuitSettings, title_key

    assert MemPursuitSettings().title_key == "title"
    assert MemPursuitSettings().metadata_keys == {"titles": "title"}
    given = {"titles": "name"}
    settings = MemPursuitSettings.from_mapping({"metadata_keys": given})
    given["titles"] = "changed"  # the settings keep their own copy
    assert settings.title_key == "name" and settings.with_k(3).title_key == "name"
    assert title_key(None) == "title" and title_key({}) == "title"
    for bad, error, says in (
            ({"title": "name"}, ValueError,
             "metadata_keys: unknown signal(s) ['title'] (did you mean 'titles'?); the Mem0 "
             "adapter reads only ['titles'] from it"),
            ({"speakers": "author"}, ValueError, "unknown signal(s) ['speakers']; "),
            ({"titles": ""}, ValueError, "metadata_keys['titles'] must be the metadata key "
                                         "that holds a memory's title (a non-empty str"),
            ({"titles": 3}, TypeError, "(a non-empty str, e.g. {'titles': 'name'}), got 3"),
            ("name", TypeError, "metadata_keys takes {signal: metadata key}, e.g. "
                                "{'titles': 'name'}; got a str")):
        with pytest.raises(error) as excinfo:
            MemPursuitSettings(metadata_keys=bad)
        assert says in _one_line(excinfo), excinfo.value
