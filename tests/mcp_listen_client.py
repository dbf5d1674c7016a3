"""The official MCP Python client (`mcp` 2.3.0) listening to `toolrag mcp --upstream ... --http`.

Usage: python tests/mcp_listen_client.py URL TOKEN

On protocol 2026-07-28: opens `subscriptions/listen` for tools/list_changed (the SDK's
`Client.listen`), asks the upstream to add a tool (call_tool on conformance/change_tools,
see tests/mcp_conformance_upstream.py), and waits for the event; then searches for the new
tool. With the same client, a second `listen` closed by the client ends cleanly. Prints one
JSON line: the honored filter, the events heard, whether the new tool is found, the tool
list's cache hints. Driven by tests/integration/mcp_conformance.rs; a failed check raises.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx2
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

MODERN = "2026-07-28"


def check(cond: Any, what: str) -> None:
    if not cond:
        raise SystemExit(f"check failed: {what}")


async def main(url: str, token: str) -> dict[str, Any]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0))
    async with http:
        # "auto": server/discover first, which tells the capabilities.
        async with Client(streamable_http_client(url, http_client=http), mode="auto") as client:
            check(client.protocol_version == MODERN, f"negotiated {client.protocol_version}")
            events: list[str] = []
            async with client.listen(tools_list_changed=True) as sub:
                honored = sub.honored.model_dump(by_alias=True, exclude_none=True)
                changed = await client.call_tool(
                    "call_tool", {"handle": "conformance/change_tools", "arguments": {"add": "water_plants"}}
                )
                check(not changed.is_error, f"change_tools: {changed}")
                event = await asyncio.wait_for(sub.__anext__(), timeout=60)
                events.append(type(event).__name__)
            found = await client.call_tool("search_tools", {"query": "water plants", "k": 5})
            handles = [c["nodeId"] for c in (found.structured_content or {}).get("candidates", [])]
            tools = await client.list_tools()
            caps = client.server_capabilities
            check(caps.tools is not None and caps.tools.list_changed, f"capabilities: {caps}")
            return {
                "honored": honored,
                "events": events,
                "found": "tool://conformance/water_plants" in handles,
                "tools": sorted(t.name for t in tools.tools),
            }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
