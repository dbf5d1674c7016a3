"""A small MCP server over stdio, on Python's standard library, behind the gateway in
tests/integration/mcp_conformance.rs.

Usage: python3 tests/mcp_conformance_upstream.py

Tools (all read-only, so that no call waits for an approval):
  get_weather   {"city"} -> "sunny"
  slow          {"seconds"} -> "done" after that many seconds (a call in flight at shutdown)
  change_tools  {"add"} -> adds a tool of that name, then sends notifications/tools/list_changed

Declares tools.listChanged. Each call runs on a thread of its own, so a slow call does not
hold the others up.
"""

import json
import sys
import threading
import time

lock = threading.Lock()
extra: list[str] = []


def tool(name: str, description: str, props: dict) -> dict:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": props},
        "annotations": {"readOnlyHint": True},
    }


def tools() -> list[dict]:
    base = [
        tool("get_weather", "Gives the weather forecast for a city.", {"city": {"type": "string"}}),
        tool("slow", "Waits that many seconds, then answers done.", {"seconds": {"type": "number"}}),
        tool("change_tools", "Adds a tool to this server's list.", {"add": {"type": "string"}}),
    ]
    return base + [tool(n, f"The tool {n}, added while running.", {}) for n in extra]


def send(message: dict) -> None:
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def call(msg_id, params: dict) -> None:
    name, args = params.get("name"), params.get("arguments") or {}
    text = "sunny"
    if name == "slow":
        time.sleep(float(args.get("seconds", 1)))
        text = "done"
    elif name == "change_tools":
        extra.append(str(args.get("add", "added_tool")))
        text = "changed"
    send({"jsonrpc": "2.0", "id": msg_id, "result": {"content": [{"type": "text", "text": text}]}})
    if name == "change_tools":
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg or "method" not in msg:
        continue
    method, params = msg["method"], msg.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "conformance", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": tools()}
    elif method == "tools/call":
        threading.Thread(target=call, args=(msg["id"], params), daemon=True).start()
        continue
    elif method == "ping":
        result = {}
    else:
        send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": method}})
        continue
    send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
