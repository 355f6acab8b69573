-- Merchant accounts: the people who sign in to the dashboard, their role in each merchant, and
-- their sessions (the token's SHA-256 only; the token itself is never stored).
CREATE TABLE users (
    id                 text PRIMARY KEY,
    email              text NOT NULL UNIQUE CHECK (email = lower(email)),
    name               text NOT NULL,
    password_hash      text NOT NULL,
    email_verified_at  timestamptz,
    created_at         timestamptz NOT NULL
);

CREATE TABLE memberships (
    user_id      text NOT NULL REFERENCES users (id),
    merchant_id  text NOT NULL REFERENCES merchants (id),
    role         text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'support', 'viewer')),
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (user_id, merchant_id)
);
CREATE INDEX memberships_merchant ON memberships (merchant_id);

CREATE TABLE sessions (
    id            text PRIMARY KEY,
    user_id       text NOT NULL REFERENCES users (id),
    token_digest  bytea NOT NULL UNIQUE CHECK (length(token_digest) = 32),
    csrf_token    text NOT NULL,
    created_at    timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
