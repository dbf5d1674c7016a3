#!/usr/bin/env python3
"""Carry a cosine threshold from one model to another by quantile (run with target/train-venv).

  target/train-venv/bin/python research/eval/model_thresholds.py BASE_DIR OTHER_DIR [--threshold 0.8]

`confusable-tools` calls two tools confusable from a cosine of 0.8 on the published model. A
tuned model spreads cosines differently, so the same number would flag a different share of
tool pairs. This embeds the tool texts (exactly what toolrag embeds, examples/tool_texts.rs) of
several registries with both models, takes every pair of tools within each registry, finds the
share of pairs at or above the threshold on BASE, and prints the cosine on OTHER above which
the same share lies. No labels are used.

Registries: tools/, the MCP fixtures (tests/fixtures/mcp-reference, tests/golden/mcp-dev/tools,
tests/golden/mcp-pypi/tools), bfcl_multiturn and the first 600 tools of bfcl (near-duplicates
included: they are what the rule is for).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))  # train_model
from train_model import DATA, ROOT, ort_embedder, tool_texts  # noqa: E402  (one embedder, one text dump)


def texts(registry: Path, limit: int | None = None) -> list[str]:
    rows = [t["text"] for t in tool_texts(registry).values()]
    return rows[:limit] if limit else rows


def embed(model_dir: Path, docs: list[str]) -> np.ndarray:
    e = ort_embedder(model_dir / "model.onnx", model_dir / "tokenizer.json", threads=2)
    return np.stack([e(t) for t in docs])


def pair_cosines(m: np.ndarray) -> np.ndarray:
    s = m @ m.T
    return s[np.triu_indices(len(m), k=1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", type=Path)
    ap.add_argument("other", type=Path)
    ap.add_argument("--threshold", type=float, default=0.8)
    a = ap.parse_args()
    registries = [(ROOT / "tools", None), (ROOT / "tests/fixtures/mcp-reference", None),
                  (ROOT / "tests/golden/mcp-dev/tools", None), (ROOT / "tests/golden/mcp-pypi/tools", None),
                  (DATA / "bfcl_multiturn/tools.jsonl", None), (DATA / "bfcl/tools.jsonl", 600)]
    base, other = [], []
    for reg, limit in registries:
        docs = texts(reg, limit)
        base.append(pair_cosines(embed(a.base, docs)))
        other.append(pair_cosines(embed(a.other, docs)))
    b, o = np.concatenate(base), np.concatenate(other)
    share = float((b >= a.threshold).mean())
    mapped = float(np.quantile(o, 1.0 - share))
    print(json.dumps({"pairs": int(len(b)), "threshold": a.threshold, "share_at_or_above": round(share, 5),
                      "mapped_threshold": round(mapped, 3),
                      "base_median": round(float(np.median(b)), 3), "other_median": round(float(np.median(o)), 3)}))


if __name__ == "__main__":
    main()
