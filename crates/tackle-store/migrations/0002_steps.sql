-- One row per model call: usage (with cache reads and writes) and prompt-cache stability.
CREATE TABLE steps (
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
);
