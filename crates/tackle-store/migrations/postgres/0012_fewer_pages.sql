-- sessions.updated_at is no longer set by a trigger on every message. A turn's start and end set
-- it, as do creating, updating and forking a session and appending a message through the store's
-- `Messages`; the step commits inside a turn write no session row (SQLite's migration 0012 says
-- why: fewer pages per commit).
DROP TRIGGER messages_touch_session ON messages;
DROP FUNCTION messages_touch_session();
