#!/usr/bin/env python3
"""Verifier probe: can a (request, tool) cross-encoder tell an out-of-scope request from an answerable one?

  target/train-venv/bin/python research/probes/verifier_probe.py [--out target/verifier] [--per-dataset 1200]
      [--eval-only]

Trains a cross-encoder from the base MiniLM weights (those of research/training/train-model) on the four
datasets of ../shared/data only, so that the four real sets with out-of-scope requests (golden,
mcp_dev, mcp_ref, mcp_pypi) stay held out. Each training group is one answerable request with a
relevant tool (the positive) and three negatives: the two non-relevant tools the shipped model
ranks highest (the request as if its tool were missing: an adjacent out-of-scope request) and one
random tool of the same registry. Loss: softmax over the group plus binary cross-entropy per pair;
batch 8 groups (32 pairs), one epoch, lr 5e-5, 128 tokens, seed 7 (about 26 minutes on 2 cores).

Then, on each real set, it scores (request, each of the first three fused tools) and prints the
ROC AUC of answerable over out-of-scope for the calibrated shares and for the verifier, and the
held-out decision (threshold and verifier floor chosen on the other three sets at 95% pooled
kept), with the floor overriding agreement or not. Reads the lists of `research/eval/lodo --model
minilm-tools` (target/lodo-minilm-tools). Research only: nothing here is used by toolrag.
BENCHMARKS.md, "Abstain".
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other probes
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))  # train_model
import abstain_probes as probes  # noqa: E402
from train_model import DATA, DATASETS, ROOT, fetch_base, ort_embedder, tool_texts  # noqa: E402

GROUP = 4  # the positive, two adjacent negatives, one random negative
TOP = 3  # fused tools verified per request


def groups(per_dataset: int, rng: random.Random) -> list[dict]:
    model = ROOT / "models" / "minilm-tools"
    embed = ort_embedder(model / "model.onnx", model / "tokenizer.json", 2)
    out = []
    for ds in DATASETS:
        texts = tool_texts(DATA / ds / "tools.jsonl")
        ids = list(texts)
        vecs = np.stack([embed(texts[i]["text"]) for i in ids])
        qs = [json.loads(line) for line in open(DATA / ds / "queries.jsonl") if line.strip()]
        qs = [q for q in qs if q.get("kind") != "none" and any(r in texts for r in q["relevant"])]
        rng.shuffle(qs)
        for q in qs[:per_dataset]:
            rel = set(q["relevant"])
            ranked = [ids[j] for j in np.argsort(-(vecs @ embed(q["query"])))[:20]]
            adjacent = [t for t in ranked if t not in rel][:2]
            rand = rng.choice([t for t in ids if t not in rel])
            pos = rng.choice([r for r in q["relevant"] if r in texts])
            out.append({"q": q["query"], "tools": [texts[t]["text"] for t in [pos, *adjacent, rand]]})
        print(f"verifier-probe: {ds}: {len(out)} groups so far", file=sys.stderr, flush=True)
    return out


def train(out: Path, per_dataset: int) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    rng = random.Random(7)
    data = [g for g in groups(per_dataset, rng) if len(g["tools"]) == GROUP]
    rng.shuffle(data)
    torch.manual_seed(7)
    torch.set_num_threads(2)
    base = str(fetch_base(ROOT / "target" / "train" / "cache"))
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    plan = [data[i:i + 8] for i in range(0, len(data), 8)]
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
    sched = get_linear_schedule_with_warmup(opt, int(0.06 * len(plan)), len(plan))
    bce = torch.nn.BCEWithLogitsLoss()
    model.train()
    t0, seen = time.time(), []
    for step, batch in enumerate(plan, 1):
        enc = tok([g["q"] for g in batch for _ in g["tools"]], [t for g in batch for t in g["tools"]],
                  truncation="longest_first", max_length=128, padding=True, return_tensors="pt")
        logits = model(**enc).logits.view(len(batch), GROUP)
        labels = torch.zeros_like(logits)
        labels[:, 0] = 1
        loss = torch.nn.functional.cross_entropy(logits, torch.zeros(len(batch), dtype=torch.long)) \
            + bce(logits, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        seen.append((loss.item(), (logits.argmax(1) == 0).float().mean().item()))
        if step % 20 == 0 or step == len(plan):
            print(f"verifier-probe: step {step}/{len(plan)} loss {statistics.mean(x for x, _ in seen[-20:]):.3f} "
                  f"positive first {statistics.mean(y for _, y in seen[-20:]):.2f} "
                  f"{time.time() - t0:.0f}s", file=sys.stderr, flush=True)
    model.eval()
    model.save_pretrained(out)
    tok.save_pretrained(out)


def evaluate(out: Path, lists: Path) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(out)
    model = AutoModelForSequenceClassification.from_pretrained(out).eval()
    lodo = probes.load_lodo()
    data = {}
    for name in probes.SETS:
        texts = {i: t["text"] for i, t in tool_texts(lists / "data" / name / "tools.jsonl").items()}
        s = probes.labelled_set(lodo, lists, name)
        rows = probes.rows_of(lodo, s, None, texts)
        for q, row in zip(s.queries, rows):
            fused = lodo.calibrated(s.cal, s.rows[str(q["id"])], probes.W, probes.Q0)
            tops = [texts[s.tools[i]] for i, _ in fused[:TOP]]
            with torch.no_grad():
                enc = tok([q["query"]] * len(tops), tops, truncation="longest_first", max_length=128,
                          padding=True, return_tensors="pt")
                v = model(**enc).logits.view(-1).tolist() if tops else [-99.0]
            row["first"], row["best3"] = v[0], max(v)
        data[name] = rows
    floors = [-99.0] + [round(float(x), 1) for x in np.arange(-10, 10, 0.1)]
    probes.floor_report(lodo, data, {"first": "verifier on the first tool", "best3": "best of three"}, floors)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "target" / "verifier")
    ap.add_argument("--lists", type=Path, default=ROOT / "target" / "lodo-minilm-tools")
    ap.add_argument("--per-dataset", type=int, default=1200)
    ap.add_argument("--eval-only", action="store_true", help="score with the verifier already in --out")
    args = ap.parse_args()
    if not args.eval_only:
        train(args.out, args.per_dataset)
    evaluate(args.out, args.lists)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
