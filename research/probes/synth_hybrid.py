#!/usr/bin/env python3
"""Hybrid with synthesised requests (issue 49), offline: the dense list of every labelled and
calibration request recomputed, then lodo's calibrated fusion (w 0.7, q0 0.25: every fold's
choice) over today's BM25 list and the new dense list.

  target/train-venv/bin/python research/probes/synth_hybrid.py SET WRITTEN [--lists target/lodo-fw1]

WRITTEN: synth_requests.py's SET.synth.jsonl, or a registry folder whose tools carry examples
(tools/, for the golden set: its hand-written example requests).

Dense variants, all recomputed here on the whole request (the product also embeds clauses, so
"text" is today's dense as this probe computes it, not the product's exactly):
  text      cos(request, tool text)
  centroid  cos(request, tool text)/2 + cos(request, mean of the tool's written requests)/2
Prints R@1 and R@5 of dense and hybrid for each, and for the centroid lists fused with the
calibration measured on the text-only lists (the evidence weights as today). Research only.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "research" / "training"))
sys.path.insert(0, str(ROOT.parent / "shared" / "eval"))
from train_model import ort_embedder, tool_texts  # noqa: E402
from train_reader import lodo_module  # noqa: E402
import score  # type: ignore  # noqa: E402

lodo = lodo_module()

name, synth = sys.argv[1], Path(sys.argv[2])
lists = Path(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--lists" else ROOT / "target" / "lodo-fw1"
registry, queries = lodo.sets()[name]
s = lodo.LabelledSet(name, queries, lists / "lists" / f"{name}.jsonl", lists / "lists" / f"{name}.background.jsonl")
M = ROOT / "models" / "minilm-tools"
embed = ort_embedder(M / "model.onnx", M / "tokenizer.json", threads=2)
base = tool_texts(registry)
def written(path: Path) -> dict[str, list[str]]:
    """{tool id: requests}: from synth_requests.py's cache (SET.synth.jsonl), or, for a
    registry folder, the examples toolrag reads from it (tools/'s hand-written ones)."""
    if path.suffix == ".jsonl":
        out = {}
        for line in path.read_text().splitlines():
            r = json.loads(line)
            out[r.get("id") or f"{Path(r['file']).stem}/{r['tool']}"] = r["requests"]
        return out
    return {k: v["examples"] for k, v in tool_texts(path).items()}


syn = written(synth)
D = np.stack([embed(base[i]["text"]) for i in s.tools])


def unit(v):
    return v / np.linalg.norm(v)


C = np.stack([unit(np.mean([embed(e) for e in syn[i]], axis=0))
              if syn.get(i) else D[k] for k, i in enumerate(s.tools)])
print(f"{name}: {sum(1 for i in s.tools if syn.get(i))} of {len(s.tools)} tools have written requests",
      file=sys.stderr)
# Every request is embedded once; each variant below only rescores the vectors.
bg_text = {str(r["id"]): r["query"]
           for r in map(json.loads, (lists / "background.jsonl").read_text().splitlines()) if r}
bg_vec = {k: embed(bg_text[k]) for k in s.cal.bg}
q_vec = {str(q["id"]): embed(q["query"]) for q in s.answerable}


def dense(v, variant):
    sc = D @ v if variant == "text" else 0.5 * (D @ v) + 0.5 * (C @ v)
    order = np.argsort(-sc, kind="stable")[: lodo.DEPTH]
    return [[int(o), float(sc[o])] for o in order]


out = {}
# (the labelled requests' dense lists, the calibration requests' dense lists)
for variant, calibrated_on in (("text", "text"), ("centroid", "centroid"), ("centroid", "text")):
    bg = {}
    for k, r in s.cal.bg.items():
        r2 = dict(r)
        r2["dense"] = dense(bg_vec[k], calibrated_on)
        bg[k] = r2
    cal = lodo.Calibration(bg)
    tot = {"dense@1": 0.0, "dense@5": 0.0, "hybrid@1": 0.0, "hybrid@5": 0.0}
    for q in s.answerable:
        r = dict(s.rows[str(q["id"])])
        r["dense"] = dense(q_vec[str(q["id"])], variant)
        for key, ranked in (("dense", r["dense"]), ("hybrid", lodo.calibrated(cal, r, 0.7, 0.25))):
            m = score.score_query(q["groups"], [s.tools[o] for o, _ in ranked[:10]])
            tot[f"{key}@1"] += m["recall@1"]
            tot[f"{key}@5"] += m["recall@5"]
    label = variant if variant == calibrated_on else f"{variant}, calibrated on {calibrated_on}"
    out[label] = {k: round(v / len(s.answerable), 3) for k, v in tot.items()}
print(json.dumps({"set": name, "n": len(s.answerable), **out}), flush=True)
