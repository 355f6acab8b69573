-- When the session's holder last proved the password (and the code, with two-factor login):
-- the login itself, or a re-authentication. What can take an account over needs it within
-- five minutes.
ALTER TABLE sessions ADD COLUMN reauthenticated_at timestamptz;
UPDATE sessions SET reauthenticated_at = created_at;
ALTER TABLE sessions ALTER COLUMN reauthenticated_at SET NOT NULL;

-- A password reset asked for an address without an account writes its link too (no user; its
-- job sends nothing), so the request does the same work either way.
DO $$
DECLARE c text;
BEGIN
    SELECT conname INTO c FROM pg_constraint
    WHERE conrelid = 'account_links'::regclass AND contype = 'c'
      AND pg_get_constraintdef(oid) LIKE '%user_id IS NULL%' AND pg_get_constraintdef(oid) NOT LIKE '%merchant_id%';
    EXECUTE format('ALTER TABLE account_links DROP CONSTRAINT %I', c);
END $$;
ALTER TABLE account_links ADD CONSTRAINT account_links_user
    CHECK (CASE purpose WHEN 'invitation' THEN user_id IS NULL
                        WHEN 'reset_password' THEN true
                        ELSE user_id IS NOT NULL END);
