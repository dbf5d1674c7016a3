"""Generic query terms at rank 1 (issue 37, item 1), offline on lodo's lists.

Needs the per-term impacts that examples/retriever_lists.rs now dumps ("per_term"), so run
`research/eval/lodo --no-build --refresh` once after building it. For every labelled set it
prints R@1 / R@5 of lexical, dense and the calibrated hybrid (0.7 / 0.25, without the
first-place step that came after this study), then of the same with each query term's BM25
impact weighted by how rarely everyday requests use it: the term's
IDF among the English calibration requests (crates/toolrag-engine/src/search/background.txt),
scaled to 1 for a term none of them has ("idf"), and that weight squared ("idf^2"). The
calibration lists are re-scored the same way (each request's terms with their count less its
own), so the lexical evidence stays measured against the registry's noise.

Usage: python3 research/eval/rank1_terms.py [WORK]   (WORK: a lodo folder, default target/lodo)
"""

from __future__ import annotations

import collections
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from name_phrases import load_lodo

W, Q0 = 0.7, 0.25  # the shipped calibrated fusion

lodo = load_lodo()


def labelled(work: Path) -> dict:
    """Every labelled set whose lists are in `work`."""
    lodo.WORK = work
    out = {}
    for name, (_, queries) in lodo.sets().items():
        lists = work / "lists" / f"{name}.jsonl"
        if lists.exists():
            out[name] = lodo.LabelledSet(name, queries, lists, work / "lists" / f"{name}.background.jsonl")
    return out


def recall(s, q, ords: list[int]) -> tuple[float, float]:
    m = lodo.score.score_query(q["groups"], [s.tools[o] for o in ords[:10]])
    return m["recall@1"], m["recall@5"]


def weighted(work: Path, name: str, power: float):
    """(hybrid, lexical) rankers with every term's impact weighted by its background IDF."""
    with open(work / "lists" / f"{name}.background.jsonl") as fh:
        bg = [json.loads(line) for line in fh][1:]
    n = len(bg)
    df = collections.Counter(t[0] for r in bg for t in r["terms"])
    unseen = math.log((n + 1) / 0.5)

    def rescore(r: dict, own: int) -> list[tuple[int, float]]:
        acc: dict[int, float] = collections.defaultdict(float)
        for (term, *_), hits in zip(r["terms"], r["per_term"], strict=True):
            w = (math.log((n + 1) / (max(df[term] - own, 0) + 0.5)) / unseen) ** power
            for o, impact in hits:
                acc[o] += w * impact
        return sorted(acc.items(), key=lambda x: (-x[1], x[0]))

    cal = lodo.Calibration({str(r["id"]): {**r, "lexical": rescore(r, 1)} for r in bg})

    def hybrid(r: dict) -> list[int]:
        return [o for o, _ in lodo.calibrated(cal, {**r, "lexical": rescore(r, 0)}, W, Q0, first=False)]

    return hybrid, lambda r: [o for o, _ in rescore(r, 0)]


def main() -> None:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else lodo.WORK
    print("| set | lexical | dense | hybrid | lexical, idf | hybrid, idf | lexical, idf^2 | hybrid, idf^2 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, s in labelled(work).items():
        h1, l1 = weighted(work, name, 1.0)
        h2, l2 = weighted(work, name, 2.0)
        rankers = [
            lambda r: [o for o, _ in r["lexical"]],
            lambda r: [o for o, _ in r["dense"]],
            lambda r, s=s: [o for o, _ in lodo.calibrated(s.cal, r, W, Q0, first=False)],
            l1,
            h1,
            l2,
            h2,
        ]
        cells = []
        for rank in rankers:
            r1 = r5 = 0.0
            for q in s.answerable:
                a, b = recall(s, q, rank(s.rows[str(q["id"])]))
                r1, r5 = r1 + a, r5 + b
            cells.append(f"{r1 / len(s.answerable):.3f} / {r5 / len(s.answerable):.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
