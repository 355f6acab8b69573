DELETE FROM account_links WHERE purpose = 'reset_password' AND user_id IS NULL;
ALTER TABLE account_links DROP CONSTRAINT account_links_user;
ALTER TABLE account_links ADD CHECK ((purpose = 'invitation') = (user_id IS NULL));
ALTER TABLE sessions DROP COLUMN reauthenticated_at;
