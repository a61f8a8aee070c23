"""Drives `tackle mcp serve` with the official MCP Python SDK (pip `mcp`, unmodified).

Usage: python mcp_serve_client.py stdio TACKLE_BIN WORKSPACE
       python mcp_serve_client.py http URL TOKEN
Lists the tools, calls `tackle` (with a progress callback) and then `tackle_reply` on the session
it returned, and prints a JSON summary on stdout. Any failure exits non-zero.
"""

import asyncio
import json
import os
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def summary(result, progress):
    return {
        "text": [c.text for c in result.content if getattr(c, "type", "") == "text"],
        "structured": result.structured_content,
        "is_error": bool(result.is_error),
        "progress": progress,
    }


async def drive(client):
    tools = await client.list_tools()
    out = {"tools": sorted(t.name for t in tools.tools), "protocol": client.protocol_version}
    progress = []

    async def on_progress(value, total, message):
        progress.append({"progress": value, "message": message})

    first = await client.call_tool("tackle", {"prompt": "Say hello."}, progress_callback=on_progress)
    out["first"] = summary(first, progress)
    session = first.structured_content["session_id"]
    second = await client.call_tool("tackle_reply", {"session_id": session, "prompt": "And again."})
    out["second"] = summary(second, [])
    return out


async def main():
    kind = sys.argv[1]
    if kind == "stdio":
        server = StdioServerParameters(
            command=sys.argv[2], args=["mcp", "serve", "--workspace", sys.argv[3]], env=dict(os.environ)
        )
        async with Client(server) as client:
            out = await drive(client)
    else:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {sys.argv[3]}"})
        async with http, Client(streamable_http_client(sys.argv[2], http_client=http)) as client:
            out = await drive(client)
    print(json.dumps(out))


asyncio.run(main())
