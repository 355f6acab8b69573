-- Live-mode verification and detection.

-- A checkout records the chain and token contract a transfer must use (configured when it was
-- created; earlier checkouts are Polygon's).
ALTER TABLE checkout_sessions ADD COLUMN chain_id bigint NOT NULL DEFAULT 137;
ALTER TABLE checkout_sessions ADD COLUMN token_contract text;
UPDATE checkout_sessions SET token_contract = CASE currency
    WHEN 'USDC' THEN '0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359'
    ELSE '0xc2132D05D31c914a87C6611C10748AEb04B58e8F' END;
ALTER TABLE checkout_sessions ALTER COLUMN token_contract SET NOT NULL;
ALTER TABLE checkout_sessions ALTER COLUMN chain_id DROP DEFAULT;
-- Open live checkouts by the wallet and token they are paid in (detection).
CREATE INDEX checkout_sessions_open_live ON checkout_sessions (settlement_wallet, token_contract)
    WHERE status = 'pending' AND mode = 'live';

-- A payment in verification: the block it was seen in, why verification waits, and when it is
-- checked next (also the lease of the worker checking it).
ALTER TABLE payments ADD COLUMN block_number bigint;
ALTER TABLE payments ADD COLUMN block_hash text;
ALTER TABLE payments ADD COLUMN diagnostic text;
ALTER TABLE payments ADD COLUMN next_check_at timestamptz;
CREATE INDEX payments_in_flight ON payments (next_check_at)
    WHERE status IN ('detected', 'validating') AND mode = 'live';
CREATE INDEX payments_live_tx ON payments (chain_id, transaction_hash) WHERE mode = 'live';

-- How far the follower has scanned each chain (the next block to scan).
CREATE TABLE chain_cursors (
    chain_id    bigint PRIMARY KEY,
    next_block  bigint NOT NULL CHECK (next_block >= 0)
);

-- Transfers into a merchant's live wallet that no checkout could be credited with.
CREATE TABLE unattributed_transfers (
    seq               bigserial NOT NULL UNIQUE,
    id                text PRIMARY KEY,
    merchant_id       text NOT NULL REFERENCES merchants (id),
    mode              text NOT NULL CHECK (mode IN ('test', 'live')),
    chain_id          bigint NOT NULL,
    transaction_hash  text NOT NULL,
    log_index         bigint NOT NULL,
    block_number      bigint NOT NULL,
    block_hash        text NOT NULL,
    currency          text NOT NULL CHECK (currency IN ('USDC', 'USDT')),
    token_contract    text NOT NULL,
    from_address      text NOT NULL,
    to_address        text NOT NULL,
    amount            numeric(38, 6) NOT NULL CHECK (amount >= 0),
    reason            text NOT NULL CHECK (reason IN ('no_open_checkout', 'no_matching_amount', 'several_matching_checkouts')),
    detected_at       timestamptz NOT NULL,
    UNIQUE (merchant_id, chain_id, transaction_hash, log_index)
);
CREATE INDEX unattributed_transfers_list ON unattributed_transfers (merchant_id, mode, seq);

ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check
    CHECK (type IN ('invoice.issued', 'invoice.paid', 'invoice.partially_paid', 'invoice.past_due', 'invoice.overpaid',
                    'invoice.voided', 'invoice.uncollectible', 'invoice.refund_recorded',
                    'invoice.payment_received_after_void', 'invoice.payment_received_after_uncollectible',
                    'invoice.expired', 'payment_link.completed', 'payment_link.expired', 'payment.failed',
                    'payment.underpaid', 'payment.overpaid', 'payment.unattributed'));
