-- PostgreSQL dialect of ../0002_steps.sql: the same tables, columns and indexes.
-- One row per model call: usage (with cache reads and writes) and prompt-cache stability.
CREATE TABLE steps (
    session_id      TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn            BIGINT NOT NULL,
    step            BIGINT NOT NULL,
    stop_reason     TEXT NOT NULL,
    input_tokens    BIGINT NOT NULL,
    output_tokens   BIGINT NOT NULL,
    cache_read      BIGINT NOT NULL,
    cache_write     BIGINT NOT NULL,
    request_bytes   BIGINT,
    prefix_bytes    BIGINT,
    prefix_ratio    DOUBLE PRECISION,
    cache_break     TEXT,
    strategy        TEXT,
    duration_ms     BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (session_id, turn, step)
);
