"""What a cross-encoder reranker over the top k would cost at query time (issue 37, item 1).

A MiniLM cross-encoder runs the same transformer as the shipped bi-encoder (models/minilm-tools,
integer-quantised), plus a one-unit head. So this times the shipped model's forward pass on k
(request, "name: description") pairs of the reference servers' tools, against the one short
request that hybrid search embeds today. Same runtime (ONNX Runtime, 2 intra-op threads).

Usage (a venv with onnxruntime, tokenizers and numpy):
  python research/probes/xenc_latency.py
"""

from __future__ import annotations

import glob
import json
import statistics
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parent.parent.parent
MODEL = ROOT / "models" / "minilm-tools"
REQUEST = "show me the last five commits on the release branch"


def main() -> None:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(str(MODEL / "model.onnx"), options, providers=["CPUExecutionProvider"])
    inputs = {i.name for i in session.get_inputs()}
    tok = Tokenizer.from_file(str(MODEL / "tokenizer.json"))
    tools = []
    for p in sorted(glob.glob(str(ROOT / "tests" / "fixtures" / "mcp-reference" / "*.json"))):
        doc = json.load(open(p))
        for t in doc.get("tools", []) if isinstance(doc, dict) else doc:
            tools.append(f"{t['name']}: {t.get('description', '')}")

    def forward(batch: list, max_len: int) -> tuple[int, int]:
        tok.enable_truncation(max_len)
        tok.enable_padding()
        enc = tok.encode_batch(batch)
        feed = {
            "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
        }
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.array([e.type_ids for e in enc], dtype=np.int64)
        session.run(None, feed)
        return feed["input_ids"].shape

    def p50(batch: list, max_len: int, runs: int = 60) -> tuple[float, tuple[int, int]]:
        shape = forward(batch, max_len)
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            forward(batch, max_len)
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1000, shape

    alone, shape = p50([REQUEST], 128)
    print("| what runs | batch (pairs x tokens) | p50 ms | x the request alone |")
    print("|---|---|---:|---:|")
    print(f"| the request alone (today's query embedding) | {shape[0]} x {shape[1]} | {alone:.2f} | 1.0 |")
    for k in (3, 5, 10):
        for max_len in (64, 128):
            ms, shape = p50([(REQUEST, t) for t in tools[:k]], max_len)
            print(
                f"| cross-encoder over the top {k}, pairs cut at {max_len} tokens | "
                f"{shape[0]} x {shape[1]} | {ms:.2f} | {ms / alone:.1f} |"
            )


if __name__ == "__main__":
    main()
