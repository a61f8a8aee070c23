#!/usr/bin/env python3
"""The client the MCP conformance suite drives, for one scenario: Tackle's own commands, as a
person would run them. The suite starts `client.py <server-url>` with MCP_CONFORMANCE_SCENARIO,
MCP_CONFORMANCE_PROTOCOL_VERSION and, for some scenarios, MCP_CONFORMANCE_CONTEXT. The test
(tests/mcp_conformance.rs) sets TACKLE_BIN, a private HOME and data directory, the fake model
(OPENAI_BASE_URL: scripted to call the scenario's tools, as a model would) and BROWSER (browser.py,
which follows the sign-in redirects like a person's browser).

Every scenario:      tackle mcp add conf --url URL --protocol VERSION [--client-id/--client-secret-env,
                     --grant client-credentials|enterprise-managed and its settings]
auth/* scenarios:    tackle mcp login conf
then, per scenario:  tackle mcp list | tools | call | resources | prompts | skills, or tackle run --yes
"""
import json
import os
import subprocess
import sys
import tempfile

URL = sys.argv[1]
SCENARIO = os.environ["MCP_CONFORMANCE_SCENARIO"]
VERSION = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
CONTEXT = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
TACKLE = os.environ["TACKLE_BIN"]
WORKSPACE = tempfile.mkdtemp(prefix="tackle-conformance-")


def tackle(*args, check=True, capture=False):
    """Runs `tackle ARGS --workspace WS`; the exit status is checked unless told otherwise."""
    command = [TACKLE, *args]
    print("$ tackle " + " ".join(args), file=sys.stderr, flush=True)
    result = subprocess.run(command, cwd=WORKSPACE, text=True, stdout=subprocess.PIPE if capture else None)
    if check and result.returncode != 0:
        sys.exit(result.returncode)
    return result.stdout if capture else result.returncode


add = ["mcp", "add", "conf", "--url", URL, "--protocol", VERSION]
if SCENARIO.startswith("auth/"):
    # The document describing this client, for authorization servers that take client ID metadata
    # documents (the suite's authorization server accepts this URL without fetching it).
    add += ["--client-metadata-url", "https://conformance-test.local/client-metadata.json"]
if CONTEXT.get("client_id"):
    add += ["--client-id", CONTEXT["client_id"]]
    if CONTEXT.get("client_secret"):
        os.environ["CONFORMANCE_CLIENT_SECRET"] = CONTEXT["client_secret"]
        add += ["--client-secret-env", "CONFORMANCE_CLIENT_SECRET"]
    if CONTEXT.get("private_key_pem"):
        os.environ["CONFORMANCE_PRIVATE_KEY"] = CONTEXT["private_key_pem"]
        add += ["--private-key-env", "CONFORMANCE_PRIVATE_KEY"]
        add += ["--signing-algorithm", CONTEXT.get("signing_algorithm") or "ES256"]
if SCENARIO.startswith("auth/client-credentials"):
    # Machine to machine: the client's own credentials, no browser.
    add += ["--grant", "client-credentials"]
if CONTEXT.get("idp_id_token"):
    # Enterprise-managed: the user's ID token from the enterprise IdP (their single sign-on),
    # exchanged at the IdP for an ID-JAG, and that for the server's token; no browser.
    os.environ["CONFORMANCE_ID_TOKEN"] = CONTEXT["idp_id_token"]
    add += ["--grant", "enterprise-managed", "--idp-issuer", CONTEXT["idp_issuer"],
            "--idp-client-id", CONTEXT["idp_client_id"], "--id-token-env", "CONFORMANCE_ID_TOKEN"]
    if CONTEXT.get("idp_token_endpoint"):
        add += ["--idp-token-endpoint", CONTEXT["idp_token_endpoint"]]
if CONTEXT.get("valid_jwt"):
    # Workload identity federation: the workload's JWT from its platform is the grant.
    os.environ["CONFORMANCE_WORKLOAD_JWT"] = CONTEXT["valid_jwt"]
    add += ["--grant", "jwt-bearer", "--assertion-env", "CONFORMANCE_WORKLOAD_JWT"]
tackle(*add)

if SCENARIO.startswith("auth/"):
    # A server that refuses every sign-in (scope-retry-limit) fails here; that is the point.
    if tackle("mcp", "login", "conf", check=False) != 0:
        sys.exit(1)

if SCENARIO in ("initialize",):
    tackle("mcp", "list")
elif SCENARIO.startswith("sep-2640-"):
    # Skills: listed (no file read), then a turn in which the model may activate one.
    tackle("mcp", "skills", "conf")
    tackle("run", "--yes", "Use the pdf-processing skill of the conf server.")
elif SCENARIO in ("request-metadata", "json-schema-ref-no-deref", "http-invalid-tool-headers"):
    tackle("mcp", "tools", "conf", "--json")
    if SCENARIO == "http-invalid-tool-headers":
        tackle("run", "--yes", "Use the tools of the conf server.")
elif SCENARIO == "json-schema-2020-12-preservation":
    tools = json.loads(tackle("mcp", "tools", "conf", "--json", capture=True))
    focal = next(t for t in tools if t["name"] == "json_schema_2020_12_tool")
    tackle("mcp", "call", "conf", "json_schema_echo", json.dumps({"schema": focal["inputSchema"]}))
elif CONTEXT.get("toolCalls"):
    for call in CONTEXT["toolCalls"]:
        tackle("mcp", "call", "conf", call["name"], json.dumps(call["arguments"]))
elif SCENARIO == "http-standard-headers":
    tackle("run", "--yes", "Use the tools of the conf server.")
    listing = json.loads(tackle("mcp", "resources", "conf", "--json", capture=True))
    for resource in listing["resources"]:
        tackle("mcp", "resources", "conf", "--read", resource["uri"])
    for prompt in json.loads(tackle("mcp", "prompts", "conf", "--json", capture=True)):
        tackle("mcp", "prompts", "conf", "--get", prompt["name"])
else:
    tackle("run", "--yes", "Use the tools of the conf server.")
