"""Offline: over many secret seeds, how often does a partial cover of the twin space meet a planted value twin it gets wrong?"""
import sys, json, random, ast, collections
sys.path.insert(0, '/tmp/rt24/tree'); sys.path.insert(0, '/tmp/rt24/work')
from taskforge.grade import copy_raises as cr
from taskforge.grade.copies import _named, Edit
from taskforge.grade import verify as V
from exact import load
task = sys.argv[1]; N = int(sys.argv[2])
gold = json.load(open(f'/tmp/rt24/work/goldv_{task}.json'))
acc = {ast.literal_eval(x) for d in gold['valued'].values() for x, r in d.items() if r[0] == 'ok'}
by_file, parsed = load(task)
once = set()
for ref, fn in [t for ts in by_file.values() for t in ts]:
    for a in cr.accepted_inputs(fn, ref):
        v = a.node.value
        if isinstance(v, str) and not any(c.isdigit() for c in v): once |= set(cr.letter_reshaped(v))
covers = {'full space': acc, 'no two-edit reshapes': {x for x in acc if x in once or not isinstance(x, str) or True and x not in once and not any(x in cr.letter_reshaped(y) for y in once if False)}}
# cover without two-edit reshapes: accepted values that are once-reshapes, renamings or raising-input twins
raising_twins = {ast.literal_eval(x) for k, d in gold['valued'].items() if json.loads(k)[1] not in ("'MCMXCIV'", "'  xlii '") for x in d}
covers['no two-edit reshapes'] = {x for x in acc if x in once or x in raising_twins}
covers['no twins of raising inputs'] = {x for x in acc if x not in raising_twins}
caught = collections.Counter(); planted_sizes = []
for s in range(N):
    rng = random.Random(s)
    ms = []
    for file, tests in by_file.items():
        tree, text = parsed[file]; lines = text.splitlines(keepends=True)
        ms += cr.valued_copies(tests, lines, rng, _named, Edit, module=tree)
        ms += cr.table_valued_copies(tests, lines, rng, _named, Edit, module=tree)
    ms = [m for m in ms if ast.literal_eval(m.trades[0]) in acc]          # calibration keeps what the gold takes
    chosen = V._valued(ms, {}, random.Random(f"plant:{s}"))
    planted = {ast.literal_eval(m.trades[0]) for m in chosen}
    planted_sizes.append(len(planted))
    for name, cov in covers.items():
        caught[name] += bool(planted - cov)
print(task, 'seeds', N, 'mean value twins planted', sum(planted_sizes) / N)
for name, cov in covers.items():
    print(f'  cover {name!r} ({len(cov)} of {len(acc)} accepted inputs): caught in {caught[name]}/{N}')
