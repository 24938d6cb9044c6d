"""Exact twin spaces (mirrors copy_raises' proposal code, every rng branch taken)."""
import ast, json, sys, glob, collections
sys.path.insert(0, '/tmp/rt24/tree')
from taskforge.grade import copy_raises as cr
from taskforge.grade.copies import find_def
from taskforge.analysis.testindex import test_ref

def all_renamings(value, alphabets):
    if isinstance(value, bool) or not isinstance(value, (str, bytes, int)): return set()
    out = set()
    if isinstance(value, int):
        if value == 0: return out
        text = str(abs(value))
        for old in set(text):
            pool = [d for d in "0123456789" if d not in text and not (d == "0" and text[0] == old)]
            for n in pool:
                new = int(text.replace(old, n)); out.add(-new if value < 0 else new)
        return out
    text = value
    digits_only = cr.DIGITS_ONLY in alphabets
    olds = {ch for ch in text if ch.isascii() and (ch.isdigit() if digits_only else ch.isalnum())}
    for old in olds:
        kind = str.isdigit if old.isdigit() else str.isupper if old.isupper() else str.islower
        every = "0123456789" if old.isdigit() else "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if old.isupper() else "abcdefghijklmnopqrstuvwxyz"
        pool = next((own for own in (sorted({x for x in alphabet if x.isascii() and x.isalnum() and kind(x) and x not in text}) for alphabet in alphabets) if own),
                    [x for x in every if x not in text])
        if any(ch == old and (i == 0 or not text[i - 1].isdigit()) for i, ch in enumerate(text)):
            pool = [x for x in pool if x != "0"]
        for n in pool: out.add(text.replace(old, n))
    return out

def load(task):
    T = glob.glob(f'/tmp/rt24/tasks/{task}*')[0]; M = glob.glob(f'/tmp/rt24/memory/{task}*')[0]
    f2p = json.load(open(T + '/task.json'))['FAIL_TO_PASS']
    by_file = collections.defaultdict(list); parsed = {}; seen=set()
    for nid in f2p:
        r = test_ref(nid)
        if not r or (r.file, r.cls, r.func) in seen: continue
        seen.add((r.file, r.cls, r.func))
        if r.file not in parsed:
            text = open(f"{M}/{r.file}").read(); parsed[r.file] = (ast.parse(text), text)
        fn = find_def(parsed[r.file][0], r)
        if fn is not None: by_file[r.file].append((r, fn))
    return by_file, parsed

def space(task):
    by_file, parsed = load(task)
    valued = collections.defaultdict(set)   # (callee or table test, source) -> values
    fresh = collections.defaultdict(set)
    for file, tests in by_file.items():
        module = parsed[file][0]
        literals = {(type(n.value), n.value) for n in ast.walk(module) if isinstance(n, ast.Constant)}
        consts = {s.targets[0].id: s.value for s in module.body if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)}
        raising = [r for ref, fn in tests for r in cr.raising_inputs(fn, ref)]
        acc_all = [a for ref, fn in tests for a in cr.accepted_inputs(fn, ref)]
        # ---- fresh_copies (raising twins)
        letters = {}
        for own, xs in ((True, raising), (False, acc_all)):
            for x in xs:
                if isinstance(x.node.value, str): letters.setdefault((x.callee, own), set()).update(x.node.value)
        hosts = {}
        for r in raising:
            if len({id(x.stmt) for x in raising if x.fn is r.fn}) == 1 and cr._twin_host(r): hosts.setdefault(r.callee, r)
        for r in raising:
            if r.callee in hosts:
                bad, good = letters.get((r.callee, True), set()), letters.get((r.callee, False), set())
                al = tuple("".join(sorted(x)) for x in (bad & good, bad, good))
                vs = all_renamings(r.node.value, al) | set(cr.reshaped(r.node.value))
                fresh[(r.callee, repr(r.node.value))] |= {v for v in vs if (type(v), v) not in literals}
        for a in acc_all:
            if a.callee in hosts:
                fresh[(a.callee, repr(a.node.value))] |= {v for v in all_renamings(a.node.value, (cr.DIGITS_ONLY,)) if (type(v), v) not in literals}
        for ref, fn in tests:
            rows = cr.column_inputs(fn, ref, consts)
            if not rows or not cr._twin_host(rows[0]): continue
            col = rows[0].column
            bad = {ch for k in col.raising if isinstance(v := rows[k].node.value, str) for ch in v}
            good = {ch for k in col.accepted if isinstance(v := rows[k].node.value, str) for ch in v}
            for k in range(len(rows)):
                src = rows[k].node.value
                if k in col.raising:
                    vs = all_renamings(src, tuple("".join(sorted(x)) for x in (bad & good, bad, good))) | set(cr.reshaped(src))
                else:
                    vs = all_renamings(src, (cr.DIGITS_ONLY,))
                fresh[(ref.func, repr(src))] |= {v for v in vs if (type(v), v) not in literals}
        # ---- valued_copies
        accepted = [a for a in acc_all if a.top and not (cr._maker(a.callee) and not (isinstance(a.other, ast.Call) and cr._maker(ast.unparse(a.other.func))))]
        vhosts = {}
        for a in accepted: vhosts.setdefault(a.callee, a)
        bad, good = {}, {}
        for xs, into in ((raising, bad), (accepted, good)):
            for x in xs:
                if isinstance(x.node.value, str): into.setdefault(x.callee, set()).update(x.node.value)
        for a in accepted:
            v = a.node.value
            digitless = isinstance(v, str) and not any(c.isdigit() for c in v)
            once = cr.letter_reshaped(v) if digitless else []
            twice = []
            if digitless and len(v) <= cr.MAX_TWO_EDITS:
                twice = list(dict.fromkeys(t for x in once for t in cr.letter_reshaped(x) if t != v and t not in once))
            vs = all_renamings(v, (cr.DIGITS_ONLY,)) | set(once) | set(twice)
            valued[(a.callee, repr(v))] |= {x for x in vs if x != v and (type(x), x) not in literals}
        for r in raising:
            if r.callee not in vhosts: continue
            b, g = bad.get(r.callee, set()), good.get(r.callee, set())
            al = tuple("".join(sorted(x)) for x in (b & g, b, g))
            vs = all_renamings(r.node.value, al) | set(cr.reshaped(r.node.value))
            valued[(r.callee, repr(r.node.value))] |= {x for x in vs if x != r.node.value and (type(x), x) not in literals}
        # ---- table_valued_copies
        text = parsed[file][1]
        for ref, fn in tests:
            decs = [d for d in fn.decorator_list if isinstance(d, ast.Call) and cr._name(d.func) == "parametrize"]
            if len(decs) != 1 or len(decs[0].args) < 2: continue
            got = cr._table_rows(decs[0], consts)
            if got is None or not got[1]: continue
            names, rows = got
            eq = cr._table_equality(fn, names)
            if eq is None or eq.exp not in names: continue
            e = names.index(eq.exp)
            reads = {n.id for n in ast.walk(eq.actual) if isinstance(n, ast.Name)}
            inputs = [i for i, n in enumerate(names) if n in reads and n != eq.exp and all(cr._plain(r[i]) for r in rows)]
            if not inputs or isinstance(decs[0].args[1], ast.Name): continue
            for i in inputs:
                good_ = {ch for r in rows if not cr._none(r[e]) and isinstance(v := r[i].value, str) for ch in v}
                bad_ = {ch for r in rows if cr._none(r[e]) and isinstance(v := r[i].value, str) for ch in v}
                for k in range(len(rows)):
                    src = rows[k][i].value
                    if cr._none(rows[k][e]):
                        vs = all_renamings(src, tuple("".join(sorted(x)) for x in (bad_ & good_, bad_, good_))) | set(cr.reshaped(src))
                    else:
                        digitless = isinstance(src, str) and not any(c.isdigit() for c in src)
                        vs = all_renamings(src, (cr.DIGITS_ONLY,)) | (set(cr.letter_reshaped(src)) if digitless else set())
                    valued[(ref.func + f"#{names[i]}", repr(src))] |= {x for x in vs if x != src and (type(x), x) not in literals}
    return valued, fresh

if __name__ == '__main__':
    task = sys.argv[1]
    v, f = space(task)
    samp = json.load(open(f'/tmp/rt24/work/space1500_{task}.json'))
    sv = set(x for xs in samp['valued'].values() for x in xs); sf = set(x for xs in samp['fresh'].values() for x in xs)
    ev = set(repr(x) for xs in v.values() for x in xs); ef = set(repr(x) for xs in f.values() for x in xs)
    for k, xs in v.items(): print('V', k, len(xs))
    for k, xs in f.items(): print('F', k, len(xs))
    print('valued exact', len(ev), 'sampled', len(sv), 'sampled-not-exact', sorted(sv - ev)[:10], 'exact-not-sampled', len(ev - sv))
    print('fresh exact', len(ef), 'sampled', len(sf), 'sampled-not-exact', sorted(sf - ef)[:10], 'exact-not-sampled', len(ef - sf))
    json.dump({'valued': {json.dumps(k): sorted(map(repr, x)) for k, x in v.items()}, 'fresh': {json.dumps(k): sorted(map(repr, x)) for k, x in f.items()}},
              open(f'/tmp/rt24/work/exact_{task}.json', 'w'), indent=1)
