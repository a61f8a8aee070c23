"""Drives the Codex bridge of /v1/chat/completions (models codex/<model>) with the official
`openai` Python SDK. The model behind it is the real `codex app-server`, talking to the testkit's
scripted fake (see crates/tackle-server/tests/codex_bridge.rs for the script).

Usage: codex_bridge.py BASE_URL TOKEN LATE_WAIT_SECS. Prints one JSON object with what it saw;
the Rust test checks it. Any unexpected exception fails the run with a traceback.
"""
import json
import sys
import time

import openai
from openai import OpenAI

base, token, late_wait = sys.argv[1], sys.argv[2], float(sys.argv[3])
client = OpenAI(base_url=base + "/v1", api_key=token, max_retries=0, timeout=120)
MODEL = "codex/mock-model"
out = {}

out["models"] = [m.id for m in client.models.list().data]

weather = {"type": "function", "function": {"name": "get_weather", "description": "Weather of a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
clock = {"type": "function", "function": {"name": "get_time", "description": "The time",
         "parameters": {"type": "object", "properties": {}}}}
tools = [weather, clock]
system = {"role": "system", "content": "You answer weather questions."}


def assistant(message):
    """The assistant message as a client sends it back."""
    m = {"role": "assistant", "content": message.content}
    if message.tool_calls:
        m["tool_calls"] = [c.model_dump() for c in message.tool_calls]
    return m


# 1. Not streaming, two rounds: a tool call, its result, the answer; then the chat goes on.
messages = [system, {"role": "user", "content": "Weather in Oslo?"}]
r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
call = r.choices[0].message.tool_calls[0]
out["json_call"] = {"id": call.id, "name": call.function.name, "arguments": json.loads(call.function.arguments),
                    "finish": r.choices[0].finish_reason}
messages += [assistant(r.choices[0].message), {"role": "tool", "tool_call_id": call.id, "content": "rain, 8 C"}]
r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
out["json_answer"] = {"text": r.choices[0].message.content, "finish": r.choices[0].finish_reason,
                      "prompt_tokens": r.usage.prompt_tokens, "cached": r.usage.prompt_tokens_details.cached_tokens}
messages += [{"role": "assistant", "content": r.choices[0].message.content},
             {"role": "user", "content": "And tomorrow?"}]
r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
out["json_follow_up"] = r.choices[0].message.content


# 2. Streaming, two rounds: the tool call arrives as deltas, then the answer streams.
def stream(messages, **kw):
    text, finish, calls, usage = "", None, {}, None
    for chunk in client.chat.completions.create(model=MODEL, messages=messages, tools=tools, stream=True,
                                                stream_options={"include_usage": True}, **kw):
        if chunk.usage:
            usage = chunk.usage.total_tokens
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish = choice.finish_reason or finish
            for tc in choice.delta.tool_calls or []:
                entry = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += tc.id or ""
                entry["name"] += (tc.function.name or "") if tc.function else ""
                entry["arguments"] += (tc.function.arguments or "") if tc.function else ""
    return text, finish, [calls[k] for k in sorted(calls)], usage


messages = [{"role": "user", "content": "Weather in Bergen?"}]
text, finish, calls, _ = stream(messages)
out["stream_call"] = {"finish": finish, "calls": [{"name": c["name"], "arguments": json.loads(c["arguments"])}
                                                   for c in calls]}
messages += [{"role": "assistant", "content": text or None, "tool_calls": [
    {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]},
    {"role": "tool", "tool_call_id": calls[0]["id"], "content": "sunny, 15 C"}]
text, finish, calls, usage = stream(messages)
out["stream_answer"] = {"text": text, "finish": finish, "calls": len(calls), "usage": usage}

# 3. tool_choice "none": Codex gets no tools.
r = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Just say hi."}], tools=tools,
                                   tool_choice="none")
out["none"] = {"text": r.choices[0].message.content, "finish": r.choices[0].finish_reason}

# 4. A forced tool: Codex gets only that one.
messages = [{"role": "user", "content": "What time is it?"}]
r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools,
                                   tool_choice={"type": "function", "function": {"name": "get_time"}})
call = r.choices[0].message.tool_calls[0]
out["forced_call"] = call.function.name
messages += [assistant(r.choices[0].message), {"role": "tool", "tool_call_id": call.id, "content": "12:00"}]
r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools,
                                   tool_choice={"type": "function", "function": {"name": "get_time"}})
out["forced_answer"] = r.choices[0].message.content

# 5. Two parallel tool calls in one response, both answered in one request.
messages = [{"role": "user", "content": "Weather in Oslo, and the time?"}]
r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
calls = r.choices[0].message.tool_calls
out["parallel_calls"] = [c.function.name for c in calls]
messages.append(assistant(r.choices[0].message))
for c in calls:
    messages.append({"role": "tool", "tool_call_id": c.id, "content": "rain" if c.function.name == "get_weather" else "noon"})
r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
out["parallel_answer"] = r.choices[0].message.content

# 6. A result for a tool call that does not exist.
try:
    client.chat.completions.create(model=MODEL, tools=tools, messages=[
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_made_up", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_made_up", "content": "rain"}])
    out["unknown_id"] = "accepted"
except openai.APIStatusError as e:
    out["unknown_id"] = {"type": type(e).__name__, "status": e.status_code, "param": e.body.get("param"),
                         "code": e.body.get("code")}

# 7. A client that comes back after the call was released.
messages = [{"role": "user", "content": "Weather in Late?"}]
r = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
call = r.choices[0].message.tool_calls[0]
time.sleep(late_wait)
messages += [assistant(r.choices[0].message), {"role": "tool", "tool_call_id": call.id, "content": "too late"}]
try:
    client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    out["late"] = "accepted"
except openai.APIStatusError as e:
    out["late"] = {"type": type(e).__name__, "status": e.status_code, "code": e.body.get("code")}

print(json.dumps(out))
