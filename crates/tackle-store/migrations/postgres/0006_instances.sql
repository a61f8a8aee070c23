-- PostgreSQL dialect of ../0006_instances.sql: the same tables, columns and indexes.
-- Several server instances on one database. A turn holds a lease on its session (`lease_id`, a
-- token per turn; `lease_until`, renewed while the turn runs), so another instance answers busy
-- and takes the session over only once the lease has expired. `cancel_requested` carries a
-- cancel posted to another instance; `event_seq` is the id of the session's last streamed event.
ALTER TABLE sessions ADD COLUMN lease_id TEXT;
ALTER TABLE sessions ADD COLUMN lease_until BIGINT;
ALTER TABLE sessions ADD COLUMN cancel_requested BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN event_seq BIGINT NOT NULL DEFAULT 0;
CREATE INDEX sessions_runner ON sessions (runner);

-- Approvals waiting for a person, visible to every instance; a decision posted to any instance
-- is written here and picked up by the instance whose turn waits (`runner`).
CREATE TABLE approvals (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    call_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    args        TEXT NOT NULL,
    rule        TEXT NOT NULL,
    runner      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    approved    BIGINT,
    reason      TEXT,
    decided_at  BIGINT
);
CREATE INDEX approvals_session ON approvals (session_id, created_at);
CREATE INDEX approvals_runner ON approvals (runner, decided_at);

-- The streamed events of a session's latest turn, so a client that lost its connection
-- reconnects with `Last-Event-ID` (on any instance) and gets what it missed.
CREATE TABLE session_events (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         BIGINT NOT NULL,
    name        TEXT NOT NULL,
    data        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
