#!/usr/bin/env python3
"""Abstain probes: how far the calibrated shares can go, and two signals tried beside them.

  target/train-venv/bin/python research/probes/abstain_probes.py [--lists target/lodo-minilm-tools]
      [--model models/minilm-tools] [--shares] [--world [N ...] [--world-of-others]
      [--world-extra DIR] [--world-without-datasets] [--all-sets]]

Reads the lists that `research/eval/lodo --model minilm-tools` leaves in target/lodo-minilm-tools (run
it first; each set's tools and requests are copied beside them where `--peers` did not) and,
for the four real labelled sets (golden, mcp_dev, mcp_ref, mcp_pypi), prints:

- the oracle: the out-of-scope share abstained when the threshold is chosen on the set itself at
  exactly 95% of its answerable requests kept (an upper bound for the shares);
- each set held out, the threshold (and any second threshold) chosen on the other three at 95%
  pooled kept, for: the shares alone; the shares AND token coverage (every request word must find
  a close contextual token in the first fused tool's text, the same model's last hidden state; the
  mean of the per-word max cosines); the lexical share of BM25 divided by the most the request's
  known terms could score; the same with unknown terms counted at the request's largest impact.

With --world (and --world-of-others), only the world-margin probe: a request's best cosine to the
registry minus its best cosine to a corpus of other tools, as a share of the registry's calibration
requests, mixed into the confidence with a weight chosen held out (see World). It also prints the
shares alone under the same protocol (weight 0), and the oracle at weight 0 and at 0.3, so that a
gain held out can be told from a move along the same trade-off. --all-sets adds the four datasets
to the folds (kept only, as research/eval/lodo pools them).

The shares mirror research/eval/lodo (imported, with its hub correction and the languages' second
opinion unless --no-languages), dense weight 0.7 and noise quantile 0.25 (the shipped defaults). Research only: nothing here is used by toolrag. Needs numpy,
onnxruntime and tokenizers (the venv of research/training/train-model has them). BENCHMARKS.md, "Abstain".
"""
from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the other probes
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))  # train_model
from train_model import ROOT, tool_texts  # noqa: E402  (the text toolrag embeds, one dump)

SETS = ["golden", "mcp_dev", "mcp_ref", "mcp_pypi"]
# With --all-sets, the four datasets join the world probe's folds as research/eval/lodo pools them: they
# have no out-of-scope requests, so they only hold the pooled kept share at 95%.
DATASETS = ["bfcl", "bfcl_multiturn", "apibench", "seal_tools"]
W, Q0 = 0.7, 0.25
STOP = set("a an the to of in on for and or with my me i you your please can could would this that it is "
           "are be by from at as do does what how which all any some into about show get".split())


def load_lodo():
    loader = importlib.machinery.SourceFileLoader("lodo", str(ROOT / "research" / "eval" / "lodo"))
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


def ensure_data(lodo, lists: Path, names: list[str]) -> None:
    """Each set's tools and requests in peers.py's layout under `lists`/data (what `research/eval/lodo
    --peers` writes; a run without --peers leaves only the lists), made with the release binary
    where missing."""
    lodo.WORK = lists
    binary = ROOT / "target" / "release" / "toolrag"
    for name in names:
        if not (lists / "data" / name / "tools.jsonl").exists():
            registry, queries = lodo.sets()[name]
            lodo.peer_data(name, registry, queries, binary)


def labelled_set(lodo, lists: Path, name: str):
    """research/eval/lodo's LabelledSet for `name`, from the data and lists of a `research/eval/lodo` run."""
    return lodo.LabelledSet(name, lists / "data" / name / "queries.jsonl", lists / "lists" / f"{name}.jsonl",
                            lists / "lists" / f"{name}.background.jsonl")


def rows_of(lodo, s, tokens: Tokens | None, texts: dict) -> list[dict]:
    """One row per request of the LabelledSet `s`, in its order: the request's id, kind, each
    confidence with its agreement, and its token coverage (0 without `tokens`)."""
    bg = {v: sorted(bound(r, v) for r in s.cal.bg.values()) for v in (False, True)}
    out = []
    for q in s.queries:
        r = s.rows[str(q["id"])]
        sl, sd = lodo.shares(s.cal, r)
        agree = bool(r["lexical"]) and bool(r["dense"]) and r["lexical"][0][0] == r["dense"][0][0]
        js = lodo.judgements(s, r, W)
        row = {"id": str(q["id"]), "kind": "none" if q in s.none else "ans", "shares": lodo.best(js),
               "judgements": js}
        for key, share in (("bound", lodo.ecdf(bg[False], bound(r, False))),
                           ("bound+unknown", lodo.ecdf(bg[True], bound(r, True)))):
            row[key] = ((1 - W) * share + W * sd, agree and share > lodo.AGREEMENT and sd > lodo.AGREEMENT)
        fused = lodo.calibrated(s.cal, r, W, Q0)
        row["coverage"] = tokens.coverage(q["query"], texts[s.tools[fused[0][0]]]) if tokens and fused else 0.0
        out.append(row)
    return out


def tally(rows: list[dict], navigate) -> tuple[int, int, int, int]:
    """(answerable kept, answerable, out-of-scope abstained, out-of-scope) for navigate(row)."""
    k = na = ab = nn = 0
    for r in rows:
        nav = navigate(r)
        if r["kind"] == "ans":
            na, k = na + 1, k + nav
        else:
            nn, ab = nn + 1, ab + (not nav)
    return k, na, ab, nn


def decide(rows, key, t, u):
    return tally(rows, lambda r: (r[key][1] or r[key][0] >= t) and r["coverage"] >= u)


def choose_held_out(lodo, data: dict, counts, outer, inner) -> dict:
    """Each set held out: the pair (a from `outer`, b from `inner`, tried in that order) for which
    counts(rows, a, b) abstains on the most out-of-scope requests of the other sets at 95% pooled
    kept; {set: (a, b, kept, abstained)} with the held-out set's own figures."""
    out = {}
    for held in data:
        best = None
        for a in outer:
            for b in inner:
                tot = [sum(x) for x in zip(*(counts(data[n], a, b) for n in data if n != held))]
                if tot[0] / tot[1] >= lodo.KEPT and (best is None or tot[2] / tot[3] > best[0]):
                    best = (tot[2] / tot[3], a, b)
        _, a, b = best
        k, na, ab, nn = counts(data[held], a, b)
        out[held] = (a, b, round(k / na, 3), round(ab / nn, 3) if nn else None)
    return out


def held_out(lodo, data: dict, key: str, us: list[float]) -> dict:
    """Each set held out: the threshold `t` on the confidence in `key` and the floor `u` on the
    rows' "coverage" (from `us`, whose first entry means no floor) that abstain on the most
    out-of-scope requests of the other sets at 95% pooled kept; the held-out set's figures."""
    res = choose_held_out(lodo, data, lambda rows, t, u: decide(rows, key, t, u),
                          np.arange(0, 1.0001, 0.01), us)
    return {n: {"t": round(float(t), 2), "coverage_floor": None if u == us[0] else round(float(u), 2),
                "kept": kept, "abstained": abst} for n, (t, u, kept, abst) in res.items()}


class World:
    """The world-margin probe: a request's best cosine to the registry minus its best cosine to a
    corpus of other tools (the tools of the four datasets of ../shared/data, which none of the four
    real sets shares, or a seeded sample of `sample` of them, and the tools of each `extra`
    registry), put on a scale by the registry's own calibration requests (the share of them whose
    margin is below the request's)."""

    def __init__(self, lodo, model: Path, sample: int, extra: list[Path], seed: int = 42):
        import random
        from train_model import DATA, DATASETS, ort_embedder
        self.embed = ort_embedder(model / "model.onnx", model / "tokenizer.json", 2)
        texts = [t["text"] for ds in DATASETS for t in tool_texts(DATA / ds / "tools.jsonl").values()]
        if sample < 0:
            texts = []
        elif sample and sample < len(texts):
            texts = random.Random(seed).sample(texts, sample)
        texts += [t["text"] for registry in extra for t in tool_texts(registry).values()]
        self.world = np.stack([self.embed(t) for t in texts])
        # The calibration requests of each language ("" for English), as toolrag measures them.
        self.cals = {code: np.stack([self.embed(c.strip()) for c in open(path) if c.strip()])
                     for code, path in lodo.calibration_requests().items()}
        self.registries: dict[str, np.ndarray] = {}

    def registry(self, lists: Path, name: str) -> np.ndarray:
        if name not in self.registries:
            texts = tool_texts(lists / "data" / name / "tools.jsonl")
            self.registries[name] = np.stack([self.embed(t["text"]) for t in texts.values()])
        return self.registries[name]

    def shares(self, lists: Path, name: str, queries: list[dict], others: list[str]) -> dict[str, dict]:
        """{query id: {language code: world share}} for `queries`, the set's requests, against the
        calibration requests of each language ("" for English); the registries of `others` join
        the world (never the set's own)."""
        registry = self.registry(lists, name)
        world = np.concatenate([self.world] + [self.registry(lists, o) for o in others if o != name])

        def margins(vecs: np.ndarray) -> np.ndarray:
            return (vecs @ registry.T).max(1) - (vecs @ world.T).max(1)

        cals = {code: np.sort(margins(v)) for code, v in self.cals.items()}
        m = margins(np.stack([self.embed(q["query"]) for q in queries]))
        return {str(q["id"]): {code: float(np.searchsorted(cal, x, side="left") / len(cal))
                               for code, cal in cals.items()} for q, x in zip(queries, m)}


def world_counts(lodo, rows: list[dict], w: float, t: float, world_evidence: bool) -> tuple[int, int, int, int]:
    """(answerable kept, answerable, out-of-scope abstained, out-of-scope) when the confidence is
    (1 - w) x the shares + w x the world share and the threshold is t, for the English
    calibration or the request's language's (either navigating, as toolrag decides)."""
    def navigate(r: dict) -> bool:
        for code, c, agree in r["judgements"]:
            world = r["world"][code]
            agree = agree and (not world_evidence or world > lodo.AGREEMENT)
            if agree or (1 - w) * c + w * world >= t:
                return True
        return False
    return tally(rows, navigate)


def world_oracle(lodo, rows: list[dict], world_evidence: bool, ws=tuple(np.arange(0, 1.0001, 0.1))) -> float | None:
    """The most out-of-scope requests abstained with the weight (from `ws`) and threshold chosen
    on the set itself at 95% kept: an upper bound for the world share and the shares together
    (None for a set without out-of-scope requests)."""
    if not any(r["kind"] == "none" for r in rows):
        return None
    best = 0.0
    for w in ws:
        for t in np.arange(0, 1.0001, 0.005):
            k, na, ab, nn = world_counts(lodo, rows, w, t, world_evidence)
            if k / na >= lodo.KEPT:
                best = max(best, ab / nn)
    return best


def world_held_out(lodo, data: dict, world_evidence: bool = False, ws=tuple(np.arange(0, 0.91, 0.1))) -> dict:
    """Each set held out: the world share's weight in the confidence (from `ws`, 0 to 0.9) and
    the threshold chosen on the other sets at 95% pooled kept, agreement still navigating (with
    `world_evidence`, only when the world share is above the median calibration request too).
    With `ws` = (0,) it is the shares alone under the same protocol."""
    res = choose_held_out(lodo, data, lambda rows, w, t: world_counts(lodo, rows, w, t, world_evidence),
                          ws, np.arange(0, 1.0001, 0.01))
    return {n: {"w": round(float(w), 1), "t": round(float(t), 2), "kept": kept, "abstained": abst}
            for n, (w, t, kept, abst) in res.items()}


def folds(res: dict, detail) -> str:
    """One line of held-out figures: "set kept/abstained (detail)" for each set ("-" abstained
    for a set without out-of-scope requests), and the mean over the four real sets."""
    def ab(v):
        return "-" if v["abstained"] is None else f"{v['abstained']:.3f}"
    real = [v for n, v in res.items() if n in SETS]
    mean = (f"  mean of the real sets {np.mean([v['kept'] for v in real]):.3f}/"
            f"{np.mean([v['abstained'] for v in real]):.3f}")
    return "  ".join(f"{n} {v['kept']:.3f}/{ab(v)} ({detail(v)})" for n, v in res.items()) + mean


def auc(pos: list[float], neg: list[float]) -> float:
    """ROC AUC: the chance an answerable request scores above an out-of-scope one (ties half)."""
    p, n = np.array(pos)[:, None], np.array(neg)[None, :]
    return float((p > n).mean() + 0.5 * (p == n).mean())


def auc_of(rows: list[dict], value) -> float:
    """ROC AUC of the answerable requests over the out-of-scope ones, for value(row)."""
    return auc([value(r) for r in rows if r["kind"] == "ans"], [value(r) for r in rows if r["kind"] == "none"])


def floor_report(lodo, data: dict, keys: dict[str, str], floors: list[float], label: str = "") -> None:
    """For a score each row carries under each key of `keys` ({key: what it is}): per set, the
    ROC AUC of the shares and of each score; then, per score, the held-out decision with a floor
    on it beside the shares (the coverage slot of `decide`; `floors[0]` means none), agreement
    passing the floor or held to it too. The verifier and metric probes report through this."""
    for name, rows in data.items():
        print(f"{label}{name}: AUC answerable over out-of-scope: shares {auc_of(rows, lambda r: r['shares'][0]):.3f}, "
              + ", ".join(f"{what} {auc_of(rows, lambda r: r[key]):.3f}" for key, what in keys.items()))
    for key, what in keys.items():
        for agreement_wins in (True, False):
            for rows in data.values():
                for r in rows:
                    r["coverage"] = 99.0 if agreement_wins and r["shares"][1] else r[key]
            res = held_out(lodo, data, "shares", floors)
            print(f"{label}held out, floor on {what}{'' if agreement_wins else ' over agreement too'}: "
                  + folds(res, lambda v: f"t {v['t']}, floor {v['coverage_floor']}"))


def world_probe(args, lodo) -> None:
    """--world: per world size, each set's AUC and the held-out decisions (see World)."""
    for n in args.world or [0]:
        world = World(lodo, args.model, -1 if args.world_without_datasets else n, args.world_extra)
        data = {}
        for name in (DATASETS + SETS if args.all_sets else SETS):
            s = labelled_set(lodo, args.lists, name)
            shares = world.shares(args.lists, name, s.queries, SETS if args.world_of_others else [])
            rows = rows_of(lodo, s, None, {})
            for row in rows:
                row["world"] = shares[row["id"]]
            data[name] = rows
        print(f"world of {len(world.world)} tools" + (", and the other real sets' registries"
                                                    if args.world_of_others else ""))
        for name, rows in data.items():
            if not any(r["kind"] == "none" for r in rows):
                continue  # a dataset: no out-of-scope requests, no AUC
            # the best judgement of the shares; the English world share
            print(f"  {name}: AUC answerable over out-of-scope: shares "
                  f"{auc_of(rows, lambda r: r['shares'][0]):.3f}, world share {auc_of(rows, lambda r: r['world']['']):.3f}")
        def oracles(evidence: bool, ws) -> str:
            return "  ".join(f"{n} {o:.3f}" for n, rows in data.items()
                             if (o := world_oracle(lodo, rows, evidence, ws)) is not None)
        others = "the other seven" if args.all_sets else "the other three"
        res = world_held_out(lodo, data, False, (0.0,))
        line = folds(res, lambda v: "t " + str(v["t"]))
        print(f"  the shares alone, same protocol (weight 0): held out {line}")
        print(f"  oracle at weight 0: {oracles(False, (0.0,))}")
        print(f"  oracle at weight 0.3: {oracles(False, (0.3,))}")
        for label, evidence in (("", False), (", agreement needs the world share above the median", True)):
            print(f"  oracle (weight and threshold on the set itself, at least 95% kept{label}): "
                  + oracles(evidence, tuple(np.arange(0, 1.0001, 0.1))))
            res = world_held_out(lodo, data, evidence)
            print(f"  held out (kept/abstained, weight and threshold from {others}{label}): "
                  + folds(res, lambda v: f"w {v['w']}, t {v['t']}"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lists", type=Path, default=ROOT / "target" / "lodo-minilm-tools")
    ap.add_argument("--model", type=Path, default=ROOT / "models" / "minilm-tools")
    ap.add_argument("--world", type=int, nargs="*", metavar="N",
                    help="only the world-margin probe, with the whole corpus of other tools (no N, "
                         "or 0) or a seeded sample of N of them per run")
    ap.add_argument("--world-of-others", action="store_true",
                    help="with --world: the other real sets' registries join each held-out set's world")
    ap.add_argument("--world-extra", type=Path, action="append", default=[], metavar="REGISTRY",
                    help="with --world: a registry (file or folder toolrag reads) whose tools join the world")
    ap.add_argument("--world-without-datasets", action="store_true",
                    help="with --world: the dataset tools stay out of the world (only --world-extra "
                         "and --world-of-others make it)")
    ap.add_argument("--all-sets", action="store_true",
                    help="with --world: the four datasets join the folds (kept only), as in research/eval/lodo")
    ap.add_argument("--shares", action="store_true",
                    help="only the shares: each set's oracle and ROC AUC, and the held-out folds "
                         "(seconds; to compare two models' lists)")
    ap.add_argument("--no-languages", action="store_true",
                    help="judge every request against the English calibration requests only, as "
                         "toolrag did before languages were calibrated (the figures of BENCHMARKS.md "
                         "measured before 2026-12-03 10:00 UTC)")
    args = ap.parse_args()
    lodo = load_lodo()
    lodo.LANGUAGES = not args.no_languages
    ensure_data(lodo, args.lists, DATASETS + SETS if args.all_sets else SETS)
    if args.world is not None:
        world_probe(args, lodo)
        return 0
    tokens = None if args.shares else Tokens(args.model)
    data = {}
    for name in SETS:
        texts = {i: t["text"] for i, t in tool_texts(args.lists / "data" / name / "tools.jsonl").items()}
        data[name] = rows_of(lodo, labelled_set(lodo, args.lists, name), tokens, texts)
    print("oracle (threshold on the set itself, exactly 95% kept): out-of-scope abstained; ROC AUC of the shares")
    for name, rows in data.items():
        ans = sorted((1.0 if r["shares"][1] else 0.0) + r["shares"][0] for r in rows if r["kind"] == "ans")
        t = ans[int(len(ans) * (1 - lodo.KEPT))]
        none = [(1.0 if r["shares"][1] else 0.0) + r["shares"][0] for r in rows if r["kind"] == "none"]
        print(f"  {name}: {np.mean([x < t for x in none]):.3f}  AUC {auc_of(rows, lambda r: r['shares'][0]):.3f}")
    if args.shares:
        print("shares, held out: " + folds(held_out(lodo, data, "shares", [-1.0]), lambda v: f"t {v['t']}"))
        return 0
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
