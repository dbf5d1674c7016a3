"""Abstaining on registries that serve everyday requests (issue 37, item 2), offline.

The bfcl fold keeps 0.948 of its answerable requests at the threshold that the other sets
choose, where 0.97 is the bar. bfcl's 3,258 tools serve recipes, distances, music and
shopping: the everyday things the calibration requests are made of, so on it they are not
unrelated text, its noise is high, and good requests look like noise. This compares, with
lodo's protocol (t chosen on the other sets, the largest at which each keeps 97%; a finer
grid of 0.01):

- every calibration request as noise (before), or "served out": without those on which both
  retrievers put the same tool first (the registry likely serves them; shipped since);
- the confidence as the fusion weights' mix ((1 - w) * lexical share + w * dense share,
  before), the plain mean of the two shares, or the larger share (either retriever standing
  out is enough; shipped since).

Prints, per variant, each held-out set's t, kept share and out-of-scope share abstained.

Usage: python3 research/eval/abstain_variants.py [WORK]   (WORK: a lodo folder)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rank1_terms import labelled, lodo


def confidence(form: str):
    def judgements(s, r: dict, w: float) -> list:
        out = []
        for code, cal in zip(["", r.get("lang") or ""], s.cals_of(r), strict=False):
            sl, sd = lodo.shares(cal, r)
            agree = (
                sl > lodo.AGREEMENT
                and sd > lodo.AGREEMENT
                and bool(r["lexical"])
                and bool(r["dense"])
                and r["lexical"][0][0] == r["dense"][0][0]
            )
            c = {"mix": (1 - w) * sl + w * sd, "mean": (sl + sd) / 2, "max": max(sl, sd)}[form]
            out.append((code, c, agree))
        return out

    return judgements


def main() -> None:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else lodo.WORK
    lodo.T_GRID = [round(0.01 * i, 2) for i in range(100)]
    rows = {}
    for robust in (False, True):
        for form in ("mix", "mean", "max"):
            lodo.ROBUST = robust
            lodo.judgements = confidence(form)
            res = lodo.evaluate(labelled(work))
            label = (
                f"{'served out' if robust else 'all noise'}, "
                f"{ {'mix': 'weighted mix', 'mean': 'mean', 'max': 'larger share'}[form] }"
            )
            rows[label] = res
    names = list(next(iter(rows.values()))["folds"])
    print("| variant | " + " | ".join(names) + " | worst kept |")
    print("|---|" + "---|" * (len(names) + 1))
    for label, res in rows.items():
        cells, worst = [], 1.0
        for n in names:
            f = res["folds"][n]
            a = f["abstain"]
            worst = min(worst, a["kept_share"])
            cell = f"{f['chosen']['t']:.2f}: {a['kept_share']:.3f}"
            if a["none"]:
                cell += f" / {a['abstained_share']:.2f}"
            cells.append(cell)
        print(f"| {label} | " + " | ".join(cells) + f" | {worst:.3f} |")


if __name__ == "__main__":
    main()
