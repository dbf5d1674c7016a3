#!/usr/bin/env python3
"""Abstain probes: how far the calibrated shares can go, and two signals tried beside them.

  target/train-venv/bin/python scripts/abstain_probes.py [--lists target/lodo-minilm-tools]
      [--model models/minilm-tools]

Reads the lists that `scripts/lodo --model minilm-tools` leaves in target/lodo-minilm-tools (run
it first) and, for the four real labelled sets (golden, mcp_dev, mcp_ref, mcp_pypi), prints:

- the oracle: the out-of-scope share abstained when the threshold is chosen on the set itself at
  exactly 95% of its answerable requests kept (an upper bound for the shares);
- each set held out, the threshold (and any second threshold) chosen on the other three at 95%
  pooled kept, for: the shares alone; the shares AND token coverage (every request word must find
  a close contextual token in the first fused tool's text, the same model's last hidden state; the
  mean of the per-word max cosines); the lexical share of BM25 divided by the most the request's
  known terms could score; the same with unknown terms counted at the request's largest impact.

The shares mirror scripts/lodo (imported, with its hub correction), dense weight 0.7 and noise
quantile 0.25 (the shipped defaults). Research only: nothing here is used by toolrag. Needs numpy,
onnxruntime and tokenizers (the venv of scripts/train-model has them). BENCHMARKS.md, "Abstain".
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_model import ROOT, tool_texts  # noqa: E402  (the text toolrag embeds, one dump)

SETS = ["golden", "mcp_dev", "mcp_ref", "mcp_pypi"]
W, Q0 = 0.7, 0.25
STOP = set("a an the to of in on for and or with my me i you your please can could would this that it is "
           "are be by from at as do does what how which all any some into about show get".split())


def load_lodo():
    loader = importlib.machinery.SourceFileLoader("lodo", str(ROOT / "scripts" / "lodo"))
    spec = importlib.util.spec_from_loader("lodo", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


class Tokens:
    """Contextual word vectors (mean of a word's pieces, unit length) from the model's last hidden state."""

    def __init__(self, model: Path):
        import onnxruntime as ort
        from tokenizers import Tokenizer
        self.sess = ort.InferenceSession(str(model / "model.onnx"))
        self.tok = Tokenizer.from_file(str(model / "tokenizer.json"))
        self.tok.enable_truncation(256)
        self.cache: dict[str, tuple[np.ndarray, list[str]]] = {}

    def words(self, text: str) -> tuple[np.ndarray, list[str]]:
        if text in self.cache:
            return self.cache[text]
        e = self.tok.encode(text)
        ids = np.array([e.ids], dtype=np.int64)
        h = self.sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                 "token_type_ids": np.zeros_like(ids)})[0][0]
        rows: dict[int, list[int]] = {}
        for i, w in enumerate(e.word_ids):
            if w is not None:
                rows.setdefault(w, []).append(i)
        vecs, names = [], []
        for r in rows.values():
            word = text[e.offsets[r[0]][0]:e.offsets[r[-1]][1]].lower()
            if re.search("[a-z0-9]", word):
                v = h[r].mean(0)
                vecs.append(v / np.linalg.norm(v))
                names.append(word)
        out = (np.array(vecs) if vecs else np.zeros((0, h.shape[1])), names)
        self.cache[text] = out
        return out

    def coverage(self, request: str, tool_text: str) -> float:
        qv, qn = self.words(request)
        tv, _ = self.words(tool_text)
        keep = [i for i, w in enumerate(qn) if w not in STOP]
        if not keep or len(tv) == 0:
            return 0.0
        return float((qv[keep] @ tv.T).max(1).mean())


def bound(r: dict, unknown: bool) -> float:
    """The request's best BM25 over the most its terms could score."""
    if not r["lexical"]:
        return 0.0
    known = [m for _, _, m in r["terms"] if m is not None]
    den = sum(known) + (sum(1 for _, _, m in r["terms"] if m is None) * max(known, default=1.0) if unknown else 0)
    return r["lexical"][0][1] / den if den > 0 else 0.0


def rows_of(lodo, lists: Path, name: str, tokens: Tokens | None, texts: dict) -> list[dict]:
    s = lodo.LabelledSet(name, lists / "data" / name / "queries.jsonl", lists / "lists" / f"{name}.jsonl",
                         lists / "lists" / f"{name}.background.jsonl")
    bg = {v: sorted(bound(r, v) for r in s.cal.bg.values()) for v in (False, True)}
    out = []
    for q in s.queries:
        r = s.rows[str(q["id"])]
        sl, sd = lodo.shares(s, r)
        agree = bool(r["lexical"]) and bool(r["dense"]) and r["lexical"][0][0] == r["dense"][0][0]
        row = {"kind": "none" if q in s.none else "ans"}
        for key, share in (("shares", sl), ("bound", lodo.ecdf(bg[False], bound(r, False))),
                           ("bound+unknown", lodo.ecdf(bg[True], bound(r, True)))):
            row[key] = ((1 - W) * share + W * sd, agree and share > lodo.AGREEMENT and sd > lodo.AGREEMENT)
        fused = lodo.calibrated(s.cal, r, W, Q0)
        row["coverage"] = tokens.coverage(q["query"], texts[s.tools[fused[0][0]]]) if tokens and fused else 0.0
        out.append(row)
    return out


def decide(rows, key, t, u):
    k = na = ab = nn = 0
    for r in rows:
        c, agree = r[key]
        nav = (agree or c >= t) and r["coverage"] >= u
        if r["kind"] == "ans":
            na, k = na + 1, k + nav
        else:
            nn, ab = nn + 1, ab + (not nav)
    return k, na, ab, nn


def held_out(lodo, data: dict, key: str, us: list[float]) -> dict:
    out = {}
    for held in data:
        best = None
        for t in np.arange(0, 1.0001, 0.01):
            for u in us:
                tot = [sum(x) for x in zip(*(decide(data[n], key, t, u) for n in data if n != held))]
                if tot[0] / tot[1] >= lodo.KEPT and (best is None or tot[2] / tot[3] > best[0]):
                    best = (tot[2] / tot[3], t, u)
        _, t, u = best
        k, na, ab, nn = decide(data[held], key, t, u)
        out[held] = {"t": round(float(t), 2), "coverage_floor": None if u < 0 else round(float(u), 2),
                     "kept": round(k / na, 3), "abstained": round(ab / nn, 3)}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lists", type=Path, default=ROOT / "target" / "lodo-minilm-tools")
    ap.add_argument("--model", type=Path, default=ROOT / "models" / "minilm-tools")
    args = ap.parse_args()
    lodo = load_lodo()
    tokens = Tokens(args.model)
    data = {}
    for name in SETS:
        texts = {i: t["text"] for i, t in tool_texts(args.lists / "data" / name / "tools.jsonl").items()}
        data[name] = rows_of(lodo, args.lists, name, tokens, texts)
    print("oracle (threshold on the set itself, exactly 95% kept): out-of-scope abstained")
    for name, rows in data.items():
        ans = sorted((1.0 if r["shares"][1] else 0.0) + r["shares"][0] for r in rows if r["kind"] == "ans")
        t = ans[int(len(ans) * (1 - lodo.KEPT))]
        none = [(1.0 if r["shares"][1] else 0.0) + r["shares"][0] for r in rows if r["kind"] == "none"]
        print(f"  {name}: {np.mean([x < t for x in none]):.3f}")
    grid = [-1.0] + [round(x, 2) for x in np.arange(0.3, 0.95, 0.01)]
    for label, key, us in (("shares", "shares", [-1.0]), ("shares and token coverage", "shares", grid),
                           ("bound share", "bound", [-1.0]), ("bound share, unknown terms", "bound+unknown", [-1.0])):
        res = held_out(lodo, data, key, us)
        print(f"{label}: " + "  ".join(f"{n} {v['kept']:.3f}/{v['abstained']:.3f}"
                                         + (f" (floor {v['coverage_floor']})" if v["coverage_floor"] is not None else "")
                                         for n, v in res.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
