"""Calibration when a copy that fails leaves module state set: the tests after
it fail, and calibration used to give up every copy of the task (renaming
off too): six of simpleeval's nineteen tasks went out with none, 40 of one
task's 42 tests unprotected (red team, round 28)."""
from __future__ import annotations

import ast
import textwrap

import pytest

from taskforge.grade.calibrate import calibrate

PKG = "LIMIT = 10\n\n\ndef clip(x):\n    return min(x, LIMIT)\n"
TESTS = textwrap.dedent('''\
    import unittest

    from pkg import core
    from pkg.core import clip


    class TestClip(unittest.TestCase):
        def test_a_lower_limit(self):
            core.LIMIT = 3
            self.assertEqual(clip(5), 3)
            self.assertEqual(clip(2), 2)
            core.LIMIT = 10
    ''') + "".join(f'''
    def test_b{i}_default_limit(self):
        self.assertEqual(clip({50 + i}), 10)
        self.assertEqual(clip({i}), {i})
''' for i in range(1, 7))
IDS = ["tests/test_clip.py::TestClip::test_a_lower_limit",
       *(f"tests/test_clip.py::TestClip::test_b{i}_default_limit" for i in range(1, 7))]


@pytest.fixture(scope="module")
def worker(tmp_path_factory, base_image):
    from tests.conftest import pkg_worker

    w = pkg_worker(tmp_path_factory.mktemp("calib"), {"pkg/core.py": PKG, "tests/test_clip.py": TESTS})
    yield w
    w.close()


def test_copies_of_a_test_that_sets_module_state_go_the_rest_stay(worker):
    cal = calibrate(worker, IDS, seed="s", timeout=60, passing=set(IDS))
    assert cal.rename, cal.note
    funcs = {m.func for m in cal.copies}
    assert funcs and "test_a_lower_limit" not in funcs, (funcs, cal.note)


@pytest.mark.parametrize("body,sets", [
    ("core.LIMIT = 3", True),
    ("core.sub.LIMIT = 3", True),
    ("del core.LIMIT", True),
    ("core.LIMIT += 1", True),
    ("global X\nX = 1", True),
    ("self.s.functions = {}", False),
    ("obj = core.make()\nobj.limit = 3", False),
    ("LIMIT = 3", False),
    ("monkeypatch.setattr(core, 'LIMIT', 3)", False),
    # what the review of the first version found it missed
    ("core.TABLE['z'] = 3", True),
    ("del core.TABLE['z']", True),
    ("core.TABLE.append(3)", True),
    ("os.environ.update(X='1')", True),
    ("setattr(core, 'LIMIT', 3)", True),
    ("items = []\nitems.append(3)", False),
])
def test_sets_state(body, sets):
    from taskforge.grade.copies import _imported as module_imports
    from taskforge.grade.copy_raises import sets_state

    tree = ast.parse("from pkg import core\nimport os.path\n\ndef test_x(self, monkeypatch):\n"
                     + textwrap.indent(body, "    ") + "\n")
    mods = module_imports(tree)
    assert mods == {"core", "os"}
    assert sets_state(tree.body[-1], mods) is sets
