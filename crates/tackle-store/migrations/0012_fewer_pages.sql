-- Fewer pages per commit: every step of a turn commits twice, and each page a commit dirties
-- is one more frame written to the WAL (two system calls), so the per-step commits cost what they
-- touch. Measured with scripts/bench/wal_pages.py (`--upto 11` for before): a tool step's two
-- commits wrote 11.5 pages with 200-byte messages, 14.6 at 1,500 bytes, 17.0 at 3,000; now 8.5,
-- 11.6 and 14.0.
--
-- 1. sessions.updated_at is no longer set by a trigger on every message. A turn's start and end
--    set it, as do creating, updating and forking a session and appending a message through the
--    store's `Messages`; the step commits inside a turn write no session row and no entry of the
--    owner's recency index.
DROP TRIGGER messages_touch_session;

-- 2. Small rows found by their key live in their primary key's B-tree (WITHOUT ROWID): one tree
--    to write per insert, not a table and its key index. Not messages and tool_calls: their rows
--    can be kilobytes, which spill to overflow pages sooner in such a tree; measured, making them
--    WITHOUT ROWID too saved a page more at 200-byte rows but cost 1-2 more at 1,500 bytes.
CREATE TABLE steps_by_key (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn            INTEGER NOT NULL,
    step            INTEGER NOT NULL,
    stop_reason     TEXT NOT NULL,
    input_tokens    INTEGER NOT NULL,
    output_tokens   INTEGER NOT NULL,
    cache_read      INTEGER NOT NULL,
    cache_write     INTEGER NOT NULL,
    request_bytes   INTEGER,
    prefix_bytes    INTEGER,
    prefix_ratio    REAL,
    cache_break     TEXT,
    strategy        TEXT,
    duration_ms     INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    PRIMARY KEY (session_id, turn, step)
) WITHOUT ROWID;
INSERT INTO steps_by_key
    SELECT session_id, turn, step, stop_reason, input_tokens, output_tokens, cache_read, cache_write,
           request_bytes, prefix_bytes, prefix_ratio, cache_break, strategy, duration_ms, created_at
    FROM steps;
DROP TABLE steps;
ALTER TABLE steps_by_key RENAME TO steps;

CREATE TABLE session_state_by_key (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, key)
) WITHOUT ROWID;
INSERT INTO session_state_by_key SELECT session_id, key, value, updated_at FROM session_state;
DROP TABLE session_state;
ALTER TABLE session_state_by_key RENAME TO session_state;
