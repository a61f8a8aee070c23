"""Drives Tackle's `POST /v1/responses` with the official `openai` Python SDK and runs a tool
loop of the OpenAI Agents SDK with its default (Responses) model class against it.

Usage: openai_responses_sdk.py BASE_URL TOKEN. Prints one JSON object with what it saw; the Rust
test checks it. Any exception fails the run with a traceback.
"""
import asyncio
import json
import sys

from openai import AsyncOpenAI, OpenAI

base, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base + "/v1", api_key=token, max_retries=0)
out = {}

tools = [{"type": "function", "name": "get_weather", "description": "Weather of a city", "strict": True,
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                         "additionalProperties": False}}]

# Gateway, not streaming: the model's call comes back as a function_call item.
r = client.responses.create(model="model-x", input="Weather in Oslo?", tools=tools)
call = next(o for o in r.output if o.type == "function_call")
out["gateway_call"] = {"name": call.name, "arguments": json.loads(call.arguments), "status": r.status}

# The client runs the tool and continues from the stored response, streaming through the SDK's
# helper, which checks the event order and item identities as it assembles the response.
with client.responses.stream(
        model="model-x", previous_response_id=r.id, tools=tools,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "rain, 8 C"}]) as stream:
    text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
    final = stream.get_final_response()
out["gateway_stream"] = {"text": text, "final_text": final.output_text, "usage": final.usage.total_tokens}

# A streamed call, assembled by the helper.
with client.responses.stream(model="model-x", input="Weather in Bergen?", tools=tools,
                             tool_choice={"type": "function", "name": "get_weather"}) as stream:
    for _ in stream:
        pass
    streamed = next(o for o in stream.get_final_response().output if o.type == "function_call")
out["gateway_stream_call"] = {"name": streamed.name, "arguments": json.loads(streamed.arguments)}

# Agent mode: the agent model name and no tools; Tackle runs its own tools. The raw events of
# `responses.create(stream=True)`: text deltas, then the completed response.
text, completed = "", None
for event in client.responses.create(model="tackle-agent", input="What files are here?", stream=True):
    if event.type == "response.output_text.delta":
        text += event.delta
    elif event.type == "response.completed":
        completed = event.response.output_text
assert text == completed, (text, completed)
out["agent_stream"] = text
out["agent"] = client.responses.create(model="tackle-agent", input="Again?").output_text

# Errors arrive in OpenAI's shape, as the SDK's typed exceptions.
for key, kwargs in [
    ("bad_request", {"input": [{"role": "wizard", "content": "x"}]}),
    ("not_found", {"input": "x", "previous_response_id": "resp_0000"}),
]:
    try:
        client.responses.create(model="model-x", **kwargs)
        out[key] = None
    except Exception as e:  # noqa: BLE001
        out[key] = {"type": type(e).__name__, "status": getattr(e, "status_code", None)}

# The OpenAI Agents SDK with Tackle as its provider: the default model class for a model name is
# the Responses one; the SDK runs the tool and sends its output back.
from agents import Agent, Runner, function_tool, set_default_openai_client, set_tracing_disabled  # noqa: E402
from agents.models.multi_provider import MultiProvider  # noqa: E402
from agents.models.openai_responses import OpenAIResponsesModel  # noqa: E402

set_tracing_disabled(True)
set_default_openai_client(AsyncOpenAI(base_url=base + "/v1", api_key=token, max_retries=0), use_for_tracing=False)
assert isinstance(MultiProvider().get_model("model-x"), OpenAIResponsesModel)
calls = []


@function_tool
def get_weather(city: str) -> str:
    """Weather of a city."""
    calls.append({"city": city})
    return "sunny, 24 C"


agent = Agent(name="weather", instructions="Answer with the tool.", tools=[get_weather], model="model-x")
result = asyncio.run(Runner.run(agent, "Weather in Paris?"))
out["agents_sdk"] = {"final_output": result.final_output, "tool_calls": calls}

print(json.dumps(out))
