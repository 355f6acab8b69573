DROP TABLE audit_log;
DROP TABLE account_links;
DROP TABLE recovery_codes;
ALTER TABLE merchants DROP COLUMN require_two_factor;
ALTER TABLE users
    DROP CONSTRAINT users_two_factor,
    DROP COLUMN totp_secret,
    DROP COLUMN totp_pending,
    DROP COLUMN totp_last_step,
    DROP COLUMN two_factor_since;
