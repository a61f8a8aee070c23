-- Fencing: every write a turn makes names its lease's epoch and is refused once the session's
-- lease has moved on. `lease_epoch` counts the leases ever taken on a session (each take adds
-- one). `db_clock` is the database's clock in milliseconds since the epoch: lease expiry is
-- decided by it, never by an instance's own clock.
ALTER TABLE sessions ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
CREATE VIEW db_clock AS SELECT CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER) AS now_ms;
