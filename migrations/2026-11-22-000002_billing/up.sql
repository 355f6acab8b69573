-- Invoices, checkout sessions, payments, invoice numbering and idempotency keys.

-- Last issued invoice number per merchant and mode; incremented inside the issuing
-- transaction, so numbers have no gaps and drafts consume none.
CREATE TABLE invoice_counters (
    merchant_id  text NOT NULL REFERENCES merchants (id),
    mode         text NOT NULL CHECK (mode IN ('test', 'live')),
    last_seq     bigint NOT NULL,
    PRIMARY KEY (merchant_id, mode)
);

CREATE TABLE invoices (
    seq                      bigserial NOT NULL UNIQUE,
    id                       text PRIMARY KEY,
    merchant_id              text NOT NULL REFERENCES merchants (id),
    mode                     text NOT NULL CHECK (mode IN ('test', 'live')),
    kind                     text NOT NULL CHECK (kind IN ('itemized', 'amount_only')),
    number                   text,
    -- Itemized invoices are numbered at issue, amount-only ones at their first credited payment.
    number_prefix            text NOT NULL,
    public_token             text UNIQUE,
    collection_state         text NOT NULL,
    status                   text NOT NULL,
    version                  bigint NOT NULL,
    currency                 text NOT NULL CHECK (currency IN ('USDC', 'USDT')),
    -- {subtotal, discount, tax} as exact decimal strings.
    breakdown                jsonb NOT NULL,
    total                    numeric(38, 6) NOT NULL CHECK (total > 0),
    customer_amount_paid     numeric(38, 6) NOT NULL CHECK (customer_amount_paid >= 0),
    merchant_amount_settled  numeric(38, 6) NOT NULL CHECK (merchant_amount_settled >= 0),
    fee_basis_points         integer NOT NULL,
    settlement_wallet        text NOT NULL,
    due_at                   timestamptz,
    past_due_at              timestamptz,
    close_reason             text,
    -- How many payment rows the invoice has (reads skip the payments query when zero).
    payment_count            integer NOT NULL DEFAULT 0,
    -- The commercial fields (lines, customer, discount, taxes, texts, metadata, URLs,
    -- reminder schedule) in the store's own JSON encoding.
    fields                   jsonb NOT NULL,
    refunds                  jsonb NOT NULL DEFAULT '[]',
    activity                 jsonb NOT NULL DEFAULT '[]',
    issued_at                timestamptz,
    paid_at                  timestamptz,
    closed_at                timestamptz,
    created_at               timestamptz NOT NULL,
    updated_at               timestamptz NOT NULL,
    -- Optimistic concurrency: every write checks and bumps it.
    lock_version             bigint NOT NULL,
    -- Worker lease: a claimed invoice is skipped by other workers until then.
    lease_until              timestamptz,
    UNIQUE (merchant_id, mode, number)
);
CREATE INDEX invoices_list ON invoices (merchant_id, mode, seq);
CREATE INDEX invoices_list_state ON invoices (merchant_id, mode, collection_state, seq);
CREATE INDEX invoices_due ON invoices (due_at)
    WHERE past_due_at IS NULL AND due_at IS NOT NULL AND collection_state IN ('open', 'partially_paid');

CREATE TABLE checkout_sessions (
    id                  text PRIMARY KEY,
    invoice_id          text NOT NULL REFERENCES invoices (id),
    merchant_id         text NOT NULL REFERENCES merchants (id),
    mode                text NOT NULL CHECK (mode IN ('test', 'live')),
    status              text NOT NULL CHECK (status IN ('pending', 'completed', 'expired', 'cancelled')),
    amount_due          numeric(38, 6) NOT NULL CHECK (amount_due > 0),
    currency            text NOT NULL,
    settlement_wallet   text NOT NULL,
    external_reference  text,
    customer_email      text,
    success_url         text,
    cancel_url          text,
    expires_at          timestamptz NOT NULL,
    created_at          timestamptz NOT NULL,
    completed_at        timestamptz
);
CREATE INDEX checkout_sessions_invoice ON checkout_sessions (invoice_id);
CREATE INDEX checkout_sessions_expiring ON checkout_sessions (expires_at) WHERE status = 'pending';

CREATE TABLE payments (
    id                        text PRIMARY KEY,
    invoice_id                text NOT NULL REFERENCES invoices (id),
    checkout_session_id       text NOT NULL REFERENCES checkout_sessions (id),
    merchant_id               text NOT NULL REFERENCES merchants (id),
    mode                      text NOT NULL CHECK (mode IN ('test', 'live')),
    status                    text NOT NULL,
    amount_expected           numeric(38, 6) NOT NULL,
    amount_received           numeric(38, 6) NOT NULL,
    customer_amount_credited  numeric(38, 6) NOT NULL,
    merchant_amount_settled   numeric(38, 6) NOT NULL,
    transaction_hash          text NOT NULL,
    chain_id                  bigint NOT NULL,
    token_contract            text NOT NULL,
    settlement_wallet         text NOT NULL,
    payer_address             text,
    failure_reason            text,
    detected_at               timestamptz NOT NULL,
    confirmed_at              timestamptz
);
CREATE INDEX payments_invoice ON payments (invoice_id);
-- A transaction hash is credited (or failed) once across every merchant; later uses are
-- recorded with status 'duplicate'.
CREATE UNIQUE INDEX payments_tx_once ON payments (chain_id, transaction_hash) WHERE status <> 'duplicate';

CREATE TABLE idempotency_keys (
    merchant_id      text NOT NULL REFERENCES merchants (id),
    mode             text NOT NULL CHECK (mode IN ('test', 'live')),
    key              text NOT NULL,
    -- SHA-256 of method, path and body.
    fingerprint      bytea NOT NULL,
    state            text NOT NULL CHECK (state IN ('in_progress', 'completed')),
    response_status  integer,
    response_body    text,
    created_at       timestamptz NOT NULL,
    PRIMARY KEY (merchant_id, mode, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
