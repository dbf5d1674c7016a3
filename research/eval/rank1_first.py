"""The first place chosen above the registry's noise (issue 37, item 1), leave-one-dataset-out.

Calibrated fusion scales cosines min-max over the dense list. On a small registry the list's
bottom lies far below anything a request means, so a clear dense margin at the top shrinks to a
few hundredths, and a lexical match on one name word outweighs it: "show the last 5 commits"
gets git_show. fusion.rs now gives the first place to the best of the top 5 by the same mix with
the cosines scaled from the registry's noise level (the noise quantile q0 of the calibration
requests' best cosines, 0 below), and leaves the rest of the order as it was.

This runs lodo's protocol twice on lodo's lists, with the first-place step off and on ((w, q0)
and t chosen on the other sets each time), and prints each held-out set's R@1 and R@5 for
lexical, dense and hybrid; a tick where hybrid R@1 is above both of its halves.

Usage: research/eval/lodo --no-build && python3 research/eval/rank1_first.py [WORK]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from rank1_terms import labelled, lodo

CALIBRATED = lodo.calibrated


def run(work: Path, first: bool) -> dict:
    lodo.calibrated = lambda cal, r, w, q0, first_=first: CALIBRATED(cal, r, w, q0, first=first_)
    try:
        return lodo.evaluate(labelled(work))
    finally:
        lodo.calibrated = CALIBRATED


def main() -> None:
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else lodo.WORK
    before, after = run(work, False), run(work, True)
    print(
        "| held-out set | w, q0 | lexical R@1 / R@5 | dense R@1 / R@5 | hybrid before | "
        "hybrid, first above noise | above both halves |"
    )
    print("|---|---|---|---|---|---|---|")
    for held, fold in after["folds"].items():
        s = fold["systems"]
        was = before["folds"][held]["systems"]["calibrated (new)"]
        now = s["calibrated (new)"]
        halves = max(s["lexical"]["recall@1"], s["dense"]["recall@1"])
        cell = lambda m: f"{m['recall@1']:.3f} / {m['recall@5']:.3f}"  # noqa: E731
        print(
            f"| {held} | {fold['chosen']['w']}, {fold['chosen']['q0']} | {cell(s['lexical'])} | "
            f"{cell(s['dense'])} | {cell(was)} | {cell(now)} | "
            f"{'yes' if now['recall@1'] > halves else 'no'} "
            f"(before: {'yes' if was['recall@1'] > halves else 'no'}) |"
        )


if __name__ == "__main__":
    main()
