-- PostgreSQL dialect of ../0003_channels.sql: the same tables, columns and indexes.
-- Chat channels (Telegram, ...). Which stored session a person's chat talks to; a durable inbox
-- of what the channel received, so each update is handled once across restarts; and small
-- per-channel values (the polling offset, who was refused).
CREATE TABLE channel_sessions (
    channel     TEXT NOT NULL,
    chat        TEXT NOT NULL,
    "user"        TEXT NOT NULL,
    session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (channel, chat, "user")
);

CREATE TABLE channel_inbox (
    channel     TEXT NOT NULL,
    update_id   BIGINT NOT NULL,
    chat        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    state       TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    started_at  BIGINT,
    finished_at BIGINT,
    PRIMARY KEY (channel, update_id)
);
CREATE INDEX channel_inbox_open ON channel_inbox (channel, state, update_id);

CREATE TABLE channel_state (
    channel     TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    PRIMARY KEY (channel, key)
);
