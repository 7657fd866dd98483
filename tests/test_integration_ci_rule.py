"""The root ``conftest.py``: with ``CI=true`` a module skipped as a whole fails the run.

Each case runs pytest in a subprocess on a tiny test tree that uses a copy of that conftest.
"""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each case runs pytest in a subprocess

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

MODULES = {
    "test_ok.py": "def test_fine():\n    assert True\n",
    "test_gone.py": """
        import pytest
        pytest.importorskip("no_such_framework_xyz", reason="needs the [xyz] extra")

        def test_never():
            pass
        """,
    "test_all_skipped.py": """
        import pytest

        @pytest.fixture(autouse=True)
        def _data():
            pytest.skip("sample files not found")

        def test_a():
            pass

        def test_b():
            pass
        """,
    "test_partly.py": """
        import pytest

        def test_runs():
            pass

        def test_skips():
            pytest.skip("optional channel")
        """,
    # Stands in for test_lightmem_real.py: its framework installs only from ../shared/wheels.
    "test_lightmem_real.py": """
        import pytest
        pytest.skip("real LightMem not importable", allow_module_level=True)

        def test_real_lightmem():
            pass
        """,
}


def _tree(tmp_path, names):
    root = tmp_path / "repo"
    pkg = root / "integration_tests"
    pkg.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\naddopts = -ra\n")
    shutil.copy(CONFTEST, root / "conftest.py")
    (root / "tests").mkdir()  # outside integration_tests/: the rule leaves it alone
    (root / "tests" / "test_unit.py").write_text(
        "import pytest\npytest.importorskip('no_such_unit_dep_xyz')\n")
    for name in names:
        (pkg / name).write_text(textwrap.dedent(MODULES[name]))
    return root


def _run(root, ci):
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests", "integration_tests"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=300)
    return out.returncode, out.stdout + out.stderr


def test_module_skipped_at_collection_fails_in_ci(tmp_path):
    root = _tree(tmp_path, ["test_ok.py", "test_gone.py"])
    rc, text = _run(root, "true")
    assert rc == pytest.ExitCode.TESTS_FAILED, text
    assert "integration modules skipped as a whole (CI=true)" in text
    assert "integration_tests/test_gone.py: skipped at collection: needs the [xyz] extra" in text
    section = text.split("skipped as a whole (CI=true)")[1].split("CI installs every extra")[0]
    assert "1 passed, 2 skipped" in text and "test_unit.py" not in section  # not an integration test


def test_the_same_tree_passes_outside_ci(tmp_path):
    root = _tree(tmp_path, ["test_ok.py", "test_gone.py", "test_all_skipped.py"])
    for ci in (None, "false", ""):
        rc, text = _run(root, ci)
        assert rc == pytest.ExitCode.OK, text
        assert "skipped as a whole" not in text


def test_every_test_skipped_counts_as_the_module_skipped(tmp_path):
    root = _tree(tmp_path, ["test_ok.py", "test_all_skipped.py", "test_partly.py"])
    rc, text = _run(root, "true")
    assert rc == pytest.ExitCode.TESTS_FAILED, text
    assert "integration_tests/test_all_skipped.py: all 2 tests skipped: sample files not found" in text
    section = text.split("skipped as a whole (CI=true)")[1].split("CI installs every extra")[0]
    assert "test_all_skipped.py" in section
    assert "test_partly.py" not in section and "test_ok.py" not in section  # tests ran there


def test_a_shared_wheel_module_may_skip_only_without_its_wheel(tmp_path):
    root = _tree(tmp_path, ["test_ok.py", "test_partly.py", "test_lightmem_real.py"])
    rc, text = _run(root, "true")  # a clone with nothing beside it: no ../shared/wheels
    assert rc == pytest.ExitCode.OK, text
    assert "skipped as a whole" not in text
    wheels = tmp_path / "shared" / "wheels"  # ../shared/wheels of the tree's root
    wheels.mkdir(parents=True)
    (wheels / "lightmem-0.1.0-py3-none-any.whl").write_bytes(b"")
    rc, text = _run(root, "true")
    assert rc == pytest.ExitCode.TESTS_FAILED, text
    assert ("integration_tests/test_lightmem_real.py: skipped at collection: real LightMem not "
            "importable") in text


def test_failures_keep_their_own_exit_status(tmp_path):
    root = _tree(tmp_path, ["test_gone.py"])
    (root / "integration_tests" / "test_bad.py").write_text("def test_bad():\n    assert False\n")
    rc, text = _run(root, "true")
    assert rc == pytest.ExitCode.TESTS_FAILED and "test_gone.py: skipped at collection" in text
