#!/usr/bin/env python3
"""Tackle against the AI SDK on the reference dynamic-tools scenario (bench/cache/run.sh).

Tackle runs the scenario (`tackle bench cache --export`), which also writes a replay: the fake
model's script, Tackle's system messages, tool definitions, tool results, and the tools allowed
at each step. The AI SDK (bench/node/cache_replay.mjs) then runs the same scenario against a fresh
fake model with the same script and simulated prompt cache, once with `activeTools` set to the
same per-step availability and once sending every tool at every step. Input cost is in units of
an uncached input token, with cached tokens at --cached-price of that (0.1 for OpenAI's GPT-5
family and Anthropic's cache reads; 0.25 for GPT-4.1; 0.5 for GPT-4o)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def deps_dir():
    return os.environ.get("BENCH_DEPS", os.path.join(ROOT, "target", "bench-deps"))


def run_aisdk(replay_path, script_path, mode):
    fake = subprocess.Popen([os.path.join(ROOT, "target", "release", "tackle-fake-model"), "--script", script_path,
                             "--addr", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
    try:
        url = fake.stdout.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit("the fake model did not start")
        out = subprocess.run(["node", os.path.join(deps_dir(), "node", "cache_replay.mjs"), replay_path, mode],
                             env=dict(os.environ, FAKE_BASE=f"{url}/v1"), capture_output=True, text=True,
                             cwd=os.path.join(deps_dir(), "node"))
        if out.returncode != 0:
            raise SystemExit(f"the AI SDK run ({mode}) failed:\n{out.stderr[-3000:]}")
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        fake.terminate()
        fake.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=50, help="model steps of the scenario")
    ap.add_argument("--cached-price", type=float, default=0.1, help="price of a cached input token / uncached")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="cache-", dir=os.path.join(ROOT, "target"))
    replay_path = os.path.join(work, "replay.json")
    tackle = subprocess.run([os.path.join(ROOT, "target", "release", "tackle"), "bench", "cache", "--steps",
                             str(args.steps), "--json", "--export", replay_path], capture_output=True, text=True)
    if tackle.returncode != 0:
        raise SystemExit(f"tackle bench cache failed:\n{tackle.stdout[-2000:]}{tackle.stderr[-2000:]}")
    replay = json.load(open(replay_path))
    script_path = os.path.join(work, "script.json")
    with open(script_path, "w") as f:
        json.dump(replay["script"], f)
    t = replay["tackle"]
    rows = [("Tackle (frozen tool list, per-step `allowed_tools`)", t["steps"], t["input_tokens"],
             t["cache_read_tokens"], len(replay["tools"]) * t["steps"])]
    for mode, label in (("active", "AI SDK 6, `activeTools` per step"), ("all", "AI SDK 6, every tool every step")):
        r = run_aisdk(replay_path, script_path, mode)
        if r["steps"] != t["steps"]:
            raise SystemExit(f"the AI SDK run ({mode}) took {r['steps']} steps, Tackle {t['steps']}")
        rows.append((label, r["steps"], r["input_tokens"], r["cache_read_tokens"], r["tools_sent"]))
    cost = lambda inp, cached: (inp - cached) + args.cached_price * cached
    base = cost(rows[0][2], rows[0][3])
    print(f"Reference scenario, OpenAI format: {t['steps']} steps over {t['turns']} turns, "
          f"{len(replay['tools'])} tools; input cost with cached tokens at {args.cached_price} of the price.\n")
    print("| run | steps | input tokens | cached | cached share | tool definitions sent | input cost | cost / Tackle's |")
    print("|---|---|---|---|---|---|---|---|")
    for label, steps, inp, cached, sent in rows:
        c = cost(inp, cached)
        print(f"| {label} | {steps} | {inp} | {cached} | {100 * cached / max(inp, 1):.1f}% | {sent} | {c:.0f} | {c / base:.2f} |")
    print(f"\n(replay and script: {work})")


if __name__ == "__main__":
    main()
