"""Drives Codex models (codex/<model>) on /v1/responses with the official `openai` Python SDK:
a tool loop continued by previous_response_id, not streaming and streaming. The model behind it
is the real `codex app-server`, talking to the testkit's scripted fake (see
crates/tackle-server/tests/codex_bridge.rs for the script).

Usage: codex_responses.py BASE_URL TOKEN. Prints one JSON object with what it saw; the Rust test
checks it. Any unexpected exception fails the run with a traceback.
"""
import json
import sys

from openai import OpenAI

base, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base + "/v1", api_key=token, max_retries=0, timeout=120)
MODEL = "codex/mock-model"
tools = [{"type": "function", "name": "get_weather", "description": "Weather of a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}]
out = {}

# 1. Not streaming: a call, its output by previous_response_id, the answer.
r = client.responses.create(model=MODEL, instructions="You answer weather questions.",
                            input="Weather in Oslo?", tools=tools)
call = next(o for o in r.output if o.type == "function_call")
out["json_call"] = {"name": call.name, "arguments": json.loads(call.arguments), "status": r.status,
                    "model": r.model}
r = client.responses.create(model=MODEL, previous_response_id=r.id, tools=tools,
                            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "rain, 8 C"}])
out["json_answer"] = {"text": r.output_text, "status": r.status}

# 2. Streaming: the call arrives as events, the answer streams.
events, call = [], None
for e in client.responses.create(model=MODEL, input="Weather in Bergen?", tools=tools, stream=True):
    events.append(e.type)
    if e.type == "response.output_item.done" and e.item.type == "function_call":
        call = e.item
    if e.type == "response.completed":
        first = e.response.id
out["stream_call"] = {"name": call.name, "arguments": json.loads(call.arguments),
                      "completed": "response.completed" in events}
text = ""
for e in client.responses.create(model=MODEL, previous_response_id=first, tools=tools, stream=True,
                                 input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sun"}]):
    if e.type == "response.output_text.delta":
        text += e.delta
out["stream_answer"] = text

print(json.dumps(out))
