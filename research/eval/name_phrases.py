"""Name phrases across separators (issue 37, item 1), offline on lodo's lists.

A tool whose name has two words or more ("git_log", "getCurrentTime", "create-entities") and
appears as a phrase in the request ("show the git log") is put first, if it is among the top TOPN
of today's calibrated fused list. Prints hybrid R@1 before and after for every set.

Usage: research/eval/lodo --no-build && python3 research/eval/name_phrases.py TOPN
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def load_lodo():
    loader = importlib.machinery.SourceFileLoader("lodo", str(ROOT / "research" / "eval" / "lodo"))
    spec = importlib.util.spec_from_loader("lodo", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def words(tool_id: str) -> list[str]:
    """The words of a tool's name: the id's last part, split at separators and camelCase."""
    name = tool_id.split("/")[-1].split(".")[-1].split("#")[0]
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w.lower() for w in re.split(r"[_\-\s.]+", name) if w]


def main() -> None:
    top_n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    lodo = load_lodo()
    for name, (_, queries) in lodo.sets().items():
        lists = lodo.WORK / "lists" / f"{name}.jsonl"
        background = lodo.WORK / "lists" / f"{name}.background.jsonl"
        if not lists.exists():
            continue
        s = lodo.LabelledSet(name, queries, lists, background)
        phrases = {o: " ".join(words(t)) for o, t in enumerate(s.tools) if len(words(t)) >= 2}
        before = after = 0.0
        changed = 0
        for q in s.answerable:
            fused = lodo.calibrated(s.cal, s.rows[str(q["id"])], 0.7, 0.25)
            text = " " + re.sub(r"[^a-z0-9]+", " ", q["query"].lower()) + " "
            top = {o for o, _ in fused[:top_n]}
            hits = sorted((o for o, p in phrases.items() if f" {p} " in text and o in top),
                          key=lambda o: -len(phrases[o]))
            ids = [s.tools[o] for o, _ in fused[:10]]
            moved = ids
            if hits:
                order = [hits[0]] + [o for o, _ in fused if o != hits[0]]
                moved = [s.tools[o] for o in order[:10]]
                changed += moved[0] != ids[0]
            before += lodo.score.score_query(q["groups"], ids)["recall@1"]
            after += lodo.score.score_query(q["groups"], moved)["recall@1"]
        n = len(s.answerable)
        print(f"{name:15s} hybrid R@1 {before / n:.3f} -> with name phrases {after / n:.3f}"
              f"  (top changed on {changed} of {n})")


if __name__ == "__main__":
    main()
