-- Questions MCP servers ask the person behind a turn (elicitation), visible to every instance
-- like approvals: the instance whose turn waits (`runner`) records each one; an answer posted to
-- any instance is written to `answer` (JSON: {"action": ..., "content": ...}) and picked up there.
CREATE TABLE elicitations (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    call_id     TEXT NOT NULL,
    tool        TEXT NOT NULL,
    server      TEXT NOT NULL,
    message     TEXT NOT NULL,
    mode        TEXT NOT NULL,
    schema      TEXT,
    url         TEXT,
    runner      TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    answer      TEXT,
    answered_at BIGINT
);
CREATE INDEX elicitations_session ON elicitations (session_id, created_at);
CREATE INDEX elicitations_runner ON elicitations (runner, answered_at);
