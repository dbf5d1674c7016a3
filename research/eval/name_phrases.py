"""Name phrases across separators (issue 37, item 1), offline on lodo's lists: a tool whose name
has two words or more ("git_log", "getCurrentTime", "create-entities") and appears as a phrase in
the request ("show the git log") is put first, if it is among the top TOPN of today's calibrated
fused list. Prints hybrid R@1 before and after for every set.

Usage: research/eval/lodo --no-build && python3 research/eval/name_phrases.py TOPN
"""
import importlib.util, importlib.machinery, re, sys, json
from pathlib import Path
ROOT = Path(__file__).resolve().parent.parent.parent
loader = importlib.machinery.SourceFileLoader('lodo', str(ROOT/'research/eval/lodo'))
spec = importlib.util.spec_from_loader('lodo', loader); lodo = importlib.util.module_from_spec(spec); loader.exec_module(lodo)
score = lodo.score
TOPN = int(sys.argv[1])
def words(name):
    n = name.split('/')[-1].split('.')[-1].split('#')[0]
    n = re.sub(r'([a-z0-9])([A-Z])', r'\1 \2', n)
    return [w.lower() for w in re.split(r'[_\-\s.]+', n) if w]
for name, (reg, queries) in lodo.sets().items():
    lists = lodo.WORK/'lists'/f'{name}.jsonl'; bg = lodo.WORK/'lists'/f'{name}.background.jsonl'
    if not lists.exists(): continue
    s = lodo.LabelledSet(name, queries, lists, bg)
    phr = {o: ' '.join(words(t)) for o, t in enumerate(s.tools) if len(words(t)) >= 2}
    base = alt = lex = den = 0.0; changed = 0
    for q in s.answerable:
        r = s.rows[str(q['id'])]
        fused = lodo.calibrated(s.cal, r, 0.7, 0.25)
        text = ' ' + re.sub(r'[^a-z0-9]+', ' ', q['query'].lower()) + ' '
        top5 = {o for o, _ in fused[:TOPN]}
        hits = [o for o, p in phr.items() if f" {p} " in text and o in top5]
        ids = [s.tools[o] for o, _ in fused[:10]]
        m0 = score.score_query(q['groups'], ids)['recall@1']
        if hits:
            # the longest phrase first, then fused order
            hits.sort(key=lambda o: -len(phr[o]))
            front = [hits[0]]
            rest = [o for o, _ in fused if o not in front]
            ids2 = [s.tools[o] for o in (front + rest)[:10]]
            changed += ids2[0] != ids[0]
        else:
            ids2 = ids
        m1 = score.score_query(q['groups'], ids2)['recall@1']
        base += m0; alt += m1
    n = len(s.answerable)
    print(f'{name:15s} hybrid R@1 {base/n:.3f} -> with name phrases {alt/n:.3f}  (top changed on {changed} of {n})')
