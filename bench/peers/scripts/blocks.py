#!/usr/bin/env python3
"""blocks.py N RUNS ROUNDS WORKER [WORKER ...]: back-to-back runs, unlike driver.py's one run per
system per round. Each worker (a peer worker binary: N per line on stdin, `RESULT {...}` back) is
fed RUNS runs of N steps in a row, the workers taking turns by round (order reversed every other
round), all against one `tackle-fake-model` playing scripts/add_loop.json. Prints each round's
median and p90 of the last 80% of its runs (ms). FAKE=path overrides the fake model binary."""
import json, os, statistics, subprocess, sys
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
n, runs, rounds = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
workers = sys.argv[4:]
fake_bin = os.environ.get("FAKE", f"{ROOT}/target/release/tackle-fake-model")
script = f"{ROOT}/bench/peers/scripts/add_loop.json"
fake = subprocess.Popen([fake_bin, "--script", script, "--addr", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
url = None
for line in fake.stdout:
    if "http://" in line:
        url = line[line.index("http://"):].split()[0].rstrip("/")
        break
env = dict(os.environ, FAKE_BASE=f"{url}/v1")
procs = {w: subprocess.Popen([w], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env) for w in workers}
def run(p):
    p.stdin.write(f"{n}\n"); p.stdin.flush()
    while True:
        line = p.stdout.readline()
        if not line: raise SystemExit("worker died")
        if line.startswith("RESULT "):
            return json.loads(line[7:])["ms"]
res = {w: [] for w in workers}
for r in range(rounds):
    order = workers if r % 2 == 0 else workers[::-1]
    for w in order:
        xs = [run(procs[w]) for _ in range(runs)]
        xs = xs[len(xs)//5:]
        xs.sort()
        res[w].append((statistics.median(xs), xs[int(len(xs)*0.9)]))
for w in workers:
    print(f"{os.path.basename(os.path.dirname(w)) + '/' + os.path.basename(w):50s} " + "  ".join(f"med {m:.3f} p90 {p:.3f}" for m, p in res[w]))
for p in procs.values():
    p.stdin.write("\n"); p.stdin.flush()
fake.kill()
