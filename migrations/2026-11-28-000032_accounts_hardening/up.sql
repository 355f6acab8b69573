-- When the session's holder last proved the password (and the code, with two-factor login):
-- the login itself, or a re-authentication. What can take an account over needs it within
-- five minutes.
ALTER TABLE sessions ADD COLUMN reauthenticated_at timestamptz;
UPDATE sessions SET reauthenticated_at = created_at;
ALTER TABLE sessions ALTER COLUMN reauthenticated_at SET NOT NULL;
