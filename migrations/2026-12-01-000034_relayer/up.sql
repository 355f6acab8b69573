-- The gasless relayer (EIP-3009 authorizations submitted by the service, which pays the gas).

-- An attempt's authorization terms, kept with its nonce: a signature posted for the relayer is
-- checked against what was offered, never against what the request claims. Attempts kept
-- before this migration have none (the relayer refuses them: ask a new attempt).
ALTER TABLE checkout_authorizations
    ADD COLUMN token_contract text,
    ADD COLUMN recipient      text,
    ADD COLUMN value_units    numeric(78, 0) CHECK (value_units >= 0),
    ADD COLUMN valid_after    bigint,
    ADD COLUMN valid_before   bigint;

-- The relayer's account: its next nonce (handed out with the transaction it signs) and the
-- sender's lease (one worker of all replicas sends at a time).
CREATE TABLE relayer_accounts (
    address       text PRIMARY KEY,
    next_nonce    bigint NOT NULL DEFAULT 0 CHECK (next_nonce >= 0),
    lease_holder  text,
    leased_until  timestamptz
);

-- A customer's signed authorization submitted to the relayer: one per attempt (its nonce).
CREATE TABLE relayed_authorizations (
    id                   text PRIMARY KEY,
    merchant_id          text NOT NULL REFERENCES merchants (id),
    mode                 text NOT NULL CHECK (mode = 'live'),
    checkout_session_id  text NOT NULL REFERENCES checkout_sessions (id),
    nonce                bytea NOT NULL UNIQUE REFERENCES checkout_authorizations (nonce),
    relayer              text NOT NULL REFERENCES relayer_accounts (address),
    signature            bytea NOT NULL CHECK (length(signature) = 65),
    status               text NOT NULL
        CHECK (status IN ('queued', 'sent', 'confirmed', 'front_run', 'expired', 'failed', 'cancelled')),
    gas_limit            bigint NOT NULL CHECK (gas_limit > 0),
    -- The relayer's nonce of its transaction: never two submissions with one.
    tx_nonce             bigint CHECK (tx_nonce >= 0),
    broadcast_at         timestamptz,
    mined_hash           text,
    mined_succeeded      boolean,
    mined_block          bigint,
    gas_used             bigint CHECK (gas_used >= 0),
    fee_wei              numeric(78, 0) CHECK (fee_wei >= 0),
    detail               text,
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    UNIQUE (relayer, tx_nonce),
    CHECK ((mined_hash IS NULL) = (gas_used IS NULL)),
    CHECK (mined_hash IS NULL OR tx_nonce IS NOT NULL)
);
CREATE INDEX relayed_authorizations_session ON relayed_authorizations (checkout_session_id);
-- The day's use of a relayer.
CREATE INDEX relayed_authorizations_day ON relayed_authorizations (relayer, created_at);
-- What the sender works on: queued submissions, and transactions that may still be mined.
CREATE INDEX relayed_authorizations_queued ON relayed_authorizations (relayer, created_at)
    WHERE status = 'queued' AND tx_nonce IS NULL;
CREATE INDEX relayed_authorizations_in_flight ON relayed_authorizations (relayer, tx_nonce)
    WHERE tx_nonce IS NOT NULL AND mined_hash IS NULL;

-- Every version of a submission's transaction (the first, then replacements with higher fees,
-- all with its nonce), with the signed bytes to broadcast again.
CREATE TABLE relayed_transactions (
    tx_hash                   text PRIMARY KEY,
    relay_id                  text NOT NULL REFERENCES relayed_authorizations (id),
    raw                       bytea NOT NULL,
    max_fee_per_gas           numeric(78, 0) NOT NULL CHECK (max_fee_per_gas >= 0),
    max_priority_fee_per_gas  numeric(78, 0) NOT NULL CHECK (max_priority_fee_per_gas >= 0),
    signed_at                 timestamptz NOT NULL
);
CREATE INDEX relayed_transactions_relay ON relayed_transactions (relay_id, signed_at);
