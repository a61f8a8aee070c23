"""Agent mode of Tackle's OpenAI-compatible endpoint with a destructive tool, through the official
`openai` Python SDK with a 30 s timeout: the answer must come back in time, with the denial in
Tackle's `tackle` extension object.

Usage: agent_denial.py BASE_URL TOKEN. Prints one JSON object; any exception fails the run.
"""
import json
import sys
import time

from openai import OpenAI

base, token = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=base + "/v1", api_key=token, max_retries=0, timeout=30.0)
out = {}

started = time.monotonic()
r = client.chat.completions.create(
    model="tackle-agent", messages=[{"role": "user", "content": "Delete the build directory."}])
out["plain"] = {"seconds": time.monotonic() - started, "text": r.choices[0].message.content,
                "tackle": (r.model_extra or {}).get("tackle")}

started = time.monotonic()
text, tackle = "", None
for chunk in client.chat.completions.create(
        model="tackle-agent", messages=[{"role": "user", "content": "Delete it again."}], stream=True):
    for choice in chunk.choices:
        text += choice.delta.content or ""
    tackle = (chunk.model_extra or {}).get("tackle") or tackle
out["stream"] = {"seconds": time.monotonic() - started, "text": text, "tackle": tackle}
print(json.dumps(out))
