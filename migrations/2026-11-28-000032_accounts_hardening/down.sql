ALTER TABLE sessions DROP COLUMN reauthenticated_at;
