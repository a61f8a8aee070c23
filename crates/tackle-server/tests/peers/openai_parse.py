"""Drives agent mode of Tackle's OpenAI-compatible endpoint with the official `openai` Python
SDK's structured-output helpers: `chat.completions.parse` and the chat stream helper with a
Pydantic model as `response_format`, and `responses.parse` with `text_format`.

Usage: openai_parse.py BASE_URL TOKEN. Prints one JSON object with what the helpers parsed; the
Rust test checks it. Any exception (the SDK refusing an answer) fails the run with a traceback.
"""
import json
import sys

from openai import OpenAI
from pydantic import BaseModel

base, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base + "/v1", api_key=token, max_retries=0)


class City(BaseModel):
    city: str
    population: int


out = {}
messages = [{"role": "user", "content": "Which city?"}]

r = client.chat.completions.parse(model="tackle-agent", messages=messages, response_format=City)
parsed = r.choices[0].message.parsed
assert isinstance(parsed, City), r
out["chat_parse"] = parsed.model_dump()

with client.chat.completions.stream(model="tackle-agent", messages=messages, response_format=City) as stream:
    for _ in stream:
        pass
    final = stream.get_final_completion()
parsed = final.choices[0].message.parsed
assert isinstance(parsed, City), final
out["chat_stream"] = parsed.model_dump()

r = client.responses.parse(model="tackle-agent", input="Which city?", text_format=City)
assert isinstance(r.output_parsed, City), r
out["responses_parse"] = r.output_parsed.model_dump()

print(json.dumps(out))
