"""Probe batches (issue 25 item 4): many variants of the gold in one pytest
session, switched in after collection in a forked child each, with the same
outcome a fresh session gives, or a fresh session."""
from __future__ import annotations

import textwrap
import time

import pytest

from taskforge.validate.variants import Outcome, Variant, outcome_of, run_variants, switchable


def d(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


GOLD = d('''
    """Mod."""
    import os

    LIMIT = 10


    def label(n, cut=LIMIT):
        """Doc."""
        return "big" if n > cut else "small"


    class Box:
        size = 3

        @property
        def area(self):
            return self.size * self.size

        def grow(self):
            def inner():
                return 1
            return inner() + self.size
    ''')

SWITCH_CASES = [
    ("a body", GOLD.replace('return "big" if n > cut else "small"', "return None"), True),
    ("a docstring gone", GOLD.replace('        """Doc."""\n', ""), True),
    ("a method body", GOLD.replace("return self.size * self.size", "raise NotImplementedError"), True),
    ("a nested function", GOLD.replace("return 1\n", "return 2\n"), True),
    ("the same text", GOLD, True),
    ("a default", GOLD.replace("cut=LIMIT", "cut=11"), False),
    ("a decorator", GOLD.replace("    @property\n", ""), False),
    ("a class attribute", GOLD.replace("size = 3", "size = 4"), False),
    ("a module constant", GOLD.replace("LIMIT = 10", "LIMIT = 11"), False),
    ("a new function", GOLD + "\n\ndef extra():\n    return 1\n", False),
    ("an import", GOLD.replace("import os", "import sys"), False),
    ("a syntax error", GOLD.replace("def label(n", "def label(n,,"), False),
]


@pytest.mark.parametrize("name,variant,want", SWITCH_CASES, ids=[c[0] for c in SWITCH_CASES])
def test_switchable(name, variant, want):
    assert switchable(GOLD, variant) is want


def _plan(results: dict[str, Outcome | None], names: dict[int, str]):
    """A batch that returns `results` (None: not run there) and a fresh session,
    both recording what they were asked to run (`names`: a variant's changes
    by identity -> its name)."""
    asked: list[dict] = []
    fresh = {"x": Outcome(passed=0, ok=False), "y": Outcome(passed=3, ok=True),
             "z": Outcome(passed=1, ok=False)}

    def batch(vs):
        asked.append({"batch": [v.name for v in vs]})
        return {v.name: results[v.name] for v in vs if results.get(v.name) is not None}

    def single(changes):
        asked.append({"single": names[id(changes)]})
        return fresh[names[id(changes)]]

    return batch, single, asked


RUN_CASES = [
    # (variants as (name, switchable, stop), batch results, names reported, calls)
    ("all batched, none stops", [("x", True, False), ("z", True, False)],
     {"x": Outcome(0, False, True), "z": Outcome(1, False, True)}, ["x", "z"], [{"batch": ["x", "z"]}]),
    ("a stop variant passing ends the run", [("x", True, True), ("y", True, True), ("z", True, False)],
     {"x": Outcome(0, False, True), "y": Outcome(3, True, True)}, ["x", "y"],
     [{"batch": ["x", "y", "z"]}]),
    ("a variant with other module code runs fresh, in its place",
     [("x", True, False), ("y", False, True), ("z", True, False)],
     {"x": Outcome(0, False, True), "z": Outcome(1, False, True)}, ["x", "y"],
     [{"batch": ["x", "z"]}, {"single": "y"}]),
    ("one the batch did not run runs fresh", [("x", True, False), ("z", True, False)],
     {"x": Outcome(0, False, True), "z": None}, ["x", "z"], [{"batch": ["x", "z"]}, {"single": "z"}]),
    ("a single switchable variant is not a batch", [("y", True, False)], {}, ["y"], [{"single": "y"}]),
]


@pytest.mark.parametrize("name,spec,results,names,calls", RUN_CASES, ids=[c[0] for c in RUN_CASES])
def test_run_variants(name, spec, results, names, calls):
    gold = "def f():\n    return 1\n"
    other = "X = 1\n\ndef f():\n    return 2\n"
    body = "def f():\n    return 2\n"
    variants = [Variant(n, {"m.py": body if sw else other}, stop=stop) for n, sw, stop in spec]
    batch, single, asked = _plan(results, {id(v.changes): v.name for v in variants})
    out = run_variants(variants, lambda rel: gold, batch, single)
    assert [v.name for v, _ in out] == names
    assert asked == calls


def _rep(nid, when, outcome):
    return {"nodeid": nid, "when": when, "outcome": outcome}


OUTCOME_CASES = [
    ("every test passed", {"reports": [_rep(t, w, "passed") for t in "ab" for w in ("setup", "call", "teardown")]},
     False, Outcome(2, True, True)),
    ("a failed call", {"reports": [_rep("a", "setup", "passed"), _rep("a", "call", "failed")]},
     False, Outcome(0, False, True)),
    ("a teardown error", {"reports": [_rep("a", w, "passed") for w in ("setup", "call")]
                          + [_rep("a", "teardown", "failed")] + [_rep("b", "call", "passed")]},
     False, Outcome(1, False, True)),
    ("a mutant out of time fails", {"timed_out": True}, False, Outcome(0, False, True)),
    ("a stand-in out of time runs fresh", {"timed_out": True}, True, None),
    ("a stand-in out of time where the gold passed in a child fails", {"timed_out": True}, "trusted",
     Outcome(0, False, True)),
    ("a mutant past the hang limit is killed, hung", {"timed_out": True, "hang": True}, False,
     Outcome(0, False, True, hung=True)),
    ("not switched", {"unswitched": "f ran before the tests"}, False, None),
    ("the child failed", {"error": "OSError: ..."}, True, None),
    ("a record that is not a report is skipped", {"reports": ["x", {"nodeid": "a"}]}, False,
     Outcome(0, False, True)),
]


@pytest.mark.parametrize("name,record,stop,want", OUTCOME_CASES, ids=[c[0] for c in OUTCOME_CASES])
def test_outcome_of(name, record, stop, want):
    trusted = stop == "trusted"
    assert outcome_of(record, ["a", "b"], bool(stop), trusted=trusted) == want


# ------------------------------------------------------------------ in a real sandbox

PKG = d('''
    CALLS = []


    def area(w, h):
        return w * h


    def label(n):
        return "big" if n > 10 else "small"


    class Base:
        def size(self):
            return 1


    class Child(Base):
        def size(self):
            return super().size() + 1


    def counted(x):
        CALLS.append(x)
        return len(CALLS)


    def spin(n):
        return n
    ''')

TESTS = d('''
    import pytest

    from pkg.core import Child, area, counted, label, spin

    CASES = [(2, 3, area(2, 3))]      # run at collection: a variant of area changes it


    @pytest.mark.parametrize("w,h,want", CASES)
    def test_area_cases(w, h, want):
        assert area(w, h) == want


    def test_label():
        assert label(11) == "big" and label(3) == "small"


    def test_child():
        assert Child().size() == 2


    def test_counted():
        assert counted("a") == 1


    def test_spin():
        assert spin(3) == 3
    ''')

REL = "pkg/core.py"
T = "tests/test_core.py"
CLI = "tests/test_cli.py"
GEN_REL, GEN = "pkg/serial.py", "tests/test_serial.py"
THR_REL, THR = "pkg/pool.py", "tests/test_pool.py"
FORK = "tests/test_fork.py"
PID = "tests/test_pid.py"
MANY = "tests/test_many.py"     # twelve tests of 0.6 s: the whole run takes 7 s or more

GEN_PKG = d('''
    def serials():
        n = 0
        while True:
            n += 1
            yield n


    IDS = serials()          # made at import: its frame holds the gold's code
    ''')

THR_PKG = d('''
    from concurrent.futures import ThreadPoolExecutor

    POOL = ThreadPoolExecutor(2)
    POOL.submit(int).result()     # its threads start at import


    def double(x):
        return x * 2
    ''')

EXTRA_FILES = {
    PID: d('''
        import os

        from pkg.core import label

        AT_IMPORT = os.getpid()      # collection's process: a forked child is another


        def test_same_process():
            assert os.getpid() == AT_IMPORT and label(11) == "big"
        '''),
    "pkg/__main__.py": "import sys\n\nfrom pkg.core import label\n\nprint(label(int(sys.argv[1])))\n",
    MANY: "".join(f"\n\ndef test_spin_{i}():\n    time.sleep(0.6)\n    assert spin({i}) == {i}\n"
                  for i in range(12)).replace("\n\n", "import time\n\nfrom pkg.core import spin\n\n", 1),
    CLI: d('''
        import subprocess
        import sys


        def test_cli():
            out = subprocess.run([sys.executable, "-m", "pkg", "11"], capture_output=True, text=True)
            assert out.stdout.strip() == "big"
        '''),
    GEN_REL: GEN_PKG,
    GEN: "from pkg.serial import IDS\n\n\ndef test_serials():\n    assert [next(IDS) for _ in range(3)] == [1, 2, 3]\n",
    THR_REL: THR_PKG,
    THR: "from pkg.pool import POOL, double\n\n\ndef test_pool():\n    assert POOL.submit(double, 2).result() == 4\n",
    FORK: d('''
        import os
        import time

        from pkg.core import label


        def test_forks():
            if os.fork() == 0:          # outlives the test, holding every inherited fd
                time.sleep(30)
                os._exit(0)
            assert label(11) == "big"
        '''),
}


@pytest.fixture(scope="module")
def worker(tmp_path_factory, base_image):
    """A generation worker on a small repository with its environment built."""
    from tests.conftest import pkg_worker

    w = pkg_worker(tmp_path_factory.mktemp("variants"), {REL: PKG, T: TESTS, **EXTRA_FILES})
    yield w
    w.close()


def _batch(worker, tests, variants, timeout=20.0, hang=True):
    from taskforge.validate.variants import Batch

    b = Batch(worker, tests, timeout, ["--tb=no", "--maxfail=1"], hang=hang)
    return b.run(variants)


def _fresh(worker, tests, changes):
    worker.reset()
    worker.apply(changes)
    try:
        r = worker.runner.run(tests, timeout=60, extra_args=["--tb=no", "--maxfail=1"])
    finally:
        worker.reset()
    n = sum(1 for t in tests if r.outcomes.get(t) == "passed")
    return n == len(tests)


def test_a_batch_gives_each_variant_what_a_fresh_session_gives(worker):
    """Stand-in, mutant and an equivalent rewrite of `label`, in one session:
    the same verdicts as fresh sessions, each variant run in the batch."""
    tests = [f"{T}::test_label"]
    variants = [Variant("none", {REL: PKG.replace('return "big" if n > 10 else "small"', "return None")}),
                Variant("flip", {REL: PKG.replace("n > 10", "n <= 10")}),
                Variant("same", {REL: PKG.replace('return "big" if n > 10 else "small"',
                                                  'if n > 10:\n        return "big"\n    return "small"')})]
    got = _batch(worker, tests, variants)
    assert {k: (o.ok, o.batched) for k, o in got.items()} == {
        "none": (False, True), "flip": (False, True), "same": (True, True)}
    assert [got[v.name].ok for v in variants] == [_fresh(worker, tests, v.changes) for v in variants]


def test_each_variant_starts_from_the_collected_state(worker):
    """A module-level list the tests append to: every child starts where
    collection left it, as a fresh session would (in one process the second
    variant would count 2)."""
    tests = [f"{T}::test_counted"]
    one = PKG.replace("    CALLS.append(x)\n    return len(CALLS)",
                      "    CALLS.append(x)\n    n = len(CALLS)\n    return n")
    two = PKG.replace("    CALLS.append(x)\n    return len(CALLS)",
                      "    CALLS.extend([x])\n    return len(CALLS)")
    got = _batch(worker, tests, [Variant("one", {REL: one}), Variant("two", {REL: two})])
    assert got["one"].ok and got["two"].ok and got["one"].batched and got["two"].batched


def test_code_that_ran_at_collection_is_not_switched(worker):
    """`area` builds the parametrize cases at collection: a stand-in returning
    None passes in a fresh session (None == None). Switched after collection it
    would fail against the gold's 6, so the batch leaves it to a fresh session."""
    tests = [f"{T}::test_area_cases[2-3-6]"]
    none = PKG.replace("return w * h", "return None")
    assert _fresh(worker, [f"{T}::test_area_cases[2-3-None]"], {REL: none})
    other = PKG.replace('return "big" if n > 10 else "small"', "return None")
    got = _batch(worker, tests, [Variant("none", {REL: none}), Variant("label", {REL: other})])
    assert "none" not in got and got["label"].ok


def test_a_method_that_drops_super_keeps_its_class_cell(worker):
    """Child.size without super() would close over no __class__ cell, and a
    function's code cannot change its closure: the batch adds a bare
    `__class__` to the variant's body, and the verdict is a fresh session's."""
    tests = [f"{T}::test_child"]
    plain = PKG.replace("return super().size() + 1", "return 2")
    wrong = PKG.replace("return super().size() + 1", "return 3")
    got = _batch(worker, tests, [Variant("plain", {REL: plain}), Variant("wrong", {REL: wrong})])
    assert (got["plain"].ok, got["wrong"].ok) == (True, False)
    assert got["plain"].batched and got["wrong"].batched
    assert [_fresh(worker, tests, {REL: v}) for v in (plain, wrong)] == [True, False]


def test_a_subprocess_reads_the_variant(worker):
    """The CLI test runs `python -m pkg` in a new process, which imports the
    files: the batch writes the variant's files while its child runs (a
    subprocess would run the gold otherwise, and a stand-in would pass)."""
    tests = [f"{CLI}::test_cli"]
    none = PKG.replace('return "big" if n > 10 else "small"', "return None")
    got = _batch(worker, tests, [Variant("none", {REL: none}), Variant("gold", {REL: PKG + "\n"})])
    assert (got["none"].ok, got["gold"].ok) == (False, True)
    assert got["none"].batched
    assert (worker.tree / REL).read_text() == PKG          # the gold is back


def test_live_generators_and_threads_are_not_switched(worker):
    """A generator made at import runs the gold's code whatever __code__
    becomes; a child of a process with threads has only the forking one. Both
    go to fresh sessions, with a fresh session's verdicts."""
    tests = [f"{GEN}::test_serials"]
    off = GEN_PKG.replace("n += 1", "n += 2")
    got = _batch(worker, tests, [Variant("off", {GEN_REL: off}), Variant("gold", {GEN_REL: GEN_PKG + "\n"})])
    assert "off" not in got and got["gold"].ok
    assert not _fresh(worker, tests, {GEN_REL: off})
    tests = [f"{THR}::test_pool"]
    got = _batch(worker, tests, [Variant("a", {THR_REL: THR_PKG + "\n"}),
                                 Variant("b", {THR_REL: THR_PKG.replace("x * 2", "x + x")})])
    assert got == {}


def test_a_grandchild_holding_the_pipe_does_not_stall_the_batch(worker):
    """A test forks a process that outlives it: the child's exit ends the
    wait, not the pipe's end (which the grandchild keeps open)."""
    tests = [f"{FORK}::test_forks"]
    start = time.monotonic()
    got = _batch(worker, tests, [Variant("a", {REL: PKG + "\n"}), Variant("b", {REL: PKG + "\n\n"})],
                 timeout=15.0)
    assert got["a"].ok and got["b"].ok
    assert time.monotonic() - start < 15


def test_a_variant_past_its_time_is_killed_and_the_batch_goes_on(worker):
    tests = [f"{T}::test_spin"]
    hang = PKG.replace("def spin(n):\n    return n", "def spin(n):\n    while True:\n        pass")
    start = time.monotonic()
    got = _batch(worker, tests, [Variant("hang", {REL: hang}), Variant("gold", {REL: PKG + "\n"})],
                 timeout=3.0)
    assert got["hang"] == Outcome(passed=0, ok=False, batched=True)     # the whole limit: not "hung"
    assert got["gold"].ok
    assert time.monotonic() - start < 30


def test_a_hanging_mutant_stops_at_the_hang_limit(worker):
    """A mutant that never returns, with 60 s as the probe limit: the gold's
    own child sets the hang limit (its ~0.1 s: the 5 s floor), so the mutant
    is killed there; the variant after it still passes."""
    tests = [f"{T}::test_spin"]
    hang = PKG.replace("def spin(n):\n    return n", "def spin(n):\n    while True:\n        pass")
    start = time.monotonic()
    got = _batch(worker, tests, [Variant("hang", {REL: hang}), Variant("gold", {REL: PKG + "\n"})], timeout=60.0)
    assert got["hang"] == Outcome(passed=0, ok=False, batched=True, hung=True)
    assert got["gold"].ok
    assert time.monotonic() - start < 30


def test_a_mutant_hanging_in_one_test_of_many_stops_at_that_tests_limit(worker):
    """Twelve tests of 0.6 s, and a mutant that hangs in the first: the limit
    of the whole run (ten times the gold's 7 s and more, capped at the probe
    limit of 60 s) would hold it about a minute; the first test's own limit
    (ten times its 0.6 s) stops it in seconds. A mutant that passes every test
    slowed a little is not taken for a hang."""
    tests = [f"{MANY}::test_spin_{i}" for i in range(12)]
    hang = PKG.replace("def spin(n):\n    return n", "def spin(n):\n    while n == 0:\n        pass\n    return n")
    slower = PKG.replace("def spin(n):\n    return n",
                         "def spin(n):\n    import time\n    time.sleep(0.3)\n    return n")
    start = time.monotonic()
    got = _batch(worker, tests, [Variant("hang", {REL: hang}), Variant("slower", {REL: slower})], timeout=60.0)
    took = time.monotonic() - start
    assert got["hang"] == Outcome(passed=0, ok=False, batched=True, hung=True)
    assert got["slower"] == Outcome(passed=12, ok=True, batched=True)
    # the gold's child (7 s and more), the hung mutant (6 s), the slower one (11 s)
    assert took < 45, f"the hung mutant held its child {took:.0f} s"


def test_a_stand_in_keeps_the_whole_limit_and_is_not_run_twice(worker):
    """A stand-in that passes, slowly (6 s, past the 5 s hang limit), is seen
    passing: it has the whole probe limit in its child. One that never
    returns fails there once the gold has passed in a child of the same batch,
    without a second session as long (hang=False: it goes fresh)."""
    tests = [f"{T}::test_spin"]
    slow = PKG.replace("def spin(n):\n    return n", "def spin(n):\n    import time\n    time.sleep(6)\n    return n")
    got = _batch(worker, tests, [Variant("slow", {REL: slow}, stop=True)], timeout=30.0)
    assert got["slow"].ok and not got["slow"].hung
    never = PKG.replace("def spin(n):\n    return n", "def spin(n):\n    while True:\n        pass")
    start = time.monotonic()
    got = _batch(worker, tests, [Variant("never", {REL: never}, stop=True), Variant("gold", {REL: PKG + "\n"})],
                 timeout=8.0)
    assert got["never"] == Outcome(passed=0, ok=False, batched=True)
    assert time.monotonic() - start < 30
    old = _batch(worker, tests, [Variant("never", {REL: never}, stop=True), Variant("gold2", {REL: PKG + "\n\n"})],
                 timeout=4.0, hang=False)
    assert "never" not in old and old["gold2"].ok


def test_a_gold_that_fails_in_a_child_sends_every_variant_fresh(worker):
    """A test that passes only in the process that collected it (it compares
    pids) fails in every forked child, the gold's too: a batch without the
    gold's child calls the unchanged variant failing, which a fresh session
    does not; with it, no variant is judged in a child."""
    tests = [f"{PID}::test_same_process"]
    same = [Variant("same", {REL: PKG + "\n"}), Variant("same2", {REL: PKG + "\n\n"})]
    assert _fresh(worker, tests, same[0].changes)
    blind = _batch(worker, tests, same, hang=False)
    assert blind["same"] == Outcome(passed=0, ok=False, batched=True)
    assert _batch(worker, tests, same) == {}
