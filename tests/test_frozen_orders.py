"""Every order of the default policy, its published variants and every kept selector is as
frozen before the refactor of issue 25 (``tests/frozen_orders.py`` records and checks them)."""

from __future__ import annotations

import json

import pytest

import frozen_orders as fo

pytestmark = pytest.mark.slow  # computes every kept selector's orders on the fixture (and LoCoMo)

FROZEN = json.loads(fo.FROZEN.read_text())


@pytest.fixture(scope="module")
def fixture_now():
    return fo.fixture_orders()


def test_the_fixture_orders_are_as_frozen(fixture_now):
    frozen = FROZEN["fixture"]
    # the readable orders first: a moved one shows where
    for key, orders in frozen["orders"].items():
        assert fixture_now["orders"][key] == orders, key
    assert fo.compare(frozen["hashes"], fixture_now["hashes"]) == []


def test_the_frozen_file_covers_every_kept_selector_and_published_variant():
    keys = FROZEN["fixture"]["hashes"]
    for spec in fo.KEPT + fo.VARIANTS + fo.EXPERIMENTAL:
        for native in fo.NATIVE:
            assert f"{native}|P200|{spec}|K10" in keys, spec
    assert {"native", "mempursuit", "mmr", "centered-fusion"} <= set(fo.KEPT)


@pytest.mark.skipif(not fo.LOCOMO.exists(), reason=f"LoCoMo is not at {fo.LOCOMO} (../shared)")
def test_the_locomo_orders_are_as_frozen():
    assert fo.compare(FROZEN["locomo"], fo.locomo_hashes(_cache())) == []


def _cache():
    from mempursuit_eval.datasets import default_cache_dir

    return default_cache_dir()
