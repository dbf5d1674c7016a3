#!/usr/bin/env python3
"""Train the second stage (issue 49): a small cross-encoder, the *reader*, that reads the request
and each of the first N fused tools together and reorders them.

  target/train-venv/bin/python research/training/train_reader.py train --train bfcl,bfcl_multiturn --out DIR
  target/train-venv/bin/python research/training/train_reader.py eval --reader DIR --sets apibench,seal_tools
  target/train-venv/bin/python research/training/train_reader.py check        # dequantisation check

Where the weights come from: the first `--layers` transformer layers of the shipped bi-encoder
models/minilm-tools, its int8 weights turned back into fp32 (so the reader starts from a model
that already knows tool requests), plus a linear head on the mean of the pair's token vectors.

What it learns from: the lists of `research/eval/lodo --model minilm-tools` (target/lodo-<tag>,
--lists): for every answerable request of the training sets whose right tool is in the first N of
the calibrated fused list (w 0.7, q0 0.25: the defaults every lodo fold chooses), the group of
those N tools in their fused order. A candidate whose text equals a right tool's counts as right
(BFCL registers some functions many times). Loss: minus the log of the softmax mass on the right
tools, over

    score(request, tool at rank i) = reader(request, tool) + bias[i] + a * cosine(request, tool)

so the reader learns what the first stage misses, not the whole ranking: bias and a are learnt
with it. The tool's text is what the index embeds for it (examples/tool_texts.rs).

It writes, in --out: model.fp32.onnx, model.onnx (onnxruntime quantize_dynamic, int8 per
channel), reader.json (N, layers, max tokens, the prior's bias and a, the training sets and
groups, the time) and the tokenizer files. `eval` reranks the held-out sets' lists with the
quantised model through onnxruntime and prints R@1, R@5 and the reader's time per request.
Research only until it ships: nothing here is run by `make test`.
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "research" / "training"))
from train_model import tool_texts  # noqa: E402

BI = ROOT / "models" / "minilm-tools"
W, Q0 = 0.7, 0.25
TOKENIZER_FILES = ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]


def log(msg: str) -> None:
    print(f"train-reader: {msg}", file=sys.stderr, flush=True)


def lodo_module():
    """research/eval/lodo as a module (name_phrases.load_lodo)."""
    sys.path.insert(0, str(ROOT / "research" / "eval"))
    from name_phrases import load_lodo

    return load_lodo()


# ------------------------------------------------------------------------------ weights

def dequantized_bert(layers: int):
    """A transformers BertModel with the first `layers` layers of models/minilm-tools, whose
    int8 weights (onnxruntime quantize_dynamic: MatMulInteger, DequantizeLinear for the
    embeddings) are turned back into fp32."""
    import onnx
    import torch
    from onnx import numpy_helper
    from transformers import BertConfig, BertModel

    m = onnx.load(str(BI / "model.onnx"))
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}

    def deq(name: str) -> np.ndarray:
        q = inits[name + "_quantized"].astype(np.float32)
        zp = inits[name + "_zero_point"].astype(np.float32)
        return (q - zp) * inits[name + "_scale"]

    state: dict[str, np.ndarray] = {}
    for name, arr in inits.items():
        if name.startswith("m.") and not name.endswith(("_quantized", "_scale", "_zero_point")):
            state[name[2:]] = arr
    for emb in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        state[f"embeddings.{emb}.weight"] = deq(f"m.embeddings.{emb}.weight")
    for node in m.graph.node:
        if node.op_type != "MatMulInteger":
            continue
        # '/m/encoder/layer.0/attention/self/query/MatMul_output_0_output_quantized'
        path = node.output[0].split("/")[2:-1]  # encoder, layer.0, attention, self, query
        module = ".".join(path).replace("layer.", "layer.")
        wname = node.input[1][: -len("_quantized")]
        state[f"{module}.weight"] = deq(wname).T.copy()  # MatMul [in, out] -> Linear [out, in]
    cfg = BertConfig.from_pretrained(str(BI))
    cfg.num_hidden_layers = layers
    bert = BertModel(cfg, add_pooling_layer=False)
    own = bert.state_dict()
    load = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items() if k in own}
    missing = [k for k in own if k not in load and "position_ids" not in k]
    if missing:
        raise SystemExit(f"train-reader: weights missing from {BI / 'model.onnx'}: {missing[:5]}")
    bert.load_state_dict(load, strict=False)
    return bert


def check() -> None:
    """The dequantised 6-layer model against the shipped ONNX model: mean-pooled cosine."""
    import onnxruntime as ort
    import torch
    from tokenizers import Tokenizer

    bert = dequantized_bert(6).eval()
    tok = Tokenizer.from_file(str(BI / "tokenizer.json"))
    sess = ort.InferenceSession(str(BI / "model.onnx"), providers=["CPUExecutionProvider"])
    for text in ["list the files in my home folder", "create a jira ticket for the login bug"]:
        e = tok.encode(text)
        ids = np.array([e.ids], dtype=np.int64)
        mask = np.array([e.attention_mask], dtype=np.int64)
        tt = np.zeros_like(ids)
        a = sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})[0][0].mean(0)
        with torch.no_grad():
            b = bert(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                     token_type_ids=torch.from_numpy(tt)).last_hidden_state[0].mean(0).numpy()
        log(f"{text!r}: cosine {float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)):.4f}")


# ------------------------------------------------------------------------------ groups

class Sets:
    """The labelled sets' lists (lodo's dumps) and their tools' texts."""

    def __init__(self, lists: Path):
        self.lodo = lodo_module()
        self.paths = self.lodo.sets()
        self.lists = lists
        self._texts: dict[str, dict] = {}

    def texts(self, name: str) -> dict:
        if name not in self._texts:
            self._texts[name] = {k: v["text"] for k, v in tool_texts(self.paths[name][0]).items()}
        return self._texts[name]

    def labelled(self, name: str):
        return self.lodo.LabelledSet(name, self.paths[name][1], self.lists / "lists" / f"{name}.jsonl",
                                     self.lists / "lists" / f"{name}.background.jsonl")

    def groups(self, name: str, n: int) -> list[dict]:
        """One group per answerable request: the request, the first n fused tools (text, cosine),
        which of them are right, and the fused tools after them, to the tenth ("rest")."""
        s = self.labelled(name)
        texts = self.texts(name)
        out = []
        for q in s.answerable:
            r = s.rows[str(q["id"])]
            fused = self.lodo.calibrated(s.cal, r, W, Q0)
            cos = dict((o, c) for o, c in r["dense"])
            top = fused[:n]
            ids = [s.tools[o] for o, _ in top]
            right = {t for g in q["groups"] for t in g}
            right_texts = {texts.get(t) for t in right}
            labels = [1 if (i in right or texts.get(i) in right_texts) else 0 for i in ids]
            out.append({"query": q["query"], "ids": ids, "texts": [texts.get(i, i) for i in ids],
                        "cos": [float(cos.get(o, 0.0)) for o, _ in top], "labels": labels,
                        "q": q, "rest": [s.tools[o] for o, _ in fused[n:10]]})
        return out


# ------------------------------------------------------------------------------ model

def make_reader(layers: int, n: int):
    import torch

    class Reader(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = dequantized_bert(layers)
            self.head = torch.nn.Linear(384, 1)
            torch.nn.init.zeros_(self.head.weight)
            torch.nn.init.zeros_(self.head.bias)

        def forward(self, input_ids, attention_mask, token_type_ids):
            h = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            pooled = (h * m).sum(1) / m.sum(1).clamp(min=1.0)
            return self.head(pooled).squeeze(-1)

    reader = Reader()
    prior = {"bias": torch.nn.Parameter(torch.zeros(n)), "a": torch.nn.Parameter(torch.tensor(0.0))}
    return reader, prior


def pair_tokenizer(folder: Path, max_tokens: int):
    """The tokenizer of `folder` for (request, tool text) pairs: both cut, longest first, to
    `max_tokens` in all (as fastembed's TextRerank cuts them), a batch padded to its longest."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.enable_truncation(max_length=max_tokens, strategy="longest_first")
    tok.enable_padding()
    return tok


def encode(tok, query: str, texts: list[str]):
    enc = tok.encode_batch([(query, t) for t in texts])
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    tt = np.array([e.type_ids for e in enc], dtype=np.int64)
    return ids, mask, tt


def collect(sets: Sets, specs: list[str], n: int, rng: random.Random) -> list[dict]:
    """The training groups of `specs` ("name" or "name:most"): every answerable request whose
    right tool is among the first n fused, shuffled, at most `most` per set."""
    groups = []
    for spec in specs:
        name, _, most = spec.partition(":")
        gs = [g for g in sets.groups(name, n) if any(g["labels"]) and len(g["ids"]) == n]
        rng.shuffle(gs)
        gs = gs[: int(most)] if most else gs
        log(f"{name}: {len(gs)} groups")
        groups += gs
    rng.shuffle(groups)
    return groups


def fit(groups: list[dict], a):
    """The reader and its prior, trained on `groups` (see the module's text)."""
    import torch

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    tok = pair_tokenizer(BI, a.max_tokens)
    reader, prior = make_reader(a.layers, a.n)
    reader.train()
    opt = torch.optim.AdamW([
        {"params": reader.bert.parameters(), "lr": a.lr},
        {"params": reader.head.parameters(), "lr": a.lr * 20},
        {"params": list(prior.values()), "lr": 1e-2, "weight_decay": 0.0},
    ], weight_decay=0.01)
    steps = (len(groups) + a.batch - 1) // a.batch * a.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10)) * max(0.0, (steps - s) / steps))
    t0 = time.time()
    seen: list[float] = []
    step = 0
    for _ in range(a.epochs):
        for b in range(0, len(groups), a.batch):
            batch = groups[b: b + a.batch]
            ids, mask, tt = [], [], []
            for g in batch:
                i, m, t = encode(tok, g["query"], g["texts"])
                ids.append(i), mask.append(m), tt.append(t)
            width = max(x.shape[1] for x in ids)
            pad = lambda xs: np.concatenate([np.pad(x, ((0, 0), (0, width - x.shape[1]))) for x in xs])  # noqa: E731
            logits = reader(torch.from_numpy(pad(ids)), torch.from_numpy(pad(mask)), torch.from_numpy(pad(tt)))
            logits = logits.view(len(batch), a.n)
            cos = torch.tensor([g["cos"] for g in batch])
            total = logits + prior["bias"].unsqueeze(0) + prior["a"] * cos
            labels = torch.tensor([g["labels"] for g in batch], dtype=torch.bool)
            loss = (torch.logsumexp(total, dim=1)
                    - torch.logsumexp(total.masked_fill(~labels, -1e9), dim=1)).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(reader.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            seen.append(float(loss))
            if step % 25 == 0:
                el = time.time() - t0
                log(f"step {step}/{steps} loss {statistics.mean(seen[-25:]):.3f} "
                    f"({el / step:.2f} s/step, {el / 60:.1f} min)")
    return reader, prior, round((time.time() - t0) / 60, 1)


def save(reader, prior, out: Path, a, trained_on: list[str], groups: int, minutes: float) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out.mkdir(parents=True, exist_ok=True)
    export(reader, out / "model.fp32.onnx")
    quantize_dynamic(str(out / "model.fp32.onnx"), str(out / "model.onnx"),
                     weight_type=QuantType.QInt8, per_channel=True)
    (out / "model.fp32.onnx").unlink()
    for f in TOKENIZER_FILES:
        shutil.copy(BI / f, out / f)
    meta = {"n": a.n, "layers": a.layers, "max_tokens": a.max_tokens,
            "prior": {"bias": [float(x) for x in prior["bias"].detach()], "a": float(prior["a"].detach())},
            "trained_on": trained_on, "groups": groups, "epochs": a.epochs, "lr": a.lr,
            "batch": a.batch, "seed": a.seed, "minutes": minutes,
            "base": "models/minilm-tools, first layers, int8 weights turned back into fp32",
            "fusion": {"w": W, "q0": Q0}}
    (out / "reader.json").write_text(json.dumps(meta, indent=2) + "\n")
    log(f"wrote {out}: {json.dumps(meta['prior'])}")


def train(a) -> None:
    rng = random.Random(a.seed)
    specs = a.train.split(",")
    groups = collect(Sets(a.lists), specs, a.n, rng)
    reader, prior, minutes = fit(groups, a)
    save(reader, prior, a.out, a, specs, len(groups), minutes)


def export(reader, path: Path) -> None:
    import torch

    reader.eval()

    class Logits(torch.nn.Module):
        """The reader's score as fastembed's TextRerank reads it: `logits`, [batch, 1]."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids, attention_mask, token_type_ids).unsqueeze(-1)

    names = ["input_ids", "attention_mask", "token_type_ids"]
    x = tuple(torch.ones((2, 16), dtype=torch.int64) for _ in names)
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["logits"] = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(Logits(reader), x, str(path), input_names=names, output_names=["logits"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)


# ------------------------------------------------------------------------------ eval

class Scorer:
    """A trained reader, run by onnxruntime as the product runs it."""

    def __init__(self, folder: Path, threads: int):
        import onnxruntime as ort

        self.meta = json.loads((folder / "reader.json").read_text())
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(str(folder / "model.onnx"), opts, providers=["CPUExecutionProvider"])
        self.tok = pair_tokenizer(folder, self.meta["max_tokens"])

    def order(self, g: dict) -> tuple[list[int], float]:
        """The group's tools in the reader's order, and the seconds the model took."""
        ids, mask, tt = encode(self.tok, g["query"], g["texts"])
        t0 = time.perf_counter()
        s = self.sess.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": tt})[0]
        took = time.perf_counter() - t0
        s = s.reshape(len(g["ids"]))
        p = self.meta["prior"]
        total = [float(s[i]) + p["bias"][i] + p["a"] * g["cos"][i] for i in range(len(g["ids"]))]
        return sorted(range(len(g["ids"])), key=lambda i: (-total[i], i)), took


def score_groups(scorer: Scorer, groups: list[dict]) -> dict:
    sys.path.insert(0, str(ROOT.parent / "shared" / "eval"))
    import score  # type: ignore

    tot = {"base@1": 0.0, "base@5": 0.0, "reader@1": 0.0, "reader@5": 0.0}
    times = []
    for g in groups:
        order, took = scorer.order(g)
        times.append(took)
        base = g["ids"] + g["rest"]
        new = [g["ids"][i] for i in order] + g["rest"]
        mb = score.score_query(g["q"]["groups"], base)
        mn = score.score_query(g["q"]["groups"], new)
        tot["base@1"] += mb["recall@1"]
        tot["base@5"] += mb["recall@5"]
        tot["reader@1"] += mn["recall@1"]
        tot["reader@5"] += mn["recall@5"]
    k = max(1, len(groups))
    row = {m: round(v / k, 3) for m, v in tot.items()}
    row["reader_ms_p50"] = round(1000 * statistics.median(times), 2) if times else None
    return row


def evaluate(a) -> None:
    scorer = Scorer(a.reader, a.threads)
    sets = Sets(a.lists)
    out = {}
    for name in a.sets.split(","):
        out[name] = score_groups(scorer, sets.groups(name, scorer.meta["n"]))
        print(f"{name}: {out[name]}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=2) + "\n")


REAL = ["golden", "mcp_dev", "mcp_ref", "mcp_pypi", "mcp_extra"]
DATASETS = ["bfcl", "bfcl_multiturn", "apibench", "seal_tools"]
APART = {"mcp_blind"}  # as lodo: held out only, never trained on


def lodo(a) -> None:
    """One reader per held-out set, trained on every other labelled set (the real sets whole, the
    four datasets at most --cap groups each; never mcp_blind), scored on the held-out one."""
    sets = Sets(a.lists)
    cache: dict[str, list[dict]] = {}
    folds = a.folds.split(",") if a.folds else DATASETS + REAL + sorted(APART)
    rows = json.loads(a.json.read_text()) if a.json and a.json.exists() else {}
    for fold in folds:
        if fold in rows:
            log(f"{fold}: already in {a.json}")
            continue
        rng = random.Random(a.seed)
        specs = [s if s in REAL else f"{s}:{a.cap}" for s in DATASETS + REAL if s != fold]
        groups = []
        for spec in specs:
            name = spec.partition(":")[0]
            if name not in cache:
                cache[name] = collect(sets, [name], a.n, random.Random(a.seed))
            most = spec.partition(":")[2]
            groups += cache[name][: int(most)] if most else cache[name]
        rng.shuffle(groups)
        log(f"fold {fold}: {len(groups)} groups from {specs}")
        reader, prior, minutes = fit(groups, a)
        out = a.out / fold
        save(reader, prior, out, a, specs, len(groups), minutes)
        rows[fold] = score_groups(Scorer(out, a.threads), sets.groups(fold, a.n))
        rows[fold]["train_minutes"] = minutes
        print(f"{fold}: {rows[fold]}", flush=True)
        if a.json:
            a.json.write_text(json.dumps(rows, indent=2) + "\n")
    print("| held-out set | hybrid R@1 | reader R@1 | hybrid R@5 | reader R@5 | reader p50 ms |")
    print("|---|---|---|---|---|---|")
    for fold, r in rows.items():
        print(f"| {fold} | {r['base@1']:.3f} | {r['reader@1']:.3f} | {r['base@5']:.3f} | "
              f"{r['reader@5']:.3f} | {r['reader_ms_p50']} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="train a reader on some sets' lists")
    t.add_argument("--train", required=True, help="comma-separated lodo set names, each NAME or NAME:MOST")
    t.add_argument("--out", type=Path, required=True)
    lo = sub.add_parser("lodo", help="one reader per held-out set, trained on the others")
    lo.add_argument("--out", type=Path, default=ROOT / "target" / "reader" / "lodo")
    lo.add_argument("--folds", default="", help="comma-separated held-out sets (default: all ten)")
    lo.add_argument("--cap", type=int, default=250, help="groups per public dataset at most")
    lo.add_argument("--json", type=Path, help="the table as JSON; folds already in it are skipped")
    for p in (t, lo):
        p.add_argument("--layers", type=int, default=3)
        p.add_argument("--n", type=int, default=3, help="tools reordered (the first n fused)")
        p.add_argument("--max-tokens", type=int, default=64)
        p.add_argument("--batch", type=int, default=4, help="groups per step")
        p.add_argument("--epochs", type=int, default=2)
        p.add_argument("--lr", type=float, default=5e-5)
        p.add_argument("--seed", type=int, default=7)
    e = sub.add_parser("eval", help="rerank held-out sets with a trained reader")
    e.add_argument("--reader", type=Path, required=True)
    e.add_argument("--sets", required=True)
    e.add_argument("--json", type=Path)
    sub.add_parser("check", help="the dequantised weights against the shipped model")
    for p in (t, e, lo):
        p.add_argument("--lists", type=Path, default=ROOT / "target" / "lodo-fw1",
                       help="a research/eval/lodo work folder (default target/lodo-fw1)")
        p.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    {"train": train, "eval": evaluate, "lodo": lodo, "check": lambda _: check()}[a.cmd](a)


if __name__ == "__main__":
    main()
