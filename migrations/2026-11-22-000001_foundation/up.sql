-- Foundation: merchants, API keys, test clocks and the event outbox.

CREATE TABLE merchants (
    id                 text PRIMARY KEY,
    name               text NOT NULL,
    website_origin     text,
    status             text NOT NULL CHECK (status IN ('active', 'suspended')),
    live_wallet        text,
    live_token         text CHECK (live_token IN ('USDC', 'USDT')),
    live_activated_at  timestamptz,
    fee_basis_points   integer NOT NULL DEFAULT 0 CHECK (fee_basis_points BETWEEN 0 AND 10000),
    invoice_prefix     text NOT NULL,
    created_at         timestamptz NOT NULL,
    CHECK ((live_wallet IS NULL) = (live_token IS NULL))
);

CREATE TABLE api_keys (
    id              text PRIMARY KEY,
    merchant_id     text NOT NULL REFERENCES merchants (id),
    mode            text NOT NULL CHECK (mode IN ('test', 'live')),
    key_type        text NOT NULL CHECK (key_type IN ('secret', 'publishable')),
    -- SHA-256 of the plaintext key; the plaintext is never stored.
    digest          bytea NOT NULL UNIQUE,
    display_prefix  text NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz,
    revoked_at      timestamptz
);
CREATE INDEX api_keys_merchant ON api_keys (merchant_id);

-- The test-mode clock of each merchant: real time plus an offset the merchant moves forward.
CREATE TABLE test_clocks (
    merchant_id     text PRIMARY KEY REFERENCES merchants (id),
    offset_seconds  bigint NOT NULL DEFAULT 0 CHECK (offset_seconds >= 0)
);

-- The transactional outbox: events are inserted in the transaction of the change that emits
-- them. seq gives a stable total order for listing and for the webhook dispatcher.
CREATE TABLE events (
    seq          bigserial NOT NULL UNIQUE,
    id           text PRIMARY KEY,
    merchant_id  text NOT NULL REFERENCES merchants (id),
    mode         text NOT NULL CHECK (mode IN ('test', 'live')),
    type         text NOT NULL,
    data         jsonb NOT NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX events_scope_seq ON events (merchant_id, mode, seq);
CREATE INDEX events_scope_type_seq ON events (merchant_id, mode, type, seq);
