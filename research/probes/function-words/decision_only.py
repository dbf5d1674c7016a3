#!/usr/bin/env python3
"""Function words dropped for the decision only (issue 49 item 5, the next step of the first
attempt): the ranking as shipped (every request term), the NAVIGATE/ABSTAIN decision from the
lists without function words, each judged against its own calibration. Offline, from the two
lodo dumps of the first attempt:

  TOOLRAG_FUNCTION_WORDS=1 research/eval/lodo --model minilm-tools --tag fw1 --no-build   # terms kept
  research/eval/lodo --model minilm-tools --tag fw0 --no-build   # with drop-function-words.patch applied
  python3 research/probes/function-words/decision_only.py [--kept target/lodo-fw1] [--dropped target/lodo-fw0]

Every threshold is chosen per fold on the other sets, as lodo chooses it (the kept share of each
other set at least 97%). Prints, per held-out set, the kept share and the out-of-scope share
abstained, as shipped and with the decision on the dropped lists. R@1 and R@5 are the shipped
ones by construction. Research only.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "research" / "eval"))
from rank1_terms import labelled as load, lodo  # noqa: E402  (every set in a lodo folder)


def decide_on(kept: "lodo.LabelledSet", dropped: "lodo.LabelledSet") -> None:
    """kept's abstaining(), with the decision taken on dropped's lists and calibration."""
    def abstaining(w: float, q0: float, t: float) -> dict:
        nav = lodo.new_navigate(dropped, w, q0, t)
        handled = kept.handled(w, q0)
        k = sum(1 for q in handled if nav(dropped.rows[str(q["id"])]))
        a = sum(1 for q in kept.none if not nav(dropped.rows[str(q["id"])]))
        return {"t": t, "kept": k, "handled": len(handled),
                "kept_share": k / len(handled) if handled else None,
                "abstained": a, "none": len(kept.none),
                "abstained_share": a / len(kept.none) if kept.none else None}
    kept.abstaining = abstaining


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kept", type=Path, default=ROOT / "target" / "lodo-fw1")
    ap.add_argument("--dropped", type=Path, default=ROOT / "target" / "lodo-fw0")
    a = ap.parse_args()
    shipped = lodo.evaluate(load(a.kept))
    mixed_sets = load(a.kept)
    dropped = load(a.dropped)
    for name, s in mixed_sets.items():
        decide_on(s, dropped[name])
    mixed = lodo.evaluate(mixed_sets)
    print("| held-out set | R@1 | R@5 | t | kept | out-of-scope abstained |")
    print("|---|---|---|---|---|---|")
    f = lodo.fmt
    for held, fold in shipped["folds"].items():
        m = fold["systems"]["calibrated (new)"]
        x, y = fold["abstain"], mixed["folds"][held]["abstain"]
        print(f"| {held} | {m['recall@1']:.3f} | {m['recall@5']:.3f} | {x['t']:.2f} → {y['t']:.2f} | "
              f"{f(x['kept_share'])} → {f(y['kept_share'])} | "
              f"{f(x['abstained_share'])} → {f(y['abstained_share'])} |")


if __name__ == "__main__":
    main()
