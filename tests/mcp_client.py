"""A real MCP client against `toolrag mcp`: the official Python SDK (`mcp` on PyPI).

Usage: python tests/mcp_client.py TOOLRAG_BINARY INDEX_DIR

It spawns the server over stdio, checks the handshake, the tool list, a search,
a card and the error paths, and prints one JSON summary line on stdout. Any
failed check raises, so the exit status is non-zero. Driven by
tests/integration/mcp.rs; needs the venv that `make mcp-client` sets up.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

OLDEST_PROTOCOL = "2025-06-18"


def check(cond, what):
    if not cond:
        raise AssertionError(what)


async def main(binary, index):
    params = StdioServerParameters(command=binary, args=["mcp", "--index", index])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            version = str(init.protocol_version)
            check(version >= OLDEST_PROTOCOL, f"protocol {version} is older than {OLDEST_PROTOCOL}")
            check(init.server_info.name == "toolrag", f"server name {init.server_info.name}")

            tools = {t.name: t for t in (await session.list_tools()).tools}
            check(set(tools) == {"search_tools", "get_tool"}, f"tools {sorted(tools)}")
            schema = tools["search_tools"].input_schema
            check(schema["required"] == ["query"], f"search_tools requires {schema.get('required')}")
            check(
                {"query", "k", "namespace", "readOnly"} <= set(schema["properties"]),
                f"search_tools properties {sorted(schema['properties'])}",
            )
            check(tools["get_tool"].input_schema["required"] == ["handle"], "get_tool needs handle")
            # What MCP clients expect of a tool: a title, an outputSchema (the SDK then checks every
            # structured result against it), and argument types a form can render: no ["integer", "null"].
            for name, tool in tools.items():
                check(tool.title, f"{name} has a title")
                check(tool.output_schema and tool.output_schema.get("type") == "object", f"{name} has an outputSchema")
                for prop, spec in tool.input_schema["properties"].items():
                    check(isinstance(spec.get("type"), str), f"{name}.{prop} has a plain type: {spec}")
            check("source" not in tools["get_tool"].output_schema["properties"], "cards leave out source")

            found = await session.call_tool("search_tools", {"query": "read the file /etc/hosts", "k": 3})
            check(not found.is_error, f"search_tools failed: {found.content}")
            structured = found.structured_content
            check(structured["contentAccess"] == "HANDLES_ONLY", "contentAccess")
            candidates = structured["candidates"]
            check(1 <= len(candidates) <= 3, f"{len(candidates)} candidates")
            check(all(c["nodeId"].startswith("tool://") for c in candidates), "handles")
            check(structured["retrieval"]["decision"] in ("NAVIGATE", "ABSTAIN"), "decision")
            text = json.loads(found.content[0].text)
            check(text == structured, "the text content is the structured content")
            top = candidates[0]["nodeId"]

            filtered = await session.call_tool(
                "search_tools", {"query": "delete things", "namespace": "git", "readOnly": True}
            )
            check(not filtered.is_error, f"filtered search failed: {filtered.content}")
            for c in filtered.structured_content["candidates"]:
                check(c["nodeId"].startswith("tool://git/"), f"namespace filter let {c['nodeId']} through")

            card = await session.call_tool("get_tool", {"handle": top})
            check(not card.is_error, f"get_tool failed: {card.content}")
            check("tool://" + card.structured_content["id"] == top, "the card is the tool asked for")
            check("inputSchema" in card.structured_content, "the card has the input schema")
            check("source" not in card.structured_content, "no path of the serving machine in a card")

            missing = await session.call_tool("get_tool", {"handle": "tool://no/such_tool"})
            check(missing.is_error, "an unknown handle is an error")
            check("no/such_tool" in missing.content[0].text, "the error names the handle")

            bad_k = await session.call_tool("search_tools", {"query": "read a file", "k": 0})
            check(bad_k.is_error, "k = 0 is an error")
            check("k must be between 1 and 100" in bad_k.content[0].text, bad_k.content[0].text)

            empty = await session.call_tool("search_tools", {"query": "   "})
            check(empty.is_error, "an empty query is an error")

            print(
                json.dumps(
                    {
                        "protocol": version,
                        "tools": sorted(tools),
                        "top": top,
                        "candidates": len(candidates),
                    }
                )
            )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
