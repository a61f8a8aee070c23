"""Drives `tackle mcp serve` with the official MCP Python SDK (pip `mcp`, unmodified).

Usage: python mcp_serve_client.py stdio TACKLE_BIN WORKSPACE [typed]
       python mcp_serve_client.py http URL TOKEN [typed]
Lists the tools, calls `tackle` (with a progress callback) and then `tackle_reply` on the session
it returned, and prints a JSON summary on stdout. With `typed`: calls `tackle` with an
`output_schema` (the SDK validates the structured content against the declared `outputSchema`
in `call_tool`), shows that the same validation refuses a copy that does not match, and calls it
with a bad `output_schema`. Any failure exits non-zero.
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


SCHEMA = {
    "type": "object",
    "properties": {"files": {"type": "integer"}, "summary": {"type": "string"}},
    "required": ["files", "summary"],
    "additionalProperties": False,
}


async def typed(client):
    tools = await client.list_tools()
    declared = next(t for t in tools.tools if t.name == "tackle").output_schema
    # `call_tool` raises when the structured content does not match `declared`.
    result = await client.call_tool("tackle", {"prompt": "Count the files.", "output_schema": SCHEMA})
    out = {"output_schema": declared, "typed": summary(result, [])}
    # The SDK's own check, on a copy that breaks the declared schema, must refuse it.
    broken = result.model_copy(update={"structured_content": {**result.structured_content, "end": "finished"}})
    try:
        await client.session.validate_tool_result("tackle", broken)
        out["broken_refused"] = None
    except RuntimeError as e:
        out["broken_refused"] = str(e)
    bad = await client.call_tool("tackle", {"prompt": "Count the files.", "output_schema": {"type": "objekt"}})
    out["bad"] = summary(bad, [])
    return out


async def main():
    drive_with = typed if sys.argv[4:] == ["typed"] else drive
    kind = sys.argv[1]
    if kind == "stdio":
        server = StdioServerParameters(
            command=sys.argv[2], args=["mcp", "serve", "--workspace", sys.argv[3]], env=dict(os.environ)
        )
        async with Client(server) as client:
            out = await drive_with(client)
    else:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {sys.argv[3]}"})
        async with http, Client(streamable_http_client(sys.argv[2], http_client=http)) as client:
            out = await drive_with(client)
    print(json.dumps(out))


asyncio.run(main())
