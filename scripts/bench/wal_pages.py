#!/usr/bin/env python3
"""Pages (WAL frames) each commit of a turn writes on SQLite, with Tackle's migrations applied.

Usage: scripts/bench/wal_pages.py [--upto N] [--bytes B]   (migrations up to N only, to compare;
messages and results of B bytes, 200 by default)

Plays the statements of a new session, a turn start and five tool steps (the assistant message
with its call, then the call's end, the results and the step record: `append_with_calls` and
`Steps::commit`) on a fresh database in WAL mode, and prints the frames each kind of commit
appended to the WAL, averaged over the sessions after the first five. A frame is one page
written (two system calls), so this is what a commit costs the disk and the kernel."""
import argparse, glob, json, os, sqlite3, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRAME = 4096 + 24

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--upto", type=int, default=9999)
    ap.add_argument("--bytes", type=int, default=200, help="size of each message and tool result")
    args = ap.parse_args()
    files = sorted(glob.glob(os.path.join(ROOT, "crates/tackle-store/migrations/*.sql")))
    files = [f for f in files if int(os.path.basename(f)[:4]) <= args.upto]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.db")
        c = sqlite3.connect(path, isolation_level=None)
        for p in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", "wal_autocheckpoint=0"):
            c.execute(f"PRAGMA {p}")
        for f in files:
            c.executescript(open(f).read())
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        per = {}

        def tx(name, stmts):
            before = os.path.getsize(path + "-wal")
            c.execute("BEGIN IMMEDIATE")
            for sql, values in stmts:
                c.execute(sql, values)
            c.execute("COMMIT")
            per.setdefault(name, []).append((os.path.getsize(path + "-wal") - before) // FRAME)

        for i in range(25):
            sid, now = f"session-{i:04d}", int(time.time() * 1000) + i
            tx("new session", [(
                "INSERT INTO sessions (id, owner, provider, model, workspace, status, created_at, updated_at)"
                " VALUES (?, 'local', 'p', 'm', '/w', 'idle', ?, ?)", (sid, now, now))])
            tx("turn start", [
                ("UPDATE sessions SET status = 'running', updated_at = ? WHERE id = ?", (now, sid)),
                ("INSERT INTO messages (session_id, seq, turn, role, content, created_at)"
                 " VALUES (?, 0, 1, 'user', 'go', ?)", (sid, now))])
            seq = 1
            for step in range(5):
                call = f"call_{step}"
                tx("message and calls", [
                    ("INSERT INTO messages (session_id, seq, turn, role, content, created_at)"
                     " VALUES (?, ?, 1, 'assistant', ?, ?)", (sid, seq, json.dumps({"t": "x" * args.bytes}), now)),
                    ("INSERT INTO tool_calls (session_id, call_id, name, args, status, started_at)"
                     " VALUES (?, ?, 'add', '{}', 'running', ?)", (sid, call, now))])
                seq += 1
                tx("step end", [
                    ("UPDATE tool_calls SET status = 'ok', result = ?, finished_at = ?"
                     " WHERE session_id = ? AND call_id = ?", ("5" * args.bytes, now, sid, call)),
                    ("INSERT INTO messages (session_id, seq, turn, role, content, created_at)"
                     " VALUES (?, ?, 1, 'tool', ?, ?)", (sid, seq, json.dumps({"r": "5" * args.bytes}), now)),
                    ("INSERT INTO steps (session_id, turn, step, stop_reason, input_tokens, output_tokens,"
                     " cache_read, cache_write, duration_ms, created_at) VALUES (?, 1, ?, 'tool_use', 1, 1, 0, 0, 1, ?)",
                     (sid, step + 1, now))])
                seq += 1
        last = os.path.basename(files[-1])
        print(f"migrations up to {last}, {args.bytes}-byte messages: WAL frames per commit (mean of sessions 6-25)")
        for name, xs in per.items():
            xs = xs[5 * len(xs) // 25:]
            print(f"  {name:18s} {sum(xs) / len(xs):.2f}")

main()
