-- Sessions and everything that belongs to them. Every child table cascades on delete.
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    provider    TEXT NOT NULL,
    model       TEXT NOT NULL,
    workspace   TEXT NOT NULL,
    status      TEXT NOT NULL,
    metadata    TEXT NOT NULL DEFAULT 'null',
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX sessions_owner_updated ON sessions (owner, updated_at DESC);

CREATE TABLE messages (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    turn        INTEGER NOT NULL,
    role        TEXT NOT NULL,
    content     TEXT NOT NULL,
    hidden      INTEGER NOT NULL DEFAULT 0,
    token_count INTEGER,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- Appending a message is activity: keep sessions.updated_at current in the same statement,
-- so an append is one write transaction.
CREATE TRIGGER messages_touch_session AFTER INSERT ON messages
BEGIN
    UPDATE sessions SET updated_at = NEW.created_at WHERE id = NEW.session_id;
END;

CREATE TABLE tool_calls (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    call_id     TEXT NOT NULL,
    name        TEXT NOT NULL,
    args        TEXT NOT NULL,
    status      TEXT NOT NULL,
    result      TEXT,
    envelope    TEXT,
    bytes       INTEGER NOT NULL DEFAULT 0,
    truncated   INTEGER NOT NULL DEFAULT 0,
    locator     TEXT,
    started_at  INTEGER NOT NULL,
    finished_at INTEGER,
    duration_ms INTEGER,
    PRIMARY KEY (session_id, call_id)
);

CREATE TABLE blobs (
    locator     TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool        TEXT NOT NULL,
    call_id     TEXT NOT NULL,
    digest      TEXT NOT NULL,
    raw_bytes   INTEGER NOT NULL,
    lines       INTEGER NOT NULL,
    data        BLOB,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX blobs_expiry ON blobs (expires_at);
CREATE INDEX blobs_session_digest ON blobs (session_id, digest);

CREATE TABLE todos (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    id          INTEGER NOT NULL,
    text        TEXT NOT NULL,
    status      TEXT NOT NULL,
    position    INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, id)
);

CREATE TABLE session_state (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, key)
);

CREATE TABLE snapshots (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    upto_seq    INTEGER NOT NULL,
    messages    TEXT NOT NULL,
    stats       TEXT NOT NULL DEFAULT 'null'
);
CREATE INDEX snapshots_session ON snapshots (session_id, id DESC);
