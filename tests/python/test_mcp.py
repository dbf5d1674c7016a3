"""An MCP client (the official Python SDK) starts the wheel's `toolrag mcp`, as
a client's config would with `uvx --from <wheel> toolrag mcp`: no Rust
toolchain and no repository models involved."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from conftest import console_script, wheel_env


def test_an_mcp_client_searches_through_the_console_script(cli_index: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=console_script(), args=["mcp", "--index", str(cli_index)], env=wheel_env(), cwd=str(tmp_path)
    )

    async def main() -> tuple[list[str], dict[str, object]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            result = await session.call_tool("search_tools", {"query": "read the file /etc/hosts", "k": 3})
            assert not result.is_error, result
            assert result.structured_content is not None
            return tools, result.structured_content

    tools, found = asyncio.run(main())
    assert "search_tools" in tools and "get_tool" in tools
    candidates = found["candidates"]
    assert isinstance(candidates, list)
    assert candidates[0]["nodeId"] == "tool://filesystem/read_text_file"
