-- Sub-agents: a child session runs one task for a tool call of its parent. The link says which
-- session and which call started it, so front ends show the tree.
ALTER TABLE sessions ADD COLUMN parent_id TEXT REFERENCES sessions (id) ON DELETE SET NULL;
ALTER TABLE sessions ADD COLUMN parent_call_id TEXT;
CREATE INDEX sessions_parent ON sessions (parent_id, created_at);
