"""A small MCP server for toolrag's live-import tests, on the official Python SDK (`mcp`).

Usage:
  python tests/mcp_fixture_server.py stdio [--tools N] [--page-size K]
  python tests/mcp_fixture_server.py http [--tools N] [--page-size K] [--header NAME=VALUE]

It lists N tools (default 25), `fixture_tool_00` ... , K to a page (default 10), so a client
has to follow `nextCursor` to see them all. Every tool has a description, an input schema and
annotations; the even ones an `outputSchema`, and every third one `_meta`.

`http` serves streamable HTTP on 127.0.0.1 at a free port, at /mcp, and prints the port on the
first line of stdout. With --header, a request without that header and value is refused (401).
Driven by tests/integration/mcp_import.rs; needs the venv that `make mcp-client` sets up.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys

import mcp_types as types
from mcp.server.lowlevel import Server


def tool(i: int) -> types.Tool:
    name = f"fixture_tool_{i:02d}"
    extra = {}
    if i % 2 == 0:
        extra["output_schema"] = {
            "type": "object",
            "properties": {"value": {"type": "integer", "description": f"the result of tool {i}"}},
            "required": ["value"],
        }
    if i % 3 == 0:
        extra["_meta"] = {"fixture/index": i, "fixture/group": "thirds"}
    return types.Tool(
        name=name,
        title=f"Fixture tool {i}",
        description=f"Counts the widgets of shelf {i} in the fixture warehouse. "
        f"Returns the number of widgets on shelf {i}.",
        input_schema={
            "type": "object",
            "properties": {"shelf": {"type": "string", "description": "The shelf label, e.g. 'A-3'."}},
            "required": ["shelf"],
        },
        annotations=types.ToolAnnotations(
            read_only_hint=i % 4 != 1,
            destructive_hint=i % 4 == 1,
            idempotent_hint=True,
            open_world_hint=False,
        ),
        **extra,
    )


def make_server(count: int, page_size: int) -> Server:
    tools = [tool(i) for i in range(count)]

    async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + page_size
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)

    async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="7")])

    return Server("toolrag-fixture", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def run_stdio(server: Server) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def run_http(server: Server, header: str | None) -> None:
    import uvicorn
    from starlette.responses import PlainTextResponse

    app = server.streamable_http_app()
    if header:
        name, _, value = header.partition("=")
        inner = app

        async def app(scope, receive, send):  # noqa: F811 - wraps the MCP app
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
                if headers.get(name.lower()) != value:
                    await PlainTextResponse(f"missing header {name}", status_code=401)(scope, receive, send)
                    return
            await inner(scope, receive, send)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    print(sock.getsockname()[1], flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("--tools", type=int, default=25)
    parser.add_argument("--page-size", type=int, default=10)
    parser.add_argument("--header")
    args = parser.parse_args()
    server = make_server(args.tools, args.page_size)
    print(f"fixture server: {args.tools} tools, {args.page_size} a page", file=sys.stderr, flush=True)
    if args.transport == "stdio":
        asyncio.run(run_stdio(server))
    else:
        asyncio.run(run_http(server, args.header))


if __name__ == "__main__":
    main()
