-- PostgreSQL dialect of ../0004_session_runner.sql: the same tables, columns and indexes.
-- Which process runs a session's turn (host:pid:start time), so a turn whose process died is
-- reported as interrupted instead of running forever.
ALTER TABLE sessions ADD COLUMN runner TEXT;
