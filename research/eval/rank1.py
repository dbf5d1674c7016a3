#!/usr/bin/env python3
"""Rank 1 on held-out sets: lexical, dense, today's calibrated hybrid, and a learnt ranker over
the fused candidates, each labelled set held out in turn (issue 37).

Reads the lists that `research/eval/lodo` leaves (target/lodo by default; --work for another
folder) and works offline, as lodo does. The learnt ranker is a linear score over a few
features of each (request, candidate) pair, fitted with a listwise softmax loss on the other
sets (each set counts once) and scored on the held-out one:

- dense: the cosine min-max scaled over its list, its gap to the list's top, 1/(1+rank);
- lexical: BM25 over the list's top, 1/(1+rank);
- each of those two scaled by its retriever's calibrated evidence on the request;
- name: the share of the tool name's words (split at `_`, `-`, `.`, camelCase) that the
  request has, and whether it has all of them; whether it names the tool's server;
- the tool's hubness (its mean top cosine among the calibration requests).

Usage:
  target/research-venv/bin/python research/eval/rank1.py [--work target/lodo] [--features a,b]

numpy only (target/research-venv). Metrics are ../shared/eval/score.py's.
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
_loader = importlib.machinery.SourceFileLoader("lodo", str(ROOT / "research" / "eval" / "lodo"))
_spec = importlib.util.spec_from_loader("lodo", _loader)
lodo = importlib.util.module_from_spec(_spec)
_loader.exec_module(lodo)
score = lodo.score

W, Q0 = 0.7, 0.25  # the shipped calibrated fusion (fusion.rs DEFAULT_DENSE_WEIGHT; lodo's choice)
CAND = 20  # each list's top that the ranker re-orders

FEATURES = ["d_norm", "d_gap", "d_rr", "l_norm", "l_rr", "ed_d", "el_l", "name_cov",
            "name_all", "server", "hub", "hyb"]

WORD = re.compile(r"[a-z0-9]+")


def stem(w: str) -> str:
    for suf in ("ies", "es", "s"):
        if len(w) > 4 and w.endswith(suf):
            return w[: -len(suf)] + ("y" if suf == "ies" else "")
    return w


def name_words(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [stem(w) for w in WORD.findall(name.lower())]


def query_words(q: str) -> set[str]:
    q = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", q)
    return {stem(w) for w in WORD.findall(q.lower())}


class Set:
    def __init__(self, name: str, s):
        self.name = name
        self.s = s
        self.text = {str(q["id"]): q["query"] for q in s.queries}
        self.tool_words = []
        self.tool_server = []
        for t in s.tools:
            server, _, tool = t.rpartition("/")
            self.tool_words.append(name_words(tool or t))
            self.tool_server.append(name_words(server) if server else [])

    def candidates(self, qid: str):
        """(ordinals, feature matrix, hybrid order) of one request."""
        r = self.s.rows[qid]
        cal = self.s.cal
        el, ed = cal.evidences(r, Q0)
        hyb = lodo.calibrated(cal, r, W, Q0)
        dn = dict(lodo.by_range(r["dense"]))
        dr = {o: i for i, (o, _) in enumerate(r["dense"])}
        draw = dict(r["dense"])
        dtop = r["dense"][0][1] if r["dense"] else 0.0
        dbot = r["dense"][-1][1] if r["dense"] else 0.0
        ln = dict(lodo.by_top(r["lexical"]))
        lr = {o: i for i, (o, _) in enumerate(r["lexical"])}
        htop = hyb[0][1] if hyb and hyb[0][1] > 0 else 1.0
        hs = dict(hyb)
        ords = []
        for o, _ in r["dense"][:CAND] + r["lexical"][:CAND] + hyb[:CAND]:
            if o not in ords:
                ords.append(o)
        qw = query_words(self.text[qid])
        rows = []
        for o in ords:
            nw = self.tool_words[o]
            cov = sum(1 for w in nw if w in qw) / len(nw) if nw else 0.0
            rows.append([
                dn.get(o, 0.0),
                dtop - draw.get(o, dbot),
                1.0 / (1 + dr[o]) if o in dr else 0.0,
                ln.get(o, 0.0),
                1.0 / (1 + lr[o]) if o in lr else 0.0,
                ed * dn.get(o, 0.0),
                el * ln.get(o, 0.0),
                cov,
                1.0 if nw and cov == 1.0 else 0.0,
                1.0 if self.tool_server[o] and all(w in qw for w in self.tool_server[o]) else 0.0,
                cal.hubness.get(o, 0.0),
                hs.get(o, 0.0) / htop,
            ])
        return ords, np.array(rows, dtype=np.float64), [o for o, _ in hyb]

    def prepared(self):
        out = []
        for q in self.s.answerable:
            qid = str(q["id"])
            ords, x, hyb = self.candidates(qid)
            good = {o for o, t in enumerate(self.s.tools) if any(t in g for g in q["groups"])}
            y = np.array([1.0 if o in good else 0.0 for o in ords])
            out.append((q, ords, x, y, hyb))
        return out


def fit(train: list[list], cols: list[int], l2: float = 1e-2, iters: int = 400) -> np.ndarray:
    """A linear score by listwise softmax cross-entropy (each set's requests weighing 1/len),
    plain gradient descent with Adam."""
    data = [(x[:, cols], y, 1.0 / len(rows)) for rows in train for (_, _, x, y, _) in rows if y.sum() > 0]
    mu = np.concatenate([x for x, _, _ in data]).mean(0)
    sd = np.concatenate([x for x, _, _ in data]).std(0) + 1e-6
    w = np.zeros(len(cols))
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for it in range(1, iters + 1):
        g = l2 * w
        for x, y, wt in data:
            z = ((x - mu) / sd) @ w
            z -= z.max()
            p = np.exp(z)
            p /= p.sum()
            t = y / y.sum()
            g += wt * ((x - mu) / sd).T @ (p - t)
        g /= len(train)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        w -= 0.05 * (m / (1 - 0.9 ** it)) / (np.sqrt(v / (1 - 0.999 ** it)) + 1e-8)
    return np.concatenate([w / sd, [-(mu / sd) @ w]])


def metrics(rows, order_of) -> dict[str, float]:
    tot = {"recall@1": 0.0, "recall@5": 0.0}
    for q, ords, x, y, hyb in rows:
        ids = order_of(q, ords, x, hyb)
        m = score.score_query(q["groups"], ids[:10])
        for k in tot:
            tot[k] += m[k]
    return {k: v / max(1, len(rows)) for k, v in tot.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", type=Path, default=ROOT / "target" / "lodo")
    ap.add_argument("--features", default=",".join(FEATURES))
    a = ap.parse_args()
    cols = [FEATURES.index(f) for f in a.features.split(",")]
    sets = {}
    for name, (_registry, queries) in lodo.sets().items():
        lists = a.work / "lists" / f"{name}.jsonl"
        bg = a.work / "lists" / f"{name}.background.jsonl"
        if not lists.exists():
            continue
        sets[name] = Set(name, lodo.LabelledSet(name, queries, lists, bg))
    prepared = {n: s.prepared() for n, s in sets.items()}

    def by(tools, key):
        return lambda q, ords, x, hyb: [tools[o] for o in key(q, ords, x, hyb)]

    print(f"features: {a.features}\n")
    print("| held-out set | n | lexical R@1 | dense R@1 | hybrid R@1 | ranker R@1 | lexical R@5 | "
          "dense R@5 | hybrid R@5 | ranker R@5 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for held, s in sets.items():
        rows = prepared[held]
        tools = s.s.tools
        w = fit([prepared[n] for n in sets if n != held and n not in lodo.APART], cols)

        def ranked(q, ords, x, hyb, w=w):
            z = x[:, cols] @ w[:-1]
            top = [ords[i] for i in np.argsort(-z, kind="stable")]
            return top + [o for o in hyb if o not in set(top)]

        rowmap = {str(q["id"]): s.s.rows[str(q["id"])] for q, *_ in rows}
        lex = metrics(rows, by(tools, lambda q, *_: [o for o, _ in rowmap[str(q["id"])]["lexical"]]))
        den = metrics(rows, by(tools, lambda q, *_: [o for o, _ in rowmap[str(q["id"])]["dense"]]))
        hyb = metrics(rows, by(tools, lambda q, ords, x, h: h))
        rk = metrics(rows, by(tools, ranked))
        print(f"| {held} | {len(rows)} | {lex['recall@1']:.3f} | {den['recall@1']:.3f} | "
              f"{hyb['recall@1']:.3f} | {rk['recall@1']:.3f} | {lex['recall@5']:.3f} | "
              f"{den['recall@5']:.3f} | {hyb['recall@5']:.3f} | {rk['recall@5']:.3f} |")
        print("  weights: " + ", ".join(f"{FEATURES[c]} {v:+.2f}" for c, v in zip(cols, w[:-1])),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
