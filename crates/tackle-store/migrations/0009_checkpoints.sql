-- Workspace checkpoints: the workspace as it was before each turn, so `rewind` restores it byte
-- for byte. Objects are content-addressed (the hex BLAKE3 digest of their raw bytes), compressed,
-- and shared by every session: a file that did not change is stored once however many
-- checkpoints name it. Manifests (every path with its kind, mode, digest, and the stat fields that
-- tell a changed file from an unchanged one) are objects too. Nothing cascades into
-- checkpoint_objects: content no checkpoint refers to any more is collected by
-- `Checkpoints::collect_garbage` (after `tackle sessions rm`).
CREATE TABLE checkpoint_objects (
    digest      TEXT PRIMARY KEY,
    size        INTEGER NOT NULL,
    data        BLOB NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE INDEX checkpoint_objects_created ON checkpoint_objects (created_at);

CREATE TABLE checkpoints (
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn        INTEGER NOT NULL,
    workspace   TEXT NOT NULL,
    manifest    TEXT NOT NULL,
    stats       TEXT NOT NULL DEFAULT 'null',
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, turn)
);
CREATE INDEX checkpoints_workspace ON checkpoints (workspace, created_at DESC);
