#!/usr/bin/env python3
"""Dense scoring with synthesised requests (issue 49): each tool's own text against the mean of
its written requests, offline, on the model the index uses (models/minilm-tools via onnxruntime).

  target/train-venv/bin/python research/probes/synth_centroid.py SET REGISTRY SYNTH_DIR QUERIES

Prints dense R@1 / R@5 over the answerable requests for: the tool text alone (today's dense), the
best of the text and each request (what the index does with example points), and the text mixed
with the requests' centroid, cos(q, text)/2 + cos(q, centroid)/2. Research only.
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
import score  # type: ignore  # noqa: E402

name, registry, synth, queries = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4])
M = ROOT / "models" / "minilm-tools"
embed = ort_embedder(M / "model.onnx", M / "tokenizer.json", threads=2)
base = tool_texts(registry)
syn = tool_texts(synth)
ids = list(base)
D = np.stack([embed(base[i]["text"]) for i in ids])
ex = {i: [embed(e) for e in syn[i]["examples"]] for i in ids if i in syn}
C = np.stack([(lambda v: v / np.linalg.norm(v))(np.mean(ex[i], axis=0)) if ex.get(i) else D[k]
              for k, i in enumerate(ids)])
rows = [json.loads(l) for l in queries.read_text().splitlines() if l.strip()]
rows = [q for q in rows if q.get("kind") != "none" and q.get("groups")]
tot = {k: [0.0, 0.0] for k in ("text", "max", "centroid")}
for q in rows:
    v = embed(q["query"])
    s_text = D @ v
    s_max = np.array([max([s_text[k]] + [float(e @ v) for e in ex.get(i, [])]) for k, i in enumerate(ids)])
    s_cen = 0.5 * s_text + 0.5 * (C @ v)
    for k, s in (("text", s_text), ("max", s_max), ("centroid", s_cen)):
        ranked = [ids[j] for j in np.argsort(-s, kind="stable")[:10]]
        m = score.score_query(q["groups"], ranked)
        tot[k][0] += m["recall@1"]
        tot[k][1] += m["recall@5"]
n = len(rows)
print(name, n, {k: (round(a / n, 3), round(b / n, 3)) for k, (a, b) in tot.items()})
