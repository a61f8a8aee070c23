#!/usr/bin/env python3
"""The peer benchmark's driver (stdlib only; bench/peers/run.sh installs and builds everything it
starts). See bench/peers/README.md for what it measures and the worker protocol.

In-process part: one persistent worker per system, all against one fake model server (the
`tackle-fake-model` binary in loop mode, which keeps streamed connections alive). For each loop
length N: warm-up runs, then R rounds in which every system does one run, in an order rotated each
round. Every run is checked: the fake saw exactly N+1 model requests and the answer is the
scripted final text. Per run it records wall time (measured by the worker), CPU time of the
worker and of the fake, and context switches of the worker's threads (/proc/<pid>/task/*).

Whole-process part: `tackle run` (the CLI as shipped, profile dist; builtin `read_file` loop) and rig's worker with
`--once`, alternately: wall time from exec to exit, time from exec to the first model request
(seen by the fake), peak RSS and context switches of the whole process (/usr/bin/time)."""
import argparse
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def deps_dir():
    return os.environ.get("BENCH_DEPS", os.path.join(ROOT, "target", "bench-deps"))


def systems():
    """Worker command lines by system name, in table order."""
    release = os.path.join(ROOT, "target", "release")
    deps = deps_dir()
    python = os.path.join(deps, "venv", "bin", "python")
    return {
        "floor_json": [os.path.join(release, "floor-peer-worker"), "json"],
        "floor_stream": [os.path.join(release, "floor-peer-worker"), "stream"],
        "rig": [os.path.join(deps, "rig-target", "release", "rig-peer-worker")],
        "tackle": [os.path.join(release, "tackle-peer-worker")],
        "tackle_stream": ["env", "TACKLE_PEER_DELIVERY=stream", os.path.join(release, "tackle-peer-worker")],
        "tackle_memory": ["env", "TACKLE_PEER_STORE=memory", os.path.join(release, "tackle-peer-worker")],
        "aisdk": ["node", os.path.join(deps, "node", "peer_worker.mjs")],
        "langchain": [python, os.path.join(HERE, "python", "worker.py"), "langchain"],
        "openai_agents": [python, os.path.join(HERE, "python", "worker.py"), "openai-agents"],
    }


# Variants of Tackle's worker that show where its time goes (bench/peers/README.md).
DIAGNOSTIC = ("tackle_stream", "tackle_memory")

LABELS = {
    "floor_json": "raw HTTP floor, JSON (keep-alive)",
    "floor_stream": "raw HTTP floor, streamed (keep-alive)",
    "rig": "rig 0.44",
    "tackle": "Tackle (library)",
    "tackle_stream": "Tackle (library), streamed",
    "tackle_memory": "Tackle (library), store in memory",
    "aisdk": "AI SDK 6 generateText",
    "langchain": "LangChain create_agent",
    "openai_agents": "OpenAI Agents SDK",
}


class Fake:
    """A `tackle-fake-model` process playing a loop script."""

    def __init__(self, script):
        binary = os.path.join(ROOT, "target", "release", "tackle-fake-model")
        self.proc = subprocess.Popen([binary, "--script", script, "--addr", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, text=True)
        self.url = self.proc.stdout.readline().strip()
        if not self.url.startswith("http://"):
            raise SystemExit(f"the fake model did not start ({script})")

    def stats(self):
        with urllib.request.urlopen(f"{self.url}/_fake/stats") as r:
            return json.load(r)

    def reset(self):
        req = urllib.request.Request(f"{self.url}/_fake/reset", method="POST")
        urllib.request.urlopen(req).close()

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def cpu_ms(pid):
    """CPU time of a process's live threads, in ms (schedstat: nanoseconds, unlike /proc/<pid>/stat's
    10 ms ticks)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:
            pass  # the thread ended meanwhile
    return total / 1e6


def context_switches(pid):
    """Voluntary + involuntary context switches summed over a process's live threads."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            pass  # the thread ended meanwhile
    return total


def expected_answer(n):
    return f"done after {n} tool calls"


class Worker:
    def __init__(self, name, cmd, fake_url, log_dir, timeout):
        self.name, self.timeout = name, timeout
        env = dict(os.environ, FAKE_BASE=f"{fake_url}/v1")
        self.stderr = open(os.path.join(log_dir, f"{name}.stderr"), "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, env=env, cwd=deps_dir())
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def _line(self):
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                raise RuntimeError(f"{self.name}: no answer within {self.timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise RuntimeError(f"{self.name} exited (code {self.proc.poll()}); see its .stderr log")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode()

    def run(self, n, fake):
        before = fake.stats()
        cpu0, fake_cpu0, csw0 = cpu_ms(self.proc.pid), cpu_ms(fake.proc.pid), context_switches(self.proc.pid)
        self.proc.stdin.write(f"{n}\n".encode())
        self.proc.stdin.flush()
        while True:
            line = self._line()
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
                break
        cpu1, fake_cpu1, csw1 = cpu_ms(self.proc.pid), cpu_ms(fake.proc.pid), context_switches(self.proc.pid)
        after = fake.stats()
        requests = after["requests"] - before["requests"]
        answer = result.get("answer") or ""
        if requests != n + 1 or expected_answer(n) not in answer:
            raise RuntimeError(f"{self.name} N={n}: {requests} requests (expected {n + 1}), answer {answer!r}")
        return {"ms": result["ms"], "cpu_ms": cpu1 - cpu0, "fake_cpu_ms": fake_cpu1 - fake_cpu0,
                "csw": csw1 - csw0, "bytes_in": after["bytes_in"] - before["bytes_in"],
                "connections": after["connections"] - before["connections"]}

    def close(self):
        try:
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()
        self.stderr.close()


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_for_quiet(max_load, max_wait):
    waited = 0.0
    while max_load and loadavg() > max_load and waited < max_wait:
        time.sleep(5)
        waited += 5
    return waited


def in_process(args, fake, log_dir):
    table = systems()
    names = [s for s in args.systems.split(",") if s]
    unknown = [s for s in names if s not in table]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}; known: {', '.join(table)}")
    workers = {}
    blocks = []
    try:
        for name in names:
            workers[name] = Worker(name, table[name], fake.url, log_dir, args.timeout)
        for n in args.ns:
            for _ in range(args.warmup):
                for name in names:
                    workers[name].run(n, fake)
            waited = wait_for_quiet(args.max_load, args.max_wait)
            block = {"n": n, "load_start": loadavg(), "waited_s": waited, "runs": {name: [] for name in names}}
            for r in range(args.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    block["runs"][name].append(workers[name].run(n, fake))
            block["load_end"] = loadavg()
            blocks.append(block)
            print(f"N={n}: done (load {block['load_start']:.1f} -> {block['load_end']:.1f})", file=sys.stderr)
    finally:
        for w in workers.values():
            w.close()
    return names, blocks


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def in_process_table(names, blocks):
    lines = []
    header = "| N | " + " | ".join(LABELS[s] for s in names) + " |"
    lines.append("Milliseconds per step (median of the rounds' wall times / N):\n")
    lines.append(header)
    lines.append("|---" * (len(names) + 1) + "|")
    for b in blocks:
        n = b["n"]
        lines.append(f"| {n} | " + " | ".join(f"{median(b['runs'][s], 'ms') / n:.2f}" for s in names) + " |")
    ratios = [s for s in ("floor_json", "floor_stream", "rig") if s in names]
    if "tackle" in names and ratios:
        lines.append("\nTackle's wall time over the others' (median run against median run):\n")
        lines.append("| N | " + " | ".join(f"Tackle / {LABELS[s]}" for s in ratios) + " |")
        lines.append("|---" * (len(ratios) + 1) + "|")
        for b in blocks:
            t = median(b["runs"]["tackle"], "ms")
            lines.append(f"| {b['n']} | " + " | ".join(f"{t / median(b['runs'][s], 'ms'):.2f}" for s in ratios) + " |")
    lines.append("\nPer model call (N+1 calls per run; means of the rounds): worker CPU ms, fake CPU ms, "
                 "context switches of the worker's threads, request bytes, TCP connections per run:\n")
    lines.append("| system | N | CPU ms / call | fake CPU ms / call | context switches / call | bytes / request | connections / run |")
    lines.append("|---|---|---|---|---|---|---|")
    for s in names:
        for b in blocks:
            runs, calls = b["runs"][s], b["n"] + 1
            mean = lambda key: statistics.mean(r[key] for r in runs)
            lines.append(f"| {LABELS[s]} | {b['n']} | {mean('cpu_ms') / calls:.2f} | {mean('fake_cpu_ms') / calls:.2f} | "
                         f"{mean('csw') / calls:.1f} | {mean('bytes_in') / calls:.0f} | {mean('connections'):.1f} |")
    loads = [b["load_start"] for b in blocks] + [b["load_end"] for b in blocks]
    lines.append(f"\nLoad average (1 min) during the blocks: {min(loads):.1f}-{max(loads):.1f}.")
    return "\n".join(lines)


def whole_process_once(cmd, env, fake, cwd):
    """One process from exec to exit: wall ms, ms to the first model request, peak RSS (KiB),
    context switches, model requests. The process runs under /usr/bin/time, which reports
    its peak RSS: the rusage of a child of this Python process would count the parent's memory
    (a vfork child's high-water mark carries over its exec)."""
    fake.reset()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as usage:
        start_us = time.time_ns() // 1000
        t0 = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-o", usage.name, "-f", "%M %w %c", *cmd],
                              env=env, cwd=cwd, stdout=out, stderr=err)
        wall = (time.perf_counter() - t0) * 1000
        out.seek(0)
        err.seek(0)
        out, err = out.read(), err.read()
        fields = usage.read().split()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited {proc.returncode}: {err.decode(errors='replace')[-2000:]}")
    stats = fake.stats()
    first = stats["first_request_unix_us"]
    rss_kib, voluntary, involuntary = (float(x) for x in fields[-3:])
    return {"wall_ms": wall, "first_request_ms": (first - start_us) / 1000 if first else None,
            "peak_rss_kib": rss_kib, "csw": voluntary + involuntary, "requests": stats["requests"],
            "stdout": out.decode(errors="replace")}


def whole_process(args, add_fake, read_fake, log_dir):
    deps = deps_dir()
    home = tempfile.mkdtemp(prefix="tackle-home-", dir=log_dir)
    workspace = tempfile.mkdtemp(prefix="workspace-", dir=log_dir)
    os.makedirs(os.path.join(workspace, "notes"))
    for k in range(max(args.process_ns) + 1):
        with open(os.path.join(workspace, "notes", f"{k}.txt"), "w") as f:
            f.write(f"note {k}\n")
    tackle = os.path.join(ROOT, "target", "dist", "tackle")
    rig = os.path.join(deps, "rig-target", "dist", "rig-peer-worker")
    tackle_env = dict(os.environ, TACKLE_HOME=home, OPENAI_API_KEY="sk-bench", TACKLE_PROVIDER="openai",
                      OPENAI_BASE_URL=f"{read_fake.url}/v1")
    rig_env = dict(os.environ, FAKE_BASE=f"{add_fake.url}/v1")
    results = {}
    for n in args.process_ns:
        tackle_cmd = [tackle, "run", "read the notes", "--yes", "--json", "--workspace", workspace,
                      "--model", f"fake-steps-{n}", "--max-steps", str(n + 1)]
        cases = {"tackle run": (tackle_cmd, tackle_env, read_fake), "rig": ([rig, "--once", str(n)], rig_env, add_fake)}
        for name, (cmd, env, fake) in cases.items():
            whole_process_once(cmd, env, fake, workspace)  # warm-up (creates the store, fills caches)
        runs = {name: [] for name in cases}
        for r in range(args.process_rounds):
            for name, (cmd, env, fake) in (list(cases.items())[::1 if r % 2 == 0 else -1]):
                run = whole_process_once(cmd, env, fake, workspace)
                if run["requests"] != n + 1 or expected_answer(n) not in run["stdout"]:
                    raise RuntimeError(f"{name} N={n}: {run['requests']} requests, output {run['stdout'][-300:]!r}")
                runs[name].append(run)
        results[n] = runs
        print(f"whole process N={n}: done", file=sys.stderr)
    return results


def whole_process_table(results):
    lines = ["| N | process | wall ms | first request after exec, ms | peak RSS, MiB | context switches / model call |",
             "|---|---|---|---|---|---|"]
    for n, runs in results.items():
        for name, rs in runs.items():
            first = [r["first_request_ms"] for r in rs if r["first_request_ms"] is not None]
            lines.append(f"| {n} | {name} | {median(rs, 'wall_ms'):.1f} | {statistics.median(first):.1f} | "
                         f"{max(r['peak_rss_kib'] for r in rs) / 1024:.1f} | {median(rs, 'csw') / (n + 1):.1f} |")
    lines.append("\nMedians of the rounds; peak RSS is the largest of the rounds.")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns", default="5,20,50,100", help="loop lengths of the in-process part")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--systems", default=",".join(s for s in systems() if s not in DIAGNOSTIC),
                    help="comma-separated; the diagnostic variants of Tackle's worker (" + ", ".join(DIAGNOSTIC) +
                    ") run only when named")
    ap.add_argument("--process-ns", default="5,50", help="loop lengths of the whole-process part ('' to skip)")
    ap.add_argument("--process-rounds", type=int, default=7)
    ap.add_argument("--max-load", type=float, default=0.0,
                    help="before each timed block, wait (up to --max-wait s) for the 1-min load to fall below this")
    ap.add_argument("--max-wait", type=float, default=600)
    ap.add_argument("--timeout", type=float, default=120, help="seconds one run may take")
    ap.add_argument("--out", default=os.path.join(ROOT, "target", "bench-peers"))
    args = ap.parse_args()
    args.ns = [int(x) for x in args.ns.split(",") if x]
    args.process_ns = [int(x) for x in args.process_ns.split(",") if x]
    os.makedirs(args.out, exist_ok=True)
    log_dir = tempfile.mkdtemp(prefix="run-", dir=args.out)
    add_fake = Fake(os.path.join(HERE, "scripts", "add_loop.json"))
    read_fake = Fake(os.path.join(HERE, "scripts", "read_loop.json"))
    report = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "cpus": os.cpu_count(), "args": vars(args)}
    try:
        sections = []
        if args.ns:
            names, blocks = in_process(args, add_fake, log_dir)
            report["in_process"] = {"systems": names, "blocks": blocks}
            sections.append(in_process_table(names, blocks))
        if args.process_ns:
            results = whole_process(args, add_fake, read_fake, log_dir)
            for runs in results.values():
                for rs in runs.values():
                    for r in rs:
                        del r["stdout"]
            report["whole_process"] = results
            sections.append(whole_process_table(results))
    finally:
        add_fake.close()
        read_fake.close()
    with open(os.path.join(log_dir, "results.json"), "w") as f:
        json.dump(report, f, indent=1)
    print("\n\n".join(sections))
    print(f"\n(raw results and worker logs: {log_dir})")


if __name__ == "__main__":
    main()
