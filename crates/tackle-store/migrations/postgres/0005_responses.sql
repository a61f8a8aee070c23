-- PostgreSQL dialect of ../0005_responses.sql: the same tables, columns and indexes.
-- Responses made through tackle serve's POST /v1/responses, so a later request can continue
-- from one (`previous_response_id`). A row keeps the messages its request added and its answer;
-- following `previous_id` gives the whole conversation. An agent-mode response names the session
-- that ran it. Rows expire like OpenAI's stored responses; a chain ends where a row expired.
CREATE TABLE responses (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    previous_id TEXT REFERENCES responses (id) ON DELETE CASCADE,
    session_id  TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    messages    TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL
);
CREATE INDEX responses_expiry ON responses (expires_at);
CREATE INDEX responses_previous ON responses (previous_id);
