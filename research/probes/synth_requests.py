#!/usr/bin/env python3
"""Index-time request synthesis (issue 49, item 1): a local small instruct model writes example
requests for each tool of an MCP registry, from its name, description and parameters only.

  target/planner/venv/bin/python research/probes/synth_requests.py REGISTRY_DIR OUT_DIR
      [--model target/planner/models/qwen2.5-coder-0.5b.gguf] [--per-tool 5]

REGISTRY_DIR holds MCP `tools/list` dumps (`{"tools": [...]}` per server file), as
tests/golden/mcp-*/tools. OUT_DIR gets the same files with each tool's description followed by
an `Examples:` section of the written requests, which toolrag's docstring parser reads as the
tool's example requests (embedded as extra dense points), and OUT_DIR.synth.jsonl beside it (tool id, requests,
seconds). Requests already written for the same tool text are reused from OUT_DIR.synth.jsonl.
Greedy decoding (temperature 0), so a run is repeatable. Research only.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROMPT = """Tool name: {name}
Description: {description}
Parameters: {params}

Write {n} requests a user might type that need exactly this tool."""
SYSTEM = ("You write the requests that users type to an AI assistant. Plain everyday English, as "
          "people really write: short and long, casual and precise, with concrete made-up values. "
          "Never name the tool or its parameters. One request per line, no numbering, no quotes, "
          "nothing else.")
# One worked example, as a previous turn, so that a small model sees the form of the answer.
SHOT_TOOL = PROMPT.format(name="get_forecast", description="The weather forecast for a place and day.",
                          params="location, date, units", n=5)
SHOT_ANSWER = """will it rain in Lyon tomorrow?
what's the weather like this weekend in Boston
do I need a jacket in Oslo on Friday
forecast for Kyoto on 12 March, in celsius please
is it going to be sunny at the beach in Nice on Sunday?"""


def params_of(schema: dict) -> str:
    props = (schema or {}).get("properties") or {}
    return ", ".join(list(props)[:12]) or "(none)"


def clean(line: str) -> str:
    line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip().strip('"').strip("'").strip()
    return line


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("registry", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", type=Path, default=ROOT / "target/planner/models/qwen2.5-coder-1.5b.gguf")
    ap.add_argument("--per-tool", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    from llama_cpp import Llama

    llm = Llama(model_path=str(a.model), n_ctx=2048, n_threads=a.threads, verbose=False, seed=7)
    a.out.mkdir(parents=True, exist_ok=True)
    cache_path = a.out.parent / (a.out.name + ".synth.jsonl")
    cache = {}
    if cache_path.exists():
        for line in cache_path.read_text().splitlines():
            r = json.loads(line)
            cache[r["key"]] = r
    with open(cache_path, "a") as log:
        for f, doc, tools, ns in registry_files(a.registry):
            for t in tools:
                desc = (t.get("description") or "")[:800]
                prompt = PROMPT.format(name=t["name"], description=desc,
                                       params=params_of(t.get("inputSchema") or t.get("parameters")),
                                       n=a.per_tool)
                key = hashlib.sha256((str(a.model.name) + prompt).encode()).hexdigest()[:16]
                if key not in cache:
                    t0 = time.time()
                    out = llm.create_chat_completion(messages=[
                        {"role": "system", "content": SYSTEM},
                        {"role": "user", "content": SHOT_TOOL},
                        {"role": "assistant", "content": SHOT_ANSWER},
                        {"role": "user", "content": prompt}],
                                                     temperature=0.0, max_tokens=60 * a.per_tool)
                    text = out["choices"][0]["message"]["content"]
                    reqs = [clean(x) for x in text.splitlines()]
                    reqs = [r for r in reqs if 8 <= len(r) <= 200][: a.per_tool]
                    cache[key] = {"key": key, "file": f.name, "tool": t["name"],
                                  "id": t.get("id") or f"{ns}/{t['name']}", "requests": reqs,
                                  "seconds": round(time.time() - t0, 2)}
                    log.write(json.dumps(cache[key]) + "\n")
                    log.flush()
                    print(f"{f.name} {t['name']}: {len(reqs)} in {cache[key]['seconds']} s", file=sys.stderr)
                reqs = cache[key]["requests"]
                if reqs and doc is not None:
                    quoted = "\n".join('- "' + r.replace('"', "'") + '"' for r in reqs)
                    t["description"] = (t.get("description") or "").rstrip() + "\n\nExamples:\n" + quoted
            if doc is not None:
                (a.out / f.name).write_text(json.dumps(doc, indent=1, ensure_ascii=False))


def registry_files(registry: Path):
    """(file, document to rewrite or None, tools, namespace) per file: a folder of MCP
    `tools/list` dumps, or a dataset's tools.jsonl (one tool per line, with its own id)."""
    if registry.suffix == ".jsonl":
        tools = [json.loads(line) for line in registry.read_text().splitlines() if line.strip()]
        yield registry, None, tools, ""
        return
    for f in sorted(registry.glob("*.json")):
        doc = json.loads(f.read_text())
        yield f, doc, doc["tools"] if isinstance(doc, dict) else doc, f.stem


if __name__ == "__main__":
    main()
