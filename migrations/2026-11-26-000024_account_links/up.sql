-- Accounts, continued: emailed single-use links (verification, password reset, invitations),
-- each row also its email's outbox row; two-factor login (secrets sealed under the operator's
-- key, recovery codes as SHA-256 digests); the merchant's two-factor requirement; and the
-- merchant's audit log.
ALTER TABLE users
    ADD COLUMN totp_secret bytea,
    ADD COLUMN totp_pending bytea,
    ADD COLUMN totp_last_step bigint,
    ADD COLUMN two_factor_since timestamptz,
    ADD CONSTRAINT users_two_factor CHECK ((totp_secret IS NULL) = (two_factor_since IS NULL));

ALTER TABLE merchants ADD COLUMN require_two_factor boolean NOT NULL DEFAULT false;

CREATE TABLE recovery_codes (
    user_id  text NOT NULL REFERENCES users (id),
    digest   bytea NOT NULL CHECK (length(digest) = 32),
    used_at  timestamptz,
    PRIMARY KEY (user_id, digest)
);

CREATE TABLE account_links (
    id                    text PRIMARY KEY,
    purpose               text NOT NULL
        CHECK (purpose IN ('verify_email', 'reset_password', 'signup_existing', 'invitation')),
    email                 text NOT NULL CHECK (email = lower(email)),
    user_id               text REFERENCES users (id),
    merchant_id           text REFERENCES merchants (id),
    role                  text CHECK (role IN ('owner', 'admin', 'developer', 'support', 'viewer')),
    invited_by            text REFERENCES users (id),
    -- The SHA-256 of the token last emailed; the token itself is made at sending, never stored.
    token_digest          bytea UNIQUE CHECK (length(token_digest) = 32),
    expires_at            timestamptz NOT NULL,
    used_at               timestamptz,
    created_at            timestamptz NOT NULL,
    -- 'skipped': replaced by a newer link before its email went.
    mail_status           text NOT NULL CHECK (mail_status IN ('queued', 'sent', 'failed', 'skipped')),
    mail_attempts         integer NOT NULL DEFAULT 0,
    mail_next_attempt_at  timestamptz NOT NULL,
    mail_last_error       text,
    mail_sent_at          timestamptz,
    mail_lease_until      timestamptz,
    CHECK ((purpose = 'invitation') = (merchant_id IS NOT NULL AND role IS NOT NULL)),
    CHECK ((purpose = 'invitation') = (user_id IS NULL))
);
CREATE INDEX account_links_due ON account_links (mail_next_attempt_at) WHERE mail_status = 'queued';
CREATE INDEX account_links_email ON account_links (email) WHERE used_at IS NULL;
CREATE INDEX account_links_invitations ON account_links (merchant_id, created_at) WHERE purpose = 'invitation';

CREATE TABLE audit_log (
    seq          bigserial PRIMARY KEY,
    id           text NOT NULL UNIQUE,
    merchant_id  text NOT NULL REFERENCES merchants (id),
    actor_id     text REFERENCES users (id),
    actor_email  text,
    action       text NOT NULL,
    target       text,
    detail       text NOT NULL,
    at           timestamptz NOT NULL
);
CREATE INDEX audit_log_merchant ON audit_log (merchant_id, seq DESC);
