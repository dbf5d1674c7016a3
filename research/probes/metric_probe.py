#!/usr/bin/env python3
"""Metric probe: can a head on the frozen embeddings learn "this tool does that operation"?

  target/train-venv/bin/python research/probes/metric_probe.py [--lists target/lodo-minilm-tools]
      [--per-dataset 1500] [--epochs 30] [--seed 7]

The calibrated shares cannot tell an answerable request from an adjacent out-of-scope one ("push
my commits" on a git server that commits but does not push): the shipped model puts both near the
same tool. research/probes/verifier_probe.py tried a cross-encoder trained from the base weights and could
not train it far enough on 2 cores. This probe keeps the shipped model frozen and trains, in numpy
and in seconds, a score on its unit vectors q (request) and t (tool):

    s(q, t) = a q.t + q' M t - b,      P(t serves q) = sigmoid(s)

with M diagonal ("diag", 384 weights: which dimensions carry what a tool does) or of rank 32
("low-rank", M = U V'), a and b scalars. Training groups come from the four datasets of
../shared/data only, so the four real sets with out-of-scope requests stay held out: each
answerable request with one relevant tool (label 1) and three non-relevant ones of its registry,
the two the shipped model ranks highest (the request as if its tool were missing: an adjacent
out-of-scope request, label 0) and one at random (label 0). Loss: softmax over the group plus
binary cross-entropy per pair (the absolute part: a missing tool's neighbour must score below b),
L2 on M, Adam. 10% of the groups are kept aside to report the head's own validation loss.

Then, on each real set, the head scores the first fused tool of each request, and the probe
prints the ROC AUC of answerable over out-of-scope for the shares and the head, and the held-out
decision: threshold and a floor on P chosen on the other three sets at 95% pooled kept
(abstain_probes.held_out; agreement passes the floor, or not). Research only: nothing here is
used by toolrag. BENCHMARKS.md, "Abstain".
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other probes
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))  # train_model
import abstain_probes as probes  # noqa: E402
from train_model import DATA, DATASETS, ROOT, ort_embedder, tool_texts  # noqa: E402

DIM = 384
RANK = 32


def log(msg: str) -> None:
    print(f"metric-probe: {msg}", file=sys.stderr, flush=True)


def groups(embed, per_dataset: int, rng: random.Random) -> tuple[np.ndarray, np.ndarray]:
    """(Q, T): request vectors (n, d) and each request's group of tool vectors (n, 4, d), the
    positive first."""
    qs_out, ts_out = [], []
    for ds in DATASETS:
        t0 = time.time()
        texts = tool_texts(DATA / ds / "tools.jsonl")
        ids = list(texts)
        index = {t: i for i, t in enumerate(ids)}
        vecs = np.stack([embed(texts[i]["text"]) for i in ids])
        qs = [json.loads(line) for line in open(DATA / ds / "queries.jsonl") if line.strip()]
        qs = [q for q in qs if q.get("kind") != "none" and any(r in texts for r in q["relevant"])]
        rng.shuffle(qs)
        for q in qs[:per_dataset]:
            rel = {index[r] for r in q["relevant"] if r in index}
            qv = embed(q["query"])
            ranked = [j for j in np.argsort(-(vecs @ qv))[:20] if j not in rel][:2]
            rand = rng.choice([j for j in range(len(ids)) if j not in rel])
            pos = rng.choice(sorted(rel))
            qs_out.append(qv)
            ts_out.append(vecs[[pos, *ranked, rand]])
        log(f"{ds}: {len(qs_out)} groups so far ({time.time() - t0:.0f} s)")
    return np.stack(qs_out), np.stack(ts_out)


class Head:
    """s(q, t) = a q.t + q' M t - b, M diagonal or U V' of rank RANK."""

    def __init__(self, kind: str, rng: np.random.Generator):
        self.kind = kind
        self.p = {"a": np.array(20.0), "b": np.array(10.0)}
        if kind == "diag":
            self.p["m"] = np.zeros(DIM)
        else:
            self.p["u"] = rng.normal(0, 0.01, (DIM, RANK))
            self.p["v"] = rng.normal(0, 0.01, (DIM, RANK))

    def scores(self, q: np.ndarray, t: np.ndarray) -> np.ndarray:
        """q (n, d), t (n, g, d) -> s (n, g)."""
        s = self.p["a"] * np.einsum("nd,ngd->ng", q, t) - self.p["b"]
        if self.kind == "diag":
            return s + np.einsum("nd,ngd->ng", q * self.p["m"], t)
        return s + np.einsum("nr,ngr->ng", q @ self.p["u"], t @ self.p["v"])

    def loss_grad(self, q: np.ndarray, t: np.ndarray, l2: float) -> tuple[float, dict]:
        s = self.scores(q, t)
        n, g = s.shape
        y = np.zeros_like(s)
        y[:, 0] = 1
        e = np.exp(s - s.max(1, keepdims=True))
        soft = e / e.sum(1, keepdims=True)
        sig = 1 / (1 + np.exp(-s))
        ce = -np.log(soft[:, 0] + 1e-12).mean()
        bce = -(y * np.log(sig + 1e-12) + (1 - y) * np.log(1 - sig + 1e-12)).mean()
        ds_ce = (soft - y) / n
        ds_bce = (sig - y) / (n * g)
        ds = ds_ce + ds_bce
        cos = np.einsum("nd,ngd->ng", q, t)
        grad = {"a": np.array((ds * cos).sum()), "b": np.array(-ds_bce.sum())}
        if self.kind == "diag":
            grad["m"] = np.einsum("ng,nd,ngd->d", ds, q, t) + 2 * l2 * self.p["m"]
            reg = l2 * (self.p["m"] ** 2).sum()
        else:
            tv = t @ self.p["v"]                          # (n, g, r)
            qu = q @ self.p["u"]                          # (n, r)
            grad["u"] = q.T @ np.einsum("ng,ngr->nr", ds, tv) + 2 * l2 * self.p["u"]
            grad["v"] = np.einsum("ng,ngd,nr->dr", ds, t, qu) + 2 * l2 * self.p["v"]
            reg = l2 * ((self.p["u"] ** 2).sum() + (self.p["v"] ** 2).sum())
        return float(ce + bce + reg), grad

    def prob(self, q: np.ndarray, t: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-self.scores(q[None, :], t[None, :, :])[0]))


def fit(kind: str, q: np.ndarray, t: np.ndarray, args) -> Head:
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(q))
    cut = len(q) // 10
    va, tr = order[:cut], order[cut:]
    head = Head(kind, rng)
    m = {k: np.zeros_like(v) for k, v in head.p.items()}
    v2 = {k: np.zeros_like(v) for k, v in head.p.items()}
    step = 0
    for epoch in range(1, args.epochs + 1):
        rng.shuffle(tr)
        for i in range(0, len(tr), 64):
            b = tr[i:i + 64]
            _, grad = head.loss_grad(q[b], t[b], args.l2)
            step += 1
            for k in head.p:
                m[k] = 0.9 * m[k] + 0.1 * grad[k]
                v2[k] = 0.999 * v2[k] + 0.001 * grad[k] ** 2
                mh, vh = m[k] / (1 - 0.9 ** step), v2[k] / (1 - 0.999 ** step)
                head.p[k] = head.p[k] - args.lr * mh / (np.sqrt(vh) + 1e-8)
        if epoch % 5 == 0 or epoch == args.epochs:
            tl, _ = head.loss_grad(q[tr], t[tr], 0.0)
            vl, _ = head.loss_grad(q[va], t[va], 0.0)
            sv = head.scores(q[va], t[va])
            first = (sv.argmax(1) == 0).mean()
            p = 1 / (1 + np.exp(-sv))
            log(f"{kind} epoch {epoch}: train loss {tl:.3f}, validation loss {vl:.3f}, positive first "
                f"{first:.3f}, P(positive) {p[:, 0].mean():.2f}, P(adjacent) {p[:, 1:3].mean():.2f}")
    return head


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lists", type=Path, default=ROOT / "target" / "lodo-minilm-tools")
    ap.add_argument("--model", type=Path, default=ROOT / "models" / "minilm-tools")
    ap.add_argument("--per-dataset", type=int, default=1500)
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--l2", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--heads", default="diag,low-rank")
    args = ap.parse_args()
    embed = ort_embedder(args.model / "model.onnx", args.model / "tokenizer.json", 2)
    cache = ROOT / "target" / "metric-probe" / f"groups-{args.per_dataset}-{args.seed}.npz"
    if cache.exists():
        z = np.load(cache)
        q, t = z["q"], z["t"]
    else:
        q, t = groups(embed, args.per_dataset, random.Random(args.seed))
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, q=q, t=t)
    log(f"{len(q)} training groups")
    lodo = probes.load_lodo()
    probes.ensure_data(lodo, args.lists, probes.SETS)
    sets = {}
    for name in probes.SETS:
        texts = {i: x["text"] for i, x in tool_texts(args.lists / "data" / name / "tools.jsonl").items()}
        s = probes.labelled_set(lodo, args.lists, name)
        rows = probes.rows_of(lodo, s, None, texts)
        tv = {i: embed(x) for i, x in texts.items()}
        for qq, row in zip(s.queries, rows):
            fused = lodo.calibrated(s.cal, s.rows[str(qq["id"])], probes.W, probes.Q0)
            row["qv"] = embed(qq["query"])
            row["tv"] = np.stack([tv[s.tools[i]] for i, _ in fused[:3]]) if fused else None
        sets[name] = rows
    floors = [-1.0] + [round(float(x), 2) for x in np.arange(0.0, 1.0, 0.01)]
    for kind in args.heads.split(","):
        head = fit(kind, q, t, args)
        for rows in sets.values():
            for r in rows:
                p = head.prob(r["qv"], r["tv"]) if r["tv"] is not None else np.zeros(1)
                r["p_first"], r["p_best3"] = float(p[0]), float(p.max())
        probes.floor_report(lodo, sets, {"p_first": "head on the first tool", "p_best3": "best of three"},
                            floors, f"{kind} ")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
