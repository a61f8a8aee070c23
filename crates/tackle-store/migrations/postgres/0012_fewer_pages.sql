-- sessions.updated_at is no longer touched by every message: a turn's start and its end set it
-- (as creating, updating and forking a session do), so appending a message
-- inside a turn writes no session row (SQLite's migration 0012 says why: fewer pages per commit).
DROP TRIGGER messages_touch_session ON messages;
DROP FUNCTION messages_touch_session();
