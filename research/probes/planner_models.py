"""Which small plan model to put in `make test` and the benchmark (issue 46, item 4).

For each model that scripts/fetch-planner installs, this starts scripts/planner-server, waits
for its base URL (that wait is the load time), and sends the OpenAI-compatible
`POST /v1/chat/completions` the plan client sends: a short system prompt, the request and five
candidate handles, and a `response_format` whose schema asks only for the judgment fields
(decision, steps, citedNodeIds, abstainReason) with two branches (NAVIGATE: >= 1 step and
citation, null reason; ABSTAIN: no step, no citation, a reason) and every handle an `enum` of
the offered ones.

Requests: 15 `single`/`natural` requests of tests/golden/mcp-ref (spread over the six servers,
fixed seed), each with its right tool and four others of tests/fixtures/mcp-reference (two of
the same server when it has them, so the choice is not trivial), shuffled; plus 3 of its
out-of-scope requests, whose five candidates are drawn at random and none fits.

Per model it prints: load time, p50/p95 seconds an answer, the share of answers that parse
and satisfy the schema, the share citing the right tool (answerable requests), the share that
ABSTAIN on the out-of-scope ones. `--forms` first sends one request with each
`response_format` form and prints the HTTP status and whether the answer met the schema.

Stdlib only (urllib). Usage, after scripts/fetch-planner:
  python3 research/probes/planner_models.py [--models gemma3-270m,qwen2.5-coder-1.5b] [--forms]
      [--bounded] [--max-tokens 300] [--json OUT]
`--bounded` adds caps to the schema (at most 3 steps and 2 citations, rationale <= 120 characters):
llama-cpp-python checks the grammar against the whole vocabulary at every token, so a small
model that lists every candidate at length costs minutes an answer.
"""

from __future__ import annotations

import argparse
import glob
import json
import random
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SEED = 46
SYSTEM = """You are a plan model. A user's request and a set of candidate tool handles are given. \
You see only each handle and a short note about the tool, never its output.
Answer with one JSON object with exactly these fields:
- "decision": "NAVIGATE" when at least one offered handle can serve the request, "ABSTAIN" when none can.
- "steps": for NAVIGATE, the ordered actions over offered handles: RETRIEVE a handle to read its card, \
EXPAND it to see related handles, CITE the handle that serves the request. For ABSTAIN, an empty list.
- "citedNodeIds": for NAVIGATE, the handles that serve the request. For ABSTAIN, an empty list.
- "abstainReason": for NAVIGATE, null. For ABSTAIN, one sentence saying why no offered handle fits.
Cite only handles from the candidates, written exactly as offered. \
If no offered handle can do what the request asks, ABSTAIN with a reason rather than cite a tool that does something else."""


def load_tools() -> dict[str, str]:
    tools = {}
    for p in sorted(glob.glob(str(ROOT / "tests" / "fixtures" / "mcp-reference" / "*.json"))):
        stem = Path(p).stem
        for t in json.load(open(p))["tools"]:
            desc = " ".join((t.get("description") or "").split())
            tools[f"{stem}/{t['name']}"] = desc[:240]
    return tools


def load_requests(tools: dict[str, str]) -> list[dict]:
    rows = [json.loads(line) for line in open(ROOT / "tests" / "golden" / "mcp-ref" / "queries.jsonl")]
    rng = random.Random(SEED)
    single = [r for r in rows if r["kind"] == "single" and r.get("subset") == "natural"]
    by_server: dict[str, list[dict]] = {}
    for r in single:
        by_server.setdefault(r["relevant"][0].split("/")[0], []).append(r)
    picked: list[dict] = []
    servers = sorted(by_server)
    for s in servers:  # round robin over servers, a random request each time
        rng.shuffle(by_server[s])
    while len(picked) < 15:
        for s in servers:
            if by_server[s] and len(picked) < 15:
                picked.append(by_server[s].pop())
    oos = [r for r in rows if r["kind"] == "none" and r.get("subset") == "out-of-scope"]
    rng.shuffle(oos)
    picked += oos[:3]
    names = sorted(tools)
    out = []
    for r in picked:
        right = r["relevant"][0] if r["relevant"] else None
        if right:
            server = right.split("/")[0]
            same = [t for t in names if t.startswith(server + "/") and t != right]
            other = [t for t in names if not t.startswith(server + "/")]
            rng.shuffle(same)
            rng.shuffle(other)
            cands = [right] + same[:2]
            cands += other[: 5 - len(cands)]
        else:
            cands = rng.sample(names, 5)
        rng.shuffle(cands)
        out.append({"id": r["id"], "query": r["query"], "right": right, "candidates": cands})
    return out


def handle(tool: str) -> str:
    return f"tool://{tool}"


def judgment_schema(handles: list[str], bounded: bool = False) -> dict:
    step = {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["RETRIEVE", "EXPAND", "CITE"]},
            "nodeId": {"type": "string", "enum": handles},
            "rationale": {"type": "string"},
        },
        "required": ["action", "nodeId", "rationale"],
        "additionalProperties": False,
    }
    navigate = {
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["NAVIGATE"]},
            "steps": {"type": "array", "items": step, "minItems": 1},
            "citedNodeIds": {"type": "array", "items": {"type": "string", "enum": handles}, "minItems": 1},
            "abstainReason": {"type": "null"},
        },
        "required": ["decision", "steps", "citedNodeIds", "abstainReason"],
        "additionalProperties": False,
    }
    abstain = {
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["ABSTAIN"]},
            "steps": {"type": "array", "items": step, "maxItems": 0},
            "citedNodeIds": {"type": "array", "items": {"type": "string", "enum": handles}, "maxItems": 0},
            "abstainReason": {"type": "string", "minLength": 1},
        },
        "required": ["decision", "steps", "citedNodeIds", "abstainReason"],
        "additionalProperties": False,
    }
    if bounded:  # caps that keep a small model from listing every candidate at length
        step["properties"]["rationale"]["maxLength"] = 120
        navigate["properties"]["steps"]["maxItems"] = 3
        navigate["properties"]["citedNodeIds"]["maxItems"] = 2
        abstain["properties"]["abstainReason"]["maxLength"] = 200
    return {"anyOf": [navigate, abstain]}


def satisfies(plan, handles: list[str]) -> bool:
    """This one schema, checked by hand (no jsonschema in the stdlib)."""
    if not isinstance(plan, dict) or set(plan) != {"decision", "steps", "citedNodeIds", "abstainReason"}:
        return False
    steps, cited, reason = plan["steps"], plan["citedNodeIds"], plan["abstainReason"]
    if not isinstance(steps, list) or not isinstance(cited, list):
        return False
    for s in steps:
        if not isinstance(s, dict) or set(s) != {"action", "nodeId", "rationale"}:
            return False
        if s["action"] not in ("RETRIEVE", "EXPAND", "CITE") or s["nodeId"] not in handles:
            return False
        if not isinstance(s["rationale"], str):
            return False
    if any(c not in handles for c in cited):
        return False
    if plan["decision"] == "NAVIGATE":
        return len(steps) >= 1 and len(cited) >= 1 and reason is None
    if plan["decision"] == "ABSTAIN":
        return not steps and not cited and isinstance(reason, str) and len(reason) >= 1
    return False


def messages(req: dict, tools: dict[str, str]) -> list[dict]:
    cands = [
        {"nodeId": handle(t), "nodeKind": "ARTIFACT", "label": "DECLARED", "note": tools[t]}
        for t in req["candidates"]
    ]
    user = f"Request: {req['query']}\n\nCandidates:\n{json.dumps(cands, indent=1)}"
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def response_format(form: str, schema: dict):
    if form == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "khipu_judgment", "strict": True, "schema": schema}}
    if form == "json_schema_bare":  # the form issue 46 saw answered with HTTP 500
        return {"type": "json_schema", "schema": schema}
    if form == "json_object_schema":
        return {"type": "json_object", "schema": schema}
    if form == "json_object":
        return {"type": "json_object"}
    return None


def post(url: str, body: dict, timeout: float = 300) -> tuple[int, dict | str, float]:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url + "/chat/completions", data=data, headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            out = json.loads(resp.read())
            return resp.status, out, time.perf_counter() - t0
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")[:300], time.perf_counter() - t0


def ask(url: str, model: str, req: dict, tools: dict[str, str], form: str, max_tokens: int,
        bounded: bool = False) -> dict:
    handles = [handle(t) for t in req["candidates"]]
    body = {"model": model, "messages": messages(req, tools), "temperature": 0, "max_tokens": max_tokens}
    rf = response_format(form, judgment_schema(handles, bounded))
    if rf is not None:
        body["response_format"] = rf
    status, out, secs = post(url, body)
    row = {"id": req["id"], "status": status, "secs": round(secs, 2), "form": form, "parses": False, "valid": False}
    if req["right"]:  # an answer that does not parse chose nothing
        row["right_cited"] = row["only_right"] = False
    else:
        row["abstained"] = False
    if status != 200:
        row["error"] = out
        return row
    content = out["choices"][0]["message"]["content"] or ""
    row["content"] = content
    row["usage"] = out.get("usage")
    try:
        plan = json.loads(content)
    except ValueError:
        row["parses"] = False
        return row
    row["parses"] = True
    row["valid"] = satisfies(plan, handles)
    decision = plan.get("decision") if isinstance(plan, dict) else None
    cited = plan.get("citedNodeIds") if isinstance(plan, dict) else None
    row["decision"] = decision
    if req["right"]:
        row["right_cited"] = decision == "NAVIGATE" and isinstance(cited, list) and handle(req["right"]) in cited
        row["only_right"] = row["right_cited"] and len(cited) == 1
    else:
        row["abstained"] = decision == "ABSTAIN"
    return row


def start(model: str) -> tuple[subprocess.Popen, str, float]:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [str(ROOT / "scripts" / "planner-server"), "--model", model],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline().strip()
    if not line.startswith("http"):
        proc.kill()
        sys.exit(f"planner-server for {model} printed {line!r}")
    return proc, line, time.perf_counter() - t0


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gemma3-270m,qwen2.5-coder-0.5b,qwen2.5-coder-1.5b")
    ap.add_argument("--form", default="json_object_schema")
    ap.add_argument("--forms", action="store_true")
    ap.add_argument("--max-tokens", type=int, default=300)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--bounded", action="store_true", help="cap steps (3), citations (2) and string lengths")
    ap.add_argument("--json")
    args = ap.parse_args()
    tools = load_tools()
    reqs = load_requests(tools)
    if args.limit:
        reqs = reqs[: args.limit]
    report = {}
    for model in args.models.split(","):
        proc, url, load = start(model)
        print(f"\n## {model}: {url}, ready in {load:.1f} s", flush=True)
        try:
            forms = {}
            if args.forms:
                for form in ["json_schema", "json_schema_bare", "json_object_schema", "json_object", "none"]:
                    row = ask(url, model, reqs[0], tools, form, args.max_tokens)
                    forms[form] = row
                    print(f"  form {form}: HTTP {row['status']} {row.get('secs')} s parses={row.get('parses')} "
                          f"valid={row.get('valid')} {str(row.get('error') or row.get('content'))[:160]!r}", flush=True)
            rows = []
            for req in reqs:
                row = ask(url, model, req, tools, args.form, args.max_tokens, args.bounded)
                rows.append(row)
                print(f"  {row['id']}: {row['secs']} s valid={row.get('valid')} decision={row.get('decision')} "
                      f"right={row.get('right_cited', row.get('abstained'))} "
                      f"toks={(row.get('usage') or {}).get('completion_tokens')} {str(row.get('content') or row.get('error'))[:200]!r}",
                      flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        secs = [r["secs"] for r in rows if r["status"] == 200]
        answerable = [r for r in rows if "right_cited" in r]
        oos = [r for r in rows if "abstained" in r]
        summary = {
            "load_s": round(load, 1),
            "p50_s": round(statistics.median(secs), 2) if secs else None,
            "p95_s": round(pct(secs, 0.95), 2) if secs else None,
            "valid": f"{sum(bool(r.get('valid')) for r in rows)}/{len(rows)}",
            "right_cited": f"{sum(r['right_cited'] for r in answerable)}/{len(answerable)}",
            "only_right": f"{sum(r['only_right'] for r in answerable)}/{len(answerable)}",
            "abstain_oos": f"{sum(r['abstained'] for r in oos)}/{len(oos)}",
            "navigate_answerable": f"{sum(r.get('decision') == 'NAVIGATE' for r in answerable)}/{len(answerable)}",
        }
        print(f"  summary {model}: {json.dumps(summary)}", flush=True)
        report[model] = {"summary": summary, "forms": forms, "rows": rows}
    print("\n| model | load s | p50 s | p95 s | valid | right tool cited | only right | ABSTAIN out-of-scope |")
    print("|---|---|---|---|---|---|---|---|")
    for m, r in report.items():
        s = r["summary"]
        print(f"| {m} | {s['load_s']} | {s['p50_s']} | {s['p95_s']} | {s['valid']} | {s['right_cited']} | "
              f"{s['only_right']} | {s['abstain_oos']} |")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
