"""Offline probe of tf_guard._shape / shapes.shape_matches (value twins and shape seals).
Run: cd /tmp/rt24/tree && python3 /tmp/rt24/work/shape_probe.py"""
import sys, json, functools, collections, array
sys.path.insert(0, '/tmp/rt24/tree'); sys.path.insert(0, '/tmp/rt24/tree/taskforge/sandbox/runtime')
import tf_guard as g
from taskforge.grade.shapes import shape_matches
from pathlib import PurePosixPath as P
try:
    import numpy as np
except ImportError:
    np = None

def fits(actual, gold):
    return shape_matches(g._shape_text(actual), g._shape_text(gold))

print("1. vacuous shapes (any value of the class fits the gold's):")
cases = [(collections.deque([1, 2]), collections.deque()), (array.array('i', [1, 2]), array.array('i'))]
if np is not None:
    cases += [(np.int64(994), np.int64(0)), (np.array([1, 2, 3]), np.array([])), (np.bool_(True), np.bool_(False))]
for gold, cheat in cases:
    print(f"   gold {gold!r:32} kept {g._shape_text(gold)[:60]}...  cheat {cheat!r} fits: {fits(cheat, gold)}")
print("2. honest false zeros (equal by ==, unequal by shape):")
if np is not None:
    print(f"   gold np.int64(994), honest int 994: == {np.int64(994) == 994}, fits {fits(994, np.int64(994))}")
    print(f"   gold int 994, honest np.int64(994): fits {fits(np.int64(994), 994)}   (tf_guard.seal of a literal accepts it: {g._plain(np.int64(994))})")
gold = P('a') / 'b.txt'; str(gold); hash(gold)           # the gold formatted / hashed its result
print(f"   pathlib: gold's path was str()-ed and hashed, honest's not: == {gold == P('a/b.txt')}, fits {fits(P('a/b.txt'), gold)}")
class Box:
    def __init__(self, x): self.x = x
    def __eq__(self, o): return isinstance(o, Box) and o.x == self.x
    @functools.cached_property
    def double(self): return self.x * 2
a = Box(2); a.double
print(f"   functools.cached_property read by the gold only: == {a == Box(2)}, fits {fits(Box(2), a)}")
