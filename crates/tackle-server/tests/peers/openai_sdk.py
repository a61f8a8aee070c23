"""Drives Tackle's OpenAI-compatible endpoint with the official `openai` Python SDK.

Usage: openai_sdk.py BASE_URL TOKEN. Prints one JSON object with what it saw; the Rust test
checks it. Any exception fails the run with a traceback.
"""
import json
import sys

from openai import OpenAI

base, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base + "/v1", api_key=token, max_retries=0)
out = {}

out["models"] = [m.id for m in client.models.list().data]

tools = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
]

# Gateway, not streaming: the model's tool call comes back to the client.
r = client.chat.completions.create(
    model="model-x", messages=[{"role": "user", "content": "Weather in Oslo?"}], tools=tools)
call = r.choices[0].message.tool_calls[0]
out["gateway_call"] = {"name": call.function.name, "arguments": json.loads(call.function.arguments),
                       "finish": r.choices[0].finish_reason}

# The client runs the tool and sends the result back, streaming the answer.
messages = [
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
    {"role": "tool", "tool_call_id": call.id, "content": "rain, 8 C"},
]
stream = client.chat.completions.create(model="model-x", messages=messages, tools=tools, stream=True,
                                        stream_options={"include_usage": True})
text, finish, usage = "", None, None
for chunk in stream:
    if chunk.usage:
        usage = chunk.usage.total_tokens
    for choice in chunk.choices:
        text += choice.delta.content or ""
        finish = choice.finish_reason or finish
out["gateway_stream"] = {"text": text, "finish": finish, "usage": usage}

# Streaming tool calls are assembled by the SDK's helpers too.
stream = client.chat.completions.create(
    model="model-x", messages=[{"role": "user", "content": "Weather in Bergen?"}], tools=tools,
    tool_choice={"type": "function", "function": {"name": "get_weather"}}, stream=True)
calls = {}
for chunk in stream:
    for choice in chunk.choices:
        for tc in choice.delta.tool_calls or []:
            entry = calls.setdefault(tc.index, {"name": "", "arguments": ""})
            if tc.function.name:
                entry["name"] += tc.function.name
            entry["arguments"] += tc.function.arguments or ""
out["gateway_stream_call"] = {k: {"name": v["name"], "arguments": json.loads(v["arguments"])} for k, v in calls.items()}

# Agent mode: no tools, the agent model name; Tackle runs its own tools and streams the answer.
stream = client.chat.completions.create(
    model="tackle-agent", messages=[{"role": "user", "content": "What files are here?"}], stream=True)
out["agent_stream"] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

r = client.chat.completions.create(model="tackle-agent", messages=[{"role": "user", "content": "Again?"}])
out["agent"] = r.choices[0].message.content

# Errors arrive in OpenAI's shape, as the SDK's typed exceptions.
try:
    client.chat.completions.create(model="model-x", messages=[{"role": "wizard", "content": "x"}])
    out["bad_request"] = None
except Exception as e:  # noqa: BLE001
    out["bad_request"] = {"type": type(e).__name__, "status": getattr(e, "status_code", None)}

bad = OpenAI(base_url=base + "/v1", api_key="wrong-token-000000000", max_retries=0)
try:
    bad.models.list()
    out["unauthorized"] = None
except Exception as e:  # noqa: BLE001
    out["unauthorized"] = {"type": type(e).__name__, "status": getattr(e, "status_code", None)}

print(json.dumps(out))
