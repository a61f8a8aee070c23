#!/usr/bin/env python3
"""The BFCL v4 single-turn catalogue, read from the installed `bfcl-eval` wheel (Apache-2.0).

    bfcl.py export OUT.json   the pooled catalogue and the queries, as JSON (`-`: standard output)
    bfcl.py serve             a stdio MCP server offering every pooled function as a tool

The catalogue pools the functions of the six single-turn categories that have ground truth
(live_multiple, multiple, live_simple, simple_python, parallel_multiple,
live_parallel_multiple): 1,233 distinct names; when a name occurs with several definitions, the
first in that category order (and file order) is kept. BFCL's own types (`dict`, `float`,
`tuple`, `any`, ...) are mapped to JSON Schema with BFCL's own table (GORILLA_TO_OPENAPI), as
its handlers do before sending functions to a provider; names are kept as BFCL spells them
(dots included): making them provider-valid is the client's job.

A query is the user turns of one entry; its relevant tools are the distinct function names of
its ground truth. Nothing here is tuned or filtered: every entry of the six files is a query.

The MCP server answers `tools/call` with the name it was called by and the arguments, as JSON,
so a test can check that a call reached the function BFCL names. It needs the `mcp` package.
"""

import copy
import importlib.util
import json
import os
import sys

CATEGORIES = [
    "live_multiple",
    "multiple",
    "live_simple",
    "simple_python",
    "parallel_multiple",
    "live_parallel_multiple",
]


def data_dir():
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bfcl-eval is not installed: pip install --no-deps bfcl-eval==2026.3.23")
    return os.path.join(list(spec.submodule_search_locations)[0], "data")


def type_table():
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    return GORILLA_TO_OPENAPI


def to_json_schema(node, table):
    """BFCL's parameter schema as JSON Schema: every `type` mapped, at every depth."""
    if isinstance(node, list):
        return [to_json_schema(n, table) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            out[key] = table.get(value, "string")
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub, table) for name, sub in value.items()}
        elif key == "items":
            out[key] = to_json_schema(value, table)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def catalogue():
    base = data_dir()
    table = type_table()
    tools = {}
    queries = []
    for category in CATEGORIES:
        entries = read_lines(os.path.join(base, f"BFCL_v4_{category}.json"))
        answers = {
            a["id"]: a for a in read_lines(os.path.join(base, "possible_answer", f"BFCL_v4_{category}.json"))
        }
        for entry in entries:
            for function in entry["function"]:
                if function["name"] not in tools:
                    schema = to_json_schema(function.get("parameters") or {}, table)
                    schema["type"] = "object"
                    tools[function["name"]] = {
                        "name": function["name"],
                        "description": function.get("description") or "",
                        "inputSchema": schema,
                    }
            text = "\n".join(
                m["content"] for turn in entry["question"] for m in turn if m.get("role") == "user"
            )
            relevant = []
            for call in answers[entry["id"]]["ground_truth"]:
                for name in call:
                    if name not in relevant:
                        relevant.append(name)
            queries.append({"id": entry["id"], "category": category, "query": text, "relevant": relevant})
    return list(tools.values()), queries


def export(path):
    tools, queries = catalogue()
    data = {"tools": tools, "queries": queries}
    if path == "-":
        json.dump(data, sys.stdout, ensure_ascii=False)
        return
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)


def serve():
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    tools, _ = catalogue()
    listed = [types.Tool(name=t["name"], description=t["description"], inputSchema=t["inputSchema"]) for t in tools]

    def answer(name, arguments):
        text = json.dumps({"called": name, "arguments": arguments})
        return [types.TextContent(type="text", text=text)]

    if hasattr(Server, "list_tools"):  # mcp 1.x: decorators
        server = Server("bfcl")

        @server.list_tools()
        async def list_tools():
            return listed

        @server.call_tool(validate_input=False)
        async def call_tool(name, arguments):
            return answer(name, arguments)

    else:  # mcp 2.x: handlers passed to the constructor

        async def on_list_tools(_ctx, _params):
            return types.ListToolsResult(tools=listed)

        async def on_call_tool(_ctx, params):
            return types.CallToolResult(content=answer(params.name, params.arguments or {}))

        server = Server("bfcl", on_list_tools=on_list_tools, on_call_tool=on_call_tool)

    async def run():
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "export":
        export(sys.argv[2])
    elif len(sys.argv) == 2 and sys.argv[1] == "serve":
        serve()
    else:
        sys.exit(__doc__)
